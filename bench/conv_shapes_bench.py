"""Kernel micro-benchmark: one-node models of ResNet-50's convolutions (and a few MatMul / Gemm
shapes of the zoo's BERT and DLRM), inferloop vs ONNX Runtime side by side.

    .venv/bin/python bench/conv_shapes_bench.py [--inferloop build/inferloop] [--threads 1]
                                                [--iterations 50] [--warmup 5] [--rounds 3]
                                                [--only conv|matmul] [--tuning-cache FILE]

Each shape becomes a model (Conv with a bias, weights as initializers, random values, batch 1;
MatMul/Gemm with a constant B) in a temporary folder, measured by `inferloop bench` and
bench/ort_bench.py, each in its own process, alternately (the engine that goes first alternates
per round); the table shows the median over rounds of each engine's p50 in ms and
ratio = inferloop / ORT (below 1: inferloop faster). The first inferloop call of a shape autotunes
(in the warmup); --tuning-cache makes later processes reuse the winners (INFERLOOP_TUNING_CACHE).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)

# ResNet-50 (torchvision, 224x224) convolutions at batch 1: (C_in, C_out, H_in, kernel, stride).
RESNET50_CONVS = [
    (3, 64, 224, 7, 2), (64, 64, 56, 1, 1), (64, 64, 56, 3, 1), (64, 256, 56, 1, 1), (256, 64, 56, 1, 1),
    (256, 128, 56, 1, 1), (128, 128, 56, 3, 2), (128, 512, 28, 1, 1), (256, 512, 56, 1, 2), (512, 128, 28, 1, 1),
    (128, 128, 28, 3, 1), (512, 256, 28, 1, 1), (256, 256, 28, 3, 2), (256, 1024, 14, 1, 1), (512, 1024, 28, 1, 2),
    (1024, 256, 14, 1, 1), (256, 256, 14, 3, 1), (1024, 512, 14, 1, 1), (512, 512, 14, 3, 2), (512, 2048, 7, 1, 1),
    (1024, 2048, 14, 1, 2), (2048, 512, 7, 1, 1), (512, 512, 7, 3, 1),
]
# (M, K, N, kind): BERT-base projections at sequence 128, DLRM MLP layers, ResNet's classifier.
MATMULS = [
    (128, 768, 768, "MatMul"), (128, 768, 3072, "MatMul"), (128, 3072, 768, "MatMul"),
    (1, 2048, 1000, "Gemm"), (8, 2048, 1000, "Gemm"), (1, 512, 256, "Gemm"), (8, 512, 256, "Gemm"),
]


def conv_model(c, m, h, k, s):
    rng = np.random.default_rng(0)
    p = k // 2
    w = numpy_helper.from_array((rng.standard_normal((m, c, k, k)) * 0.05).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])
    return g


def matmul_model(m, k, n, kind):
    rng = np.random.default_rng(0)
    if kind == "MatMul":
        b = numpy_helper.from_array((rng.standard_normal((k, n)) * 0.05).astype(np.float32), "b")
        node = helper.make_node("MatMul", ["a", "b"], ["y"])
        inits = [b]
    else:  # Gemm as exported by PyTorch's Linear: B is [N, K], transB = 1, C = bias
        b = numpy_helper.from_array((rng.standard_normal((n, k)) * 0.05).astype(np.float32), "b")
        c = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "c")
        node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1)
        inits = [b, c]
    return helper.make_graph([node], kind.lower(), [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def run_json(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", default=os.path.join(REPO, "build", "inferloop"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=["conv", "matmul"])
    ap.add_argument("--tuning-cache")
    args = ap.parse_args()

    env = dict(os.environ)
    if args.tuning_cache:
        env["INFERLOOP_TUNING_CACHE"] = os.path.abspath(args.tuning_cache)
    cases = []
    if args.only != "matmul":
        cases += [(f"conv {c}->{m} {h}x{h} k{k} s{s}", conv_model(c, m, h, k, s)) for c, m, h, k, s in RESNET50_CONVS]
    if args.only != "conv":
        cases += [(f"{kind} M{m} K{k} N{n}", matmul_model(m, k, n, kind)) for m, k, n, kind in MATMULS]

    common = ["--threads", str(args.threads), "--iterations", str(args.iterations), "--warmup", str(args.warmup)]
    print(f"| shape | inferloop p50 ms | ORT p50 ms | ratio |")
    print(f"|---|---:|---:|---:|")
    il_total = ort_total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, graph in cases:
            path = os.path.join(tmp, "model.onnx")
            save(graph, path)
            il, ort = [], []
            for r in range(args.rounds):
                order = ["il", "ort"] if r % 2 == 0 else ["ort", "il"]
                for engine in order:
                    if engine == "il":
                        il.append(run_json([args.inferloop, "bench", path] + common, env)["p50_ms"])
                    else:
                        ort.append(run_json([sys.executable, os.path.join(BENCH_DIR, "ort_bench.py"), path] + common)["p50_ms"])
            a, b = statistics.median(il), statistics.median(ort)
            il_total += a
            ort_total += b
            print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.2f} |", flush=True)
    print(f"| **sum** | {il_total:.3f} | {ort_total:.3f} | {il_total / ort_total:.2f} |")


if __name__ == "__main__":
    main()
