"""INT8 execution of QDQ models (docs/QUANTIZATION.md "INT8 execution"): inferloop at level 2 fuses
the QDQ patterns into int8 kernels; its outputs must match ONNX Runtime's on the same model within
one quantization step of the output scale (float outputs: a tight tolerance) - or ONNX's reference
evaluator's, on a CPU without VNNI / AMX, where ORT's u8s8 kernels saturate (int8_anchor.py) - on the CPU's best
instruction set and with oneDNN limited to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2, no VNNI / AMX), and
`inferloop optimize` must show the fusion happened. Models: tests/e2e/make_qdq_models.py.

    .venv/bin/python tests/e2e/test_qdq.py --inferloop build/inferloop [TestClass]
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_qdq_models  # noqa: E402
from int8_anchor import has_vnni_or_amx, int8_anchor_run  # noqa: E402

INFERLOOP = None
WORK = None


def models():
    with open(os.path.join(WORK, "models.txt")) as f:
        return [l.strip() for l in f if l.strip()]


def run_inferloop(name, env_extra=None):
    """Runs the model at level 2; returns ({output: array}, stderr)."""
    out = tempfile.mkdtemp(dir=WORK)
    inputs = os.path.join(WORK, name + "_input")
    args = [INFERLOOP, "run", os.path.join(WORK, name + ".onnx"), "-o", out]
    for f in sorted(os.listdir(inputs)):
        args += ["-i", f"{f[:-4]}={os.path.join(inputs, f)}"]
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0:
        raise AssertionError(f"inferloop run {name} failed ({r.returncode}): {r.stderr[-2000:]}")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}, r.stdout + r.stderr


def output_step(name, output):
    """Scale of the DequantizeLinear that makes `output` (through Identity), or None for float outputs."""
    m = onnx.load(os.path.join(WORK, name + ".onnx"))
    producer = {o: n for n in m.graph.node for o in n.output}
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    n = producer.get(output)
    while n is not None and (n.op_type == "Identity" or (n.op_type == "Add" and any(i in inits for i in n.input))):
        n = producer.get([i for i in n.input if i not in inits][0])  # through Identity and a constant bias
    if n is None or n.op_type != "DequantizeLinear":
        return None
    return float(inits[n.input[1]].ravel()[0])


def optimized_ops(name):
    out = os.path.join(WORK, name + "_opt.onnx")
    r = subprocess.run([INFERLOOP, "optimize", os.path.join(WORK, name + ".onnx"), "-o", out], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"optimize {name} failed: {r.stderr}")
    m = onnx.load(out)
    return collections.Counter((n.domain + ":" if n.domain else "") + n.op_type for n in m.graph.node)


class QdqMixin:
    env = None

    def check_against_ort(self, name):
        """Against ONNX Runtime where its int8 kernels are exact, else against onnx.reference."""
        got, log = run_inferloop(name, self.env)
        inputs = os.path.join(WORK, name + "_input")
        feeds = {f[:-4]: np.load(os.path.join(inputs, f)) for f in os.listdir(inputs)}
        ref = int8_anchor_run(os.path.join(WORK, name + ".onnx"), feeds)
        self.assertEqual(set(got), set(ref))
        for k, r in ref.items():
            g = got[k]
            self.assertEqual(g.shape, r.shape, f"{name}:{k}")
            step = output_step(name, k)
            if step is not None:
                # Within one quantization step of the output scale (ORT and inferloop may round a
                # value on either side of a .5 differently).
                diff = np.abs(g.astype(np.float64) - r)
                self.assertLessEqual(diff.max(), step * 1.001, f"{name}:{k}: max diff {diff.max()} > step {step}")
                # No systematic offset: most values identical (rounding of values that fall on a .5
                # boundary differs between implementations and spreads through later layers).
                self.assertGreaterEqual(np.mean(diff == 0), 0.5, f"{name}:{k}: fewer than half the values identical")
            else:
                np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(r).max()), err_msg=f"{name}:{k}")
        return log


class TestQdqFusion(unittest.TestCase):
    """The patterns become int8 ops: no float Conv / MatMul / Gemm and no weight DQ remain."""

    def test_every_model_is_fused(self):
        for name in models():
            with self.subTest(name):
                ops = optimized_ops(name)
                for op in ("Conv", "MatMul", "Gemm", "MaxPool", "GlobalAveragePool", "Concat", "AveragePool"):
                    self.assertEqual(ops.get(op, 0), 0, f"{name}: {op} left: {dict(ops)}")
                fused = sum(ops.get("com.inferloop:" + op, 0) for op in ("QConv", "QMatMul", "DynamicQMatMul"))
                self.assertGreater(fused, 0)
                self.assertEqual(ops.get("MatMulInteger", 0), 0)

    def test_dequantized_matmul_output_takes_the_bias(self):
        ops = optimized_ops("h_matmul_dq_bias")
        self.assertEqual(ops["com.inferloop:QMatMul"], 1)
        self.assertEqual(ops.get("Add", 0), 0)
        self.assertEqual(ops["DequantizeLinear"], 0)

    def test_resnet_block_counts(self):
        ops = optimized_ops("h_resnet_block")
        self.assertEqual(ops["com.inferloop:QConv"], 3)
        self.assertEqual(ops["com.inferloop:QAdd"], 1)
        self.assertEqual(ops["com.inferloop:QMaxPool"], 1)
        self.assertEqual(ops["com.inferloop:QGlobalAveragePool"], 1)
        self.assertEqual(ops["com.inferloop:QMatMul"], 1)  # the Gemm
        # Only the graph input's Q remains (the Gemm writes the dequantized output); NHWC between
        # the int8 ops, so only the chain's entry and exit transpose.
        self.assertEqual(ops["QuantizeLinear"], 1)
        self.assertEqual(ops.get("DequantizeLinear", 0), 0)
        self.assertEqual(ops["Transpose"], 2)


class TestQdqVsOrt(unittest.TestCase, QdqMixin):
    """The CPU's best instruction set: int8 primitives (u8/s8 sources), AMX or VNNI where present."""
    env = {"ONEDNN_VERBOSE": "1"}

    def test_models_match_onnxruntime(self):
        native = has_vnni_or_amx()
        for name in models():
            with self.subTest(name):
                log = self.check_against_ort(name)
                execs = [l for l in log.splitlines() if l.startswith("onednn_verbose,exec,cpu,convolution") or
                         l.startswith("onednn_verbose,exec,cpu,matmul")]
                self.assertTrue(execs, f"{name}: no oneDNN primitive ran")
                for l in execs:
                    self.assertNotIn("ref:", l)
                    if native:  # the native int8 path: 8-bit sources on AMX / VNNI kernels
                        self.assertRegex(l, r"src_[us]8", l)
                        self.assertRegex(l, "amx|vnni", l)


class TestQdqVsOrtAvx2(unittest.TestCase, QdqMixin):
    """oneDNN limited to AVX2: no AMX / VNNI kernels; the results must not change."""
    env = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ONEDNN_VERBOSE": "1"}

    def test_models_match_onnxruntime(self):
        for name in models():
            with self.subTest(name):
                log = self.check_against_ort(name)
                execs = [l for l in log.splitlines() if l.startswith("onednn_verbose,exec,cpu,convolution") or
                         l.startswith("onednn_verbose,exec,cpu,matmul")]
                self.assertTrue(execs, f"{name}: no oneDNN int8 primitive ran")
                for l in execs:
                    self.assertNotIn("amx", l)
                    self.assertNotIn("avx512", l)


def main():
    global INFERLOOP, WORK
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    WORK = tempfile.mkdtemp(prefix="qdq_test_")
    old = sys.argv
    sys.argv = [old[0], WORK]
    make_qdq_models.main()
    sys.argv = [old[0]] + rest
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
