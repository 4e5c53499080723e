"""Quantizes zoo models to QDQ ONNX with ONNX Runtime's quantize_static, for bench/quant_bench.py.

    .venv/bin/python bench/make_qdq_models.py [--models resnet50,bert] [--samples 16] [--zoo DIR] [--dynamic]
                                              [--reduce-range]

Reads bench/models/<name>/model.onnx (or DIR/<name>/model.onnx) (made by bench/make_zoo.py) and writes
bench/models/<name>_qdq/model.onnx (gitignored) with inputs_b1/ copied over. Static, QDQ format,
uint8 activations (per tensor, asymmetric), int8 weights (per channel, symmetric), MinMax
calibration over `--samples` random inputs drawn like the zoo's inputs_b1 (images: normal noise;
input_ids: random token ids below the largest id of inputs_b1; attention_mask: ones).
ResNet-50: every op ORT quantizes by default (Conv, Add, pools, Gemm, ...). BERT: only MatMul/Gemm
with a constant weight; the attention MatMuls (two activations) are excluded.
--reduce-range: the same with 7-bit weights (within +-64; ORT's reduce_range, which its docs advise
for CPUs without VNNI) into bench/models/<name>_qdq7 (quant_bench.py --variant qdq7): the int8
kernels of oneDNN and ORT without VNNI are exact on them, and inferloop keeps its int8 path there.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(BENCH_DIR, "models")


class RandomReader(CalibrationDataReader):
    def __init__(self, ref_inputs, samples, seed=0):
        rng = np.random.default_rng(seed)
        self.items = []
        for _ in range(samples):
            d = {}
            for name, ref in ref_inputs.items():
                if name == "input_ids":
                    d[name] = rng.integers(0, max(int(ref.max()), 2), size=ref.shape).astype(ref.dtype)
                elif name == "attention_mask":
                    d[name] = np.ones_like(ref)
                elif np.issubdtype(ref.dtype, np.floating):
                    d[name] = rng.standard_normal(ref.shape).astype(ref.dtype)
                else:
                    d[name] = ref.copy()
            self.items.append(d)
        self.it = iter(self.items)

    def get_next(self):
        return next(self.it, None)


def activation_matmuls(model):
    """Names of MatMul nodes whose both inputs are not initializers (attention)."""
    inits = {i.name for i in model.graph.initializer}
    return [n.name for n in model.graph.node if n.op_type == "MatMul" and not any(x in inits for x in n.input)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--zoo", default=MODELS_DIR, help="folder of the FP32 zoo models (default bench/models)")
    ap.add_argument("--dynamic", action="store_true", help="dynamic quantization (MatMulInteger format) into <name>_dyn")
    ap.add_argument("--reduce-range", action="store_true",
                    help="7-bit weights (ORT's reduce_range, its advice for CPUs without VNNI) into <name>_qdq7")
    args = ap.parse_args()
    for name in args.models.split(","):
        src = os.path.join(args.zoo, name)
        if not os.path.exists(os.path.join(src, "model.onnx")):
            sys.exit(f"{src}/model.onnx missing: run /usr/bin/python3 bench/make_zoo.py first")
        dst = os.path.join(MODELS_DIR, name + ("_dyn" if args.dynamic else "_qdq7" if args.reduce_range else "_qdq"))
        os.makedirs(dst, exist_ok=True)
        inputs_dir = os.path.join(src, "inputs_b1")
        ref = {f[:-4]: np.load(os.path.join(inputs_dir, f)) for f in sorted(os.listdir(inputs_dir)) if f.endswith(".npy")}
        model = onnx.load(os.path.join(src, "model.onnx"))
        # Names every node (quantize_static's exclusion list works by name).
        for i, n in enumerate(model.graph.node):
            if not n.name:
                n.name = f"{n.op_type}_{i}"
        named = os.path.join(dst, "named_fp32.onnx")
        onnx.save(model, named)
        if args.dynamic:
            quantize_dynamic(named, os.path.join(dst, "model.onnx"), per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"], nodes_to_exclude=activation_matmuls(model))
        kw = {}
        if args.dynamic:
            pass
        elif name == "bert":
            kw["op_types_to_quantize"] = ["MatMul", "Gemm"]
            kw["nodes_to_exclude"] = activation_matmuls(model)
        if not args.dynamic:
            quantize_static(named, os.path.join(dst, "model.onnx"), RandomReader(ref, args.samples),
                            quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QUInt8,
                            weight_type=QuantType.QInt8, reduce_range=args.reduce_range, **kw)
        os.remove(named)
        out_inputs = os.path.join(dst, "inputs_b1")
        shutil.rmtree(out_inputs, ignore_errors=True)
        shutil.copytree(inputs_dir, out_inputs)
        print(f"wrote {dst}/model.onnx", flush=True)


if __name__ == "__main__":
    main()
