"""End-to-end tests of `inferloop compare` on small generated models (make_compare_models.py)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_compare_models  # noqa: E402

INFERLOOP = None
WORK = None


def compare(*args):
    return subprocess.run([INFERLOOP, "compare", *args], cwd=WORK, capture_output=True, text=True, timeout=120)


def report(*args):
    out = os.path.join(WORK, "report.json")
    if os.path.exists(out):
        os.remove(out)
    r = compare(*args, "--json", out)
    if r.returncode != 0:
        raise AssertionError(f"compare failed ({r.returncode}): {r.stderr}")
    with open(out) as f:
        return r, json.load(f)


class TestCompare(unittest.TestCase):
    def test_identical_models_agree_everywhere(self):
        r, j = report("ref.onnx", "same.onnx", "--data", "data")
        self.assertEqual(j["samples"], 2)
        names = [t["name"] for t in j["tensors"]]
        # A's topological order, every node output, the graph output last.
        self.assertEqual(names, ["conv1", "relu1", "conv2", "relu2", "pool", "flat", "logits", "probs"])
        for t in j["tensors"]:
            self.assertEqual(t["status"], "compared")
            self.assertAlmostEqual(t["cosine"], 1.0, places=9, msg=t["name"])
            self.assertEqual(t["max_abs"], 0.0)
            self.assertFalse(t["diverged"])
            self.assertEqual(t["a"], t["b"])
        self.assertTrue(j["tensors"][-1]["output"])
        self.assertIsNone(j["first_divergence"])
        # Captured values are the node's own output, not overwritten by a later in-place kernel
        # (relu1 reads conv1): conv1 keeps its negative values.
        by = {t["name"]: t for t in j["tensors"]}
        self.assertLess(by["conv1"]["a"]["min"], 0)
        self.assertEqual(by["relu1"]["a"]["min"], 0)
        self.assertIn("no divergence", r.stdout)

    def test_points_at_the_perturbed_layer(self):
        r, j = report("ref.onnx", "perturbed.onnx", "--data", "data")
        self.assertEqual(j["first_divergence"], "conv2")
        by = {t["name"]: t for t in j["tensors"]}
        self.assertAlmostEqual(by["conv1"]["cosine"], 1.0, places=9)
        self.assertAlmostEqual(by["relu1"]["cosine"], 1.0, places=9)
        self.assertAlmostEqual(by["conv2"]["cosine"], -1.0, places=6)  # sign-flipped weights
        self.assertTrue(by["probs"]["diverged"])
        self.assertRegex(r.stdout, r"conv2 .*<-- first divergence")
        self.assertIn("first divergence (cosine < 0.99): 'conv2'", r.stdout)

    def test_report_follows_topological_order_of_a(self):
        _, j = report("unsorted.onnx", "ref.onnx", "--data", "data")
        self.assertEqual([t["name"] for t in j["tensors"]],
                         ["conv1", "relu1", "conv2", "relu2", "pool", "flat", "logits", "probs"])
        self.assertIsNone(j["first_divergence"])

    def test_threshold_is_configurable(self):
        _, j = report("ref.onnx", "perturbed.onnx", "--data", "data", "--cosine-threshold", "-1")
        self.assertIsNone(j["first_divergence"])

    def test_shape_differences_are_reported_not_compared(self):
        r, j = report("ref.onnx", "wide.onnx", "--data", "data")
        by = {t["name"]: t for t in j["tensors"]}
        self.assertEqual(by["conv1"]["status"], "compared")
        self.assertEqual(by["conv2"]["status"], "shape_mismatch")
        self.assertIn("[1,6,8,8]", by["conv2"]["detail"])
        self.assertIn("first structural difference: 'conv2'", r.stdout)

    def test_chosen_tensors_only(self):
        _, j = report("ref.onnx", "perturbed.onnx", "--data", "data", "--tensors", "relu1,conv2")
        self.assertEqual([t["name"] for t in j["tensors"]], ["relu1", "conv2", "probs"])

    def test_input_statistics_against_calibration(self):
        _, j = report("ref.onnx", "same.onnx", "--data", "data", "--calibration", "calibration")
        x = j["inputs"][0]
        self.assertEqual(x["name"], "x")
        self.assertEqual(len(x["channels"]), 3)
        self.assertEqual(x["stats"]["count"], 2 * 3 * 8 * 8)
        self.assertFalse(j["preprocessing_mismatch"])
        r, j = report("ref.onnx", "same.onnx", "--data", "shifted", "--calibration", "calibration")
        self.assertTrue(j["preprocessing_mismatch"])
        flagged = [c["channel"] for c in j["inputs"][0]["checks"] if c["flagged"]]
        self.assertEqual(flagged, [1])
        self.assertIn("PREPROCESSING MISMATCH", r.stdout)


class TestCompareBadInput(unittest.TestCase):
    def check_fails(self, args, message):
        r = compare(*args)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn(message, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertGreater(r.returncode, 0)  # an error exit, not a signal

    def test_missing_model(self):
        self.check_fails(["missing.onnx", "ref.onnx", "--data", "data"], "cannot open model file 'missing.onnx'")
        self.check_fails(["ref.onnx", "missing.onnx", "--data", "data"], "model B")

    def test_no_matching_inputs(self):
        self.check_fails(["ref.onnx", "same.onnx", "--data", "wrong_name"], "no data file matches an input")

    def test_mismatched_input_shape(self):
        self.check_fails(["ref.onnx", "same.onnx", "--data", "bad_shape"], "expects shape float32[1,3,8,8], got [1,3,4,4]")

    def test_missing_data_folder(self):
        self.check_fails(["ref.onnx", "same.onnx", "--data", "nowhere"], "is not a folder")

    def test_unknown_tensor_name(self):
        self.check_fails(["ref.onnx", "same.onnx", "--data", "data", "--tensors", "conv9"],
                         "tensor 'conv9' is not a node output of either model")

    def test_data_is_required(self):
        self.check_fails(["ref.onnx", "same.onnx"], "--data")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    with tempfile.TemporaryDirectory(prefix="il_compare_") as d:
        WORK = d
        make_compare_models.main(d)
        prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)
