"""End-to-end tests of `inferloop quantize` and `inferloop compare --sensitivity` on small generated
models (make_quantize_models.py). The quantized models are checked against ONNX Runtime: ORT loads
and runs them, and its outputs are close to the FP32 model's."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_quantize_models  # noqa: E402
from int8_anchor import int8_anchor_run  # noqa: E402

INFERLOOP = None
WORK = None


def run(*args, timeout=300):
    return subprocess.run([INFERLOOP, *args], cwd=WORK, capture_output=True, text=True, timeout=timeout)


def quantize(*args):
    r = run("quantize", *args, "--no-progress", "--timing-runs", "3")
    if r.returncode != 0:
        raise AssertionError(f"quantize failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def ort_run(model, x):
    s = ort.InferenceSession(os.path.join(WORK, model), providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def int8_run(model, x):
    """An int8 model's first output from its anchor: ORT, or onnx.reference on a CPU where ORT's
    int8 kernels saturate (int8_anchor.py)."""
    return list(int8_anchor_run(os.path.join(WORK, model), {"x": x}).values())[0]


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def ops(model):
    return [n.op_type for n in onnx.load(os.path.join(WORK, model)).graph.node]


def inferloop_run(model, x, out_dir):
    """Runs `model` with inferloop (run command) on x and returns the first output."""
    os.makedirs(os.path.join(WORK, out_dir), exist_ok=True)
    inp = os.path.join(WORK, out_dir, "x.npy")
    np.save(inp, x)
    outp = os.path.join(WORK, out_dir, "out")
    r = run("run", model, "-i", f"x={inp}", "--output-dir", outp)
    if r.returncode != 0:
        raise AssertionError(f"inferloop run failed: {r.stderr}")
    files = sorted(f for f in os.listdir(outp) if f.endswith(".npy"))
    return np.load(os.path.join(outp, files[0]))


class TestQuantize(unittest.TestCase):
    def test_static_qdq_runs_in_ort_close_to_fp32(self):
        r = quantize("cnn.onnx", "-o", "cnn_int8.onnx", "--calibration", "calibration", "--per-channel")
        self.assertIn("calibration: running the FP32 model over 64 samples", r.stdout)
        self.assertRegex(r.stdout, r"timing \(inferloop.*FP32 [0-9.e-]+ ms, INT8 [0-9.e-]+ ms")
        m = onnx.load(os.path.join(WORK, "cnn_int8.onnx"))
        onnx.checker.check_model(m)
        o = ops("cnn_int8.onnx")
        self.assertEqual(o.count("Conv"), 3)
        self.assertGreaterEqual(o.count("QuantizeLinear"), 6)
        # The shared convention: u8 activations, s8 per-channel weights (axis 0), int32 bias.
        inits = {t.name: t for t in m.graph.initializer}
        self.assertEqual(inits["x_zero_point"].data_type, onnx.TensorProto.UINT8)
        self.assertEqual(inits["w1_quantized"].data_type, onnx.TensorProto.INT8)
        self.assertEqual(inits["b1_quantized"].data_type, onnx.TensorProto.INT32)
        self.assertEqual(list(inits["w1_scale"].dims), [8])
        by_out = {n.output[0]: n for n in m.graph.node}
        self.assertEqual(by_out["r1"].input[0], "c1")  # Relu reads the Conv directly: QDQ after the Relu
        self.assertEqual(by_out["r1_quantized"].input[0], "r1")
        x = np.load(os.path.join(WORK, "eval", "x.npy"))
        fp32 = ort_run("cnn.onnx", x)
        int8 = int8_run("cnn_int8.onnx", x)
        # The demo model's logits are centered (a small difference of large numbers): sensitive.
        self.assertGreater(cosine(fp32, int8), 0.995)
        self.assertGreaterEqual((fp32.argmax(1) == int8.argmax(1)).mean(), 0.9)
        # inferloop runs the same model, close to ORT's result on it.
        il = inferloop_run("cnn_int8.onnx", x[:16], "run_static")
        # (A value on a rounding boundary could flip one quantization step: a small tolerance.)
        np.testing.assert_allclose(il, int8[:16], atol=0.01 * np.abs(int8).max())
        self.assertGreater(cosine(il, fp32[:16]), 0.995)

    def test_same_values_as_ort_quantize_static(self):
        # ONNX Runtime's own quantizer (minmax, QDQ, per channel, u8 activations, s8 weights) on the
        # same calibration data: the same int8 weights, int32 biases, scales and zero points.
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quantize_static)
        x = np.load(os.path.join(WORK, "calibration", "x.npy"))

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter([{"x": x[i:i + 8]} for i in range(0, len(x), 8)])

            def get_next(self):
                return next(self.it, None)

        quantize_static(os.path.join(WORK, "cnn.onnx"), os.path.join(WORK, "cnn_ort.onnx"), Reader(),
                        quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        quantize("cnn.onnx", "-o", "cnn_pc.onnx", "--calibration", "calibration", "--per-channel")
        ours = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(os.path.join(WORK, "cnn_pc.onnx")).graph.initializer}
        ref = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(os.path.join(WORK, "cnn_ort.onnx")).graph.initializer}
        checked = 0
        for name in ["w1", "w2", "w3", "w4", "b1", "b2", "b4"]:
            np.testing.assert_array_equal(ours[name + "_quantized"], ref[name + "_quantized"], err_msg=name)
            checked += 1
        for name in ["x", "r1", "r2", "c3", "r3", "w1", "w2", "w3", "w4"]:
            np.testing.assert_allclose(ours[name + "_scale"], ref[name + "_scale"], rtol=1e-6, err_msg=name)
            np.testing.assert_array_equal(ours[name + "_zero_point"], ref[name + "_zero_point"], err_msg=name)
            self.assertEqual(ours[name + "_zero_point"].dtype, ref[name + "_zero_point"].dtype)
            checked += 1
        self.assertEqual(checked, 16)

    def test_methods_and_eval_report(self):
        for method in ["minmax", "percentile", "entropy"]:
            r = quantize("cnn.onnx", "-o", f"cnn_{method}.onnx", "--calibration", "calibration", "--method", method,
                         "--eval", "eval")
            self.assertIn(f"static quantization ({method}", r.stdout)
            self.assertRegex(r.stdout, r"eval \(200 samples, top-1 accuracy\): FP32 100.00%, INT8 [0-9.]+%")
            x = np.load(os.path.join(WORK, "eval", "x.npy"))
            self.assertGreater(cosine(ort_run("cnn.onnx", x), ort_run(f"cnn_{method}.onnx", x)), 0.99, method)

    def test_exclude_keeps_named_nodes_fp32(self):
        quantize("cnn.onnx", "-o", "cnn_excl.onnx", "--calibration", "calibration", "--exclude", "conv2,fc")
        m = onnx.load(os.path.join(WORK, "cnn_excl.onnx"))
        nodes = {n.name: n for n in m.graph.node}
        self.assertEqual(list(nodes["conv2"].input[1:]), ["w2", "b2"])  # float weights kept
        self.assertEqual(nodes["fc"].input[1], "w4")
        self.assertEqual(nodes["fc"].input[0], "f")  # nothing quantized in front of it
        self.assertEqual(nodes["conv1"].input[1], "w1_dequantized")
        x = np.load(os.path.join(WORK, "eval", "x.npy"))
        self.assertGreater(cosine(ort_run("cnn.onnx", x), ort_run("cnn_excl.onnx", x)), 0.995)

    def test_dynamic_runs_in_ort_and_inferloop(self):
        r = quantize("mlp.onnx", "-o", "mlp_dyn.onnx", "--dynamic", "--calibration", "mlp_calibration")
        self.assertIn("dynamic quantization: 3 MatMul/Gemm nodes", r.stdout)
        o = ops("mlp_dyn.onnx")
        self.assertEqual(o.count("DynamicQuantizeLinear"), 3)  # x, r1, m2
        self.assertEqual(o.count("MatMulInteger"), 3)
        self.assertNotIn("MatMul", o)
        self.assertNotIn("Gemm", o)
        x = np.load(os.path.join(WORK, "mlp_eval", "x.npy"))
        fp32 = ort_run("mlp.onnx", x)
        dyn = int8_run("mlp_dyn.onnx", x)
        self.assertGreater(cosine(fp32, dyn), 0.999)
        # DynamicQuantizeLinear's scale depends on the whole batch: compare on the same 8 rows.
        il = inferloop_run("mlp_dyn.onnx", x[:8], "run_dyn")
        np.testing.assert_allclose(il, int8_run("mlp_dyn.onnx", x[:8]), rtol=1e-5, atol=1e-5)
        # Per-column weight scales (1-D B zero point) run the same in both.
        quantize("mlp.onnx", "-o", "mlp_dyn_pc.onnx", "--dynamic", "--per-channel")
        self.assertGreater(cosine(fp32, int8_run("mlp_dyn_pc.onnx", x)), 0.999)
        il = inferloop_run("mlp_dyn_pc.onnx", x[:8], "run_dyn_pc")
        np.testing.assert_allclose(il, int8_run("mlp_dyn_pc.onnx", x[:8]), rtol=1e-5, atol=1e-5)

    def test_stats_file_is_reused(self):
        stats = os.path.join(WORK, "cnn_stats.json")
        if os.path.exists(stats):
            os.remove(stats)
        r1 = quantize("cnn.onnx", "-o", "s1.onnx", "--calibration", "calibration", "--stats", stats)
        self.assertIn("statistics saved to", r1.stdout)
        with open(stats) as f:
            j = json.load(f)
        self.assertEqual(j["format"], "inferloop-calibration-stats")
        self.assertIn("r1", j["tensors"])
        self.assertEqual(len(j["tensors"]["r1"]["histogram"]), 2048)
        r2 = quantize("cnn.onnx", "-o", "s2.onnx", "--calibration", "calibration", "--stats", stats, "--method",
                      "entropy", "--exclude", "conv3")
        self.assertIn("reused statistics", r2.stdout)
        self.assertIn("calibration skipped", r2.stdout)
        self.assertNotIn("running the FP32 model", r2.stdout)
        # minmax from reused statistics gives the same model as from a fresh calibration.
        r3 = quantize("cnn.onnx", "-o", "s3.onnx", "--calibration", "calibration", "--stats", stats)
        self.assertIn("reused statistics", r3.stdout)
        a, b = onnx.load(os.path.join(WORK, "s1.onnx")), onnx.load(os.path.join(WORK, "s3.onnx"))
        self.assertEqual(a.SerializeToString(), b.SerializeToString())

    def test_folder_of_sample_folders(self):
        r = quantize("cnn.onnx", "-o", "samples.onnx", "--calibration", "samples")
        self.assertIn("over 3 samples", r.stdout)

    def test_mixed_precision_reaches_the_bound(self):
        # cnn_outlier's conv2 has one channel 5000x the others: per-tensor INT8 loses most of the
        # accuracy; mixed precision keeps the sensitive layers FP32 until the drop is within 1 point.
        r = quantize("cnn_outlier.onnx", "-o", "mixed.onnx", "--calibration", "calibration", "--eval", "eval",
                     "--max-accuracy-drop", "1")
        self.assertRegex(r.stdout, r"INT8 [0-9.]+% \(drop [0-9.]+ pp\)")
        self.assertIn("mixed precision step 1: keep Conv 'conv2' FP32", r.stdout)
        self.assertIn("mixed precision: within 1 pp", r.stdout)
        x = np.load(os.path.join(WORK, "eval", "x.npy"))
        labels = np.load(os.path.join(WORK, "eval", "labels.npy"))
        acc = (ort_run("mixed.onnx", x).argmax(1) == labels).mean() * 100
        self.assertGreaterEqual(acc, 99.0)
        nodes = {n.name: n for n in onnx.load(os.path.join(WORK, "mixed.onnx")).graph.node}
        self.assertEqual(nodes["conv2"].input[1], "w2")  # kept FP32

    def test_sensitivity_ranks_every_layer(self):
        out = os.path.join(WORK, "sens.json")
        r = run("compare", "--sensitivity", "cnn.onnx", "--calibration", "calibration", "--eval", "eval",
                "--json", out, "--no-progress")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("layer (only it INT8)", r.stdout)
        with open(out) as f:
            j = json.load(f)
        self.assertEqual(j["metric"], "accuracy")
        self.assertEqual(j["fp32_metric"], 100.0)
        self.assertEqual(sorted(l["layer"] for l in j["layers"]), ["conv1", "conv2", "conv3", "fc"])
        keys = [(-l["loss"], l["cosine"]) for l in j["layers"]]
        self.assertEqual(keys, sorted(keys))  # most accuracy lost first, then lowest cosine
        for l in j["layers"]:
            self.assertAlmostEqual(l["loss"], 100.0 - l["metric"])
            self.assertLessEqual(l["cosine"], 1.0 + 1e-9)


class TestQuantizeBadInput(unittest.TestCase):
    def fails(self, *args, msg):
        r = run("quantize", *args, "--no-progress", "--timing-runs", "0")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn(msg, r.stderr)
        self.assertNotIn("Segmentation", r.stderr)
        self.assertLess(r.returncode, 128)  # an exit, not a signal

    def test_missing_data(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "no_such_dir", msg="not a folder")

    def test_no_calibration(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", msg="needs --calibration")

    def test_empty_folder(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "empty", msg="holds no .npy or .pb")

    def test_wrong_input_name(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "wrong_name", msg="has no file for input x")

    def test_unknown_exclude(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "calibration", "--exclude", "conv9",
                   msg="no node named 'conv9'")

    def test_bad_method(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "calibration", "--method", "kl",
                   msg="unknown calibration method 'kl'")

    def test_missing_model(self):
        self.fails("nope.onnx", "-o", "bad.onnx", "--calibration", "calibration", msg="nope.onnx")

    def test_drop_without_eval(self):
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "calibration", "--max-accuracy-drop", "1",
                   msg="needs --eval")

    def test_bad_stats_file(self):
        with open(os.path.join(WORK, "bad_stats.json"), "w") as f:
            f.write("{not json")
        self.fails("cnn.onnx", "-o", "bad.onnx", "--calibration", "calibration", "--stats", "bad_stats.json",
                   msg="not JSON")

    def test_sensitivity_without_eval(self):
        r = run("compare", "--sensitivity", "cnn.onnx", "--calibration", "calibration")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--eval", r.stderr)


def main():
    global INFERLOOP, WORK
    p = argparse.ArgumentParser()
    p.add_argument("--inferloop", required=True)
    args, rest = p.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    with tempfile.TemporaryDirectory() as d:
        WORK = d
        make_quantize_models.main(d)
        unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
