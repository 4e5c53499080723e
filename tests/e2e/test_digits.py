"""End-to-end check on the real trained model examples/digits (scripts/make_digits_model.py):
`inferloop run` on the held-out split gives the same predictions, hence the same top-1 accuracy,
as ONNX Runtime, and logits close to ORT's. With --precision bf16/fp16 the accuracy stays within
one image of ORT's FP32 accuracy."""
import argparse
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnxruntime as ort

INFERLOOP = None
DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "digits")


def load_eval():
    x = np.load(os.path.join(DIGITS, "eval", "input.npy"))
    y = np.load(os.path.join(DIGITS, "eval", "labels.npy"))
    return x, y


def ort_logits(x):
    sess = ort.InferenceSession(os.path.join(DIGITS, "model.onnx"), providers=["CPUExecutionProvider"])
    return sess.run(["logits"], {"input": x})[0]


def run(*extra, env=None):
    return subprocess.run([INFERLOOP, "run", os.path.join(DIGITS, "model.onnx"),
                           "--input", "input=" + os.path.join(DIGITS, "eval", "input.npy"), *extra],
                          capture_output=True, text=True, timeout=120, env=env)


def inferloop_logits(*extra, env=None, stderr=None):
    with tempfile.TemporaryDirectory(prefix="il_digits_") as out:
        r = run("--output-dir", out, *extra, env=env)
        if r.returncode != 0:
            raise AssertionError(f"inferloop run failed ({r.returncode}): {r.stderr}")
        if stderr is not None:
            stderr.append(r.stderr)
        return np.load(os.path.join(out, "logits.npy"))


class TestDigits(unittest.TestCase):
    def test_data_set_shape(self):
        x, y = load_eval()
        self.assertEqual(x.dtype, np.float32)
        self.assertEqual(x.shape[1:], (1, 8, 8))
        self.assertEqual(y.dtype, np.int64)
        self.assertEqual(len(x), len(y))
        self.assertGreater(len(y), 300)
        self.assertEqual(sorted(set(y.tolist())), list(range(10)))  # every class held out
        cal = np.load(os.path.join(DIGITS, "calibration", "input.npy"))
        self.assertEqual(cal.dtype, np.float32)
        self.assertEqual(cal.shape[1:], (1, 8, 8))

    def test_run_matches_onnxruntime_accuracy(self):
        x, y = load_eval()
        ref = ort_logits(x)
        got = inferloop_logits()
        self.assertEqual(got.shape, ref.shape)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        ref_acc = float((ref.argmax(1) == y).mean())
        got_acc = float((got.argmax(1) == y).mean())
        self.assertGreater(ref_acc, 0.95)  # the model is a real, trained one
        self.assertEqual(got_acc, ref_acc)
        np.testing.assert_array_equal(got.argmax(1), ref.argmax(1))


    def test_bf16_and_fp16_keep_the_accuracy(self):
        x, y = load_eval()
        ref = ort_logits(x)
        ref_correct = int((ref.argmax(1) == y).sum())
        for mode, tol in (("bf16", 0.2), ("fp16", 0.02)):
            got = inferloop_logits("--precision", mode)
            self.assertEqual(got.shape, ref.shape)
            # Rounded weights (and for bf16 activations) change the logits a little, not a lot.
            diff = float(np.abs(got - ref).max())
            self.assertGreater(diff, 0.0, mode)  # really another precision
            self.assertLess(diff, tol * float(np.abs(ref).max()), mode)
            self.assertLessEqual(abs(int((got.argmax(1) == y).sum()) - ref_correct), 1, mode)

    def test_int8_on_a_float_model_is_an_error(self):
        r = run("--precision", "int8")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no QuantizeLinear/DequantizeLinear nodes", r.stderr)
        self.assertIn("inferloop quantize", r.stderr)

    def test_unknown_precision_is_an_error(self):
        r = run("--precision", "fp8")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("fp8 not in {auto,fp32,bf16,fp16,int8}", r.stderr)

    def test_bf16_without_avx512_bf16_falls_back_to_fp16(self):
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_VNNI")
        notes = []
        got = inferloop_logits("--precision", "bf16", env=env, stderr=notes)
        self.assertIn("lacks AVX512_BF16", notes[0])
        fp16 = inferloop_logits("--precision", "fp16", env=env)
        np.testing.assert_allclose(got, fp16, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)
