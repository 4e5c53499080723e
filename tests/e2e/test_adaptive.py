"""The adaptive loop through `inferloop serve` (docs/ADAPTIVE.md).

The repository (models made here with the onnx helper API and numpy):
  mlp      x FP32[-1,64] -> logits FP32[-1,10] = relu(x W1 + b1) W2 + b2, adaptive with a latency
           SLO; calibration/ (random inputs) for its int8 variant; evaluation/ holds inputs whose
           two best fp32 logits are close (so quantization flips some predictions) and
           labels.npy = numpy's fp32 argmax, so fp32's top-1 accuracy is 100%.
  bounded  the same model with max_accuracy_drop 0: int8 (which flips some) is skipped.
  noeval   the same with no evaluation/: every variant but fp32 is skipped, reason shown.
  qdq      the same with model.qdq.onnx shipped beside model.onnx and no calibration/ folder.
  tight    an SLO of 0.001 ms no setting meets: slo_unreachable event and metric, fastest variant.
Also the documented example (examples/adaptive/model_repository) serves and pins as written.
Checks: the variants each model ended with (accuracy measured against numpy's labels, memory and
latency per batch size reported), answers equal numpy's within each precision's tolerance, pin
and free over REST and gRPC, bad pins, conflicting config fields (clear load errors).

Usage: test_adaptive.py --inferloop BUILD/inferloop [unittest args]
"""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, get_json, metric_value, metrics, post_json, run_tests  # noqa: E402

INFERLOOP = None
RNG = np.random.default_rng(16)
W1 = RNG.standard_normal((64, 256)).astype(np.float32) * 0.2
B1 = RNG.standard_normal(256).astype(np.float32) * 0.1
W2 = RNG.standard_normal((256, 10)).astype(np.float32) * 0.2
B2 = RNG.standard_normal(10).astype(np.float32) * 0.1


def logits(x):
    return np.maximum(x @ W1 + B1, 0) @ W2 + B2


def mlp_model(path):
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (B1, "B1"), (W2, "W2"), (B2, "B2"))]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h0"]), helper.make_node("Add", ["h0", "B1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "W2"], ["h3"]),
             helper.make_node("Add", ["h3", "B2"], ["logits"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def close_call_inputs(n):
    """Inputs whose two best fp32 logits differ by under 0.5% of their spread: int8 noise flips some."""
    out = []
    while len(out) < n:
        x = RNG.standard_normal((4096, 64)).astype(np.float32)
        z = np.sort(logits(x), axis=1)
        margin = (z[:, -1] - z[:, -2]) / (z[:, -1] - z[:, 0])
        out.extend(x[margin < 0.005])
    return np.stack(out[:n])


def config(name, extra):
    return (f'name: "{name}"\nmax_batch_size: 8\ndynamic_batching {{ }}\n'
            f'input {{ name: "x" data_type: TYPE_FP32 dims: [64] }}\n'
            f'output {{ name: "logits" data_type: TYPE_FP32 dims: [10] }}\n{extra}\n')


SLO = 'adaptive { latency_slo { percentile: 99 milliseconds: 200 } max_accuracy_drop: %s window_ms: 200 }'


def make_model_folder(root, name, cfg, calibration=True, evaluation=True):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "1"))
    mlp_model(os.path.join(d, "1", "model.onnx"))
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(config(name, cfg))
    if calibration:
        os.makedirs(os.path.join(d, "calibration"))
        np.save(os.path.join(d, "calibration", "x.npy"), RNG.standard_normal((64, 64)).astype(np.float32))
    if evaluation:
        os.makedirs(os.path.join(d, "evaluation"))
        np.save(os.path.join(d, "evaluation", "x.npy"), EVAL_X)
        np.save(os.path.join(d, "evaluation", "labels.npy"), np.argmax(logits(EVAL_X), axis=1).astype(np.int64))
    return d


EVAL_X = close_call_inputs(200)


def variants(state):
    return {v["name"]: v for v in state["variants"]}


class TestAdaptive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="adaptive_")
        make_model_folder(cls.root, "mlp", SLO % "100")
        make_model_folder(cls.root, "bounded", SLO % "0")
        make_model_folder(cls.root, "noeval", SLO % "100", evaluation=False)
        d = make_model_folder(cls.root, "qdq", 'adaptive { variants: ["fp32", "int8"] max_accuracy_drop: 100 }',
                              calibration=False)
        # model.qdq.onnx beside model.onnx: made by `inferloop quantize` from a calibration set.
        calib = tempfile.mkdtemp(prefix="adaptive_calib_")
        np.save(os.path.join(calib, "x.npy"), RNG.standard_normal((64, 64)).astype(np.float32))
        import subprocess
        subprocess.run([INFERLOOP, "quantize", os.path.join(d, "1", "model.onnx"), "-o",
                        os.path.join(d, "1", "model.qdq.onnx"), "--calibration", calib], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.rmtree(calib)
        make_model_folder(cls.root, "tight", 'adaptive { latency_slo { percentile: 50 milliseconds: 0.001 } '
                                             'max_accuracy_drop: 100 window_ms: 200 }')
        cls.server = Server(INFERLOOP, cls.root, "--threads", "2", timeout=600)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        shutil.rmtree(cls.root, ignore_errors=True)

    def state(self, model):
        status, body = get_json(self.server.http_port, f"/v2/models/{model}/adaptive")
        self.assertEqual(status, 200, body)
        return body

    def infer(self, model, x):
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}
        status, _, resp = post_json(self.server.http_port, f"/v2/models/{model}/infer", body)
        self.assertEqual(status, 200, resp)
        out = resp["outputs"][0]
        return np.array(out["data"], dtype=np.float32).reshape(out["shape"])

    def test_variants_prepared_with_accuracy_measured(self):
        ev = [e for e in self.server.find_events("adaptive_variants") if e["model"] == "mlp"]
        self.assertEqual(len(ev), 1, self.server.log_text())
        v = variants(self.state("mlp"))
        self.assertTrue(v["fp32"]["usable"])
        self.assertEqual(v["fp32"]["accuracy_drop"], 0)
        self.assertEqual(v["fp32"]["metric"], "top-1 accuracy")
        self.assertTrue(v["int8"]["usable"], v["int8"])
        self.assertEqual(v["int8"]["source"], "calibration/")
        # Numpy's labels are fp32's own predictions on close calls: int8 loses some.
        self.assertGreater(v["int8"]["accuracy_drop"], 0)
        if not v["bf16"]["usable"]:
            self.assertIn("AVX512_BF16", v["bf16"]["skipped_reason"])
        for name in ("fp32", "int8"):
            sizes = [b for b, _ in v[name]["latency_ms"]]
            self.assertEqual(sizes, [1, 2, 4, 8])
            self.assertTrue(all(ms > 0 for _, ms in v[name]["latency_ms"]))
            self.assertGreater(v[name]["memory_bytes"], 0)

    def test_accuracy_bound_skips_the_variant(self):
        v = variants(self.state("bounded"))
        self.assertFalse(v["int8"]["usable"])
        self.assertIn("exceeds max_accuracy_drop 0.00", v["int8"]["skipped_reason"])
        self.assertGreater(v["int8"]["accuracy_drop"], 0)
        status, _, body = post_json(self.server.http_port, "/v2/models/bounded/adaptive/pin", {"variant": "int8"})
        self.assertEqual(status, 400, body)
        self.assertIn("not usable", body["error"])

    def test_missing_evaluation_set_skips_variants(self):
        v = variants(self.state("noeval"))
        self.assertTrue(v["fp32"]["usable"])
        self.assertFalse(v["int8"]["usable"])
        self.assertIn("no evaluation set", v["int8"]["skipped_reason"])
        self.assertEqual(self.state("noeval")["variant"], "fp32")

    def test_shipped_qdq_model(self):
        v = variants(self.state("qdq"))
        self.assertEqual(sorted(v), ["fp32", "int8"])
        self.assertTrue(v["int8"]["usable"], v["int8"])
        self.assertEqual(v["int8"]["source"], "model.qdq.onnx")

    def test_pin_and_free(self):
        x = RNG.standard_normal((3, 64)).astype(np.float32)
        ref = logits(x)
        np.testing.assert_allclose(self.infer("mlp", x), ref, rtol=1e-4, atol=1e-4)
        status, _, body = post_json(self.server.http_port, "/v2/models/mlp/adaptive/pin", {"variant": "int8"})
        self.assertEqual(status, 200, body)
        s = self.state("mlp")
        self.assertEqual((s["variant"], s["pinned"]), ("int8", "int8"))
        got = self.infer("mlp", x)
        # int8: close to fp32 but not bit-equal (weights and activations quantized).
        self.assertFalse(np.array_equal(got, self.infer_fp32_reference(x)))
        np.testing.assert_allclose(got, ref, atol=0.25 * np.abs(ref).max())
        pinned = [e for e in self.wait_events("adaptive_decision", lambda e: e["model"] == "mlp" and e["reason"] == "pinned")]
        self.assertEqual(pinned[-1]["variant"], "int8")
        self.assertEqual(metric_value(metrics(self.server.metrics_port), "inferloop_adaptive_variant",
                                      model="mlp", version="1", variant="int8"), 1)
        status, _, body = post_json(self.server.http_port, "/v2/models/mlp/adaptive/free", {})
        self.assertEqual(status, 200, body)
        self.assertEqual(self.state("mlp")["pinned"], "")
        self.wait_events("adaptive_decision", lambda e: e["model"] == "mlp" and e["reason"] == "freed")

    def infer_fp32_reference(self, x):
        return logits(x).astype(np.float32)

    def wait_events(self, name, pred, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            found = [e for e in self.server.find_events(name) if pred(e)]
            if found:
                return found
            time.sleep(0.05)
        self.fail(f"no {name} event matching within {timeout}s:\n{self.server.log_text()}")

    def test_bad_pins(self):
        port = self.server.http_port
        status, _, body = post_json(port, "/v2/models/mlp/adaptive/pin", {"variant": "fp8"})
        self.assertEqual(status, 400, body)
        self.assertIn("no variant 'fp8'", body["error"])
        status, _, body = post_json(port, "/v2/models/nosuch/adaptive/pin", {"variant": "int8"})
        self.assertEqual(status, 404, body)

    def test_unreachable_slo_says_so(self):
        # Traffic makes the controller decide; no setting meets 0.001 ms.
        x = RNG.standard_normal((1, 64)).astype(np.float32)
        end = time.time() + 30
        ev = []
        while time.time() < end and not ev:
            self.infer("tight", x)
            ev = [e for e in self.server.find_events("adaptive_decision")
                  if e["model"] == "tight" and e["reason"] == "slo_unreachable"]
        self.assertTrue(ev, self.server.log_text())
        self.assertEqual(ev[-1]["level"], "warn")
        self.assertEqual(ev[-1]["slo_unreachable"], "true")
        s = self.state("tight")
        self.assertTrue(s["slo_unreachable"])  # stays true: no setting ever meets 0.001 ms
        # The decision: the fastest allowed variant (most rows per ms at its largest batch, as
        # measured at load; on a model this small int8 need not be the fastest) at that batch.
        # (Read from the event: the state may already show a later window's "idle" decision.)
        usable = [v for v in s["variants"] if v["usable"]]
        rows_per_ms = {v["name"]: v["latency_ms"][-1][0] / v["latency_ms"][-1][1] for v in usable}
        self.assertEqual(ev[-1]["variant"], max(rows_per_ms, key=rows_per_ms.get))
        self.assertEqual(ev[-1]["batch_size"], "8")
        self.assertEqual(metric_value(metrics(self.server.metrics_port), "inferloop_adaptive_slo_unreachable",
                                      model="tight", version="1"), 1)


class TestAdaptiveExample(unittest.TestCase):
    def test_the_documented_example_serves_and_pins(self):
        # docs/ADAPTIVE.md "Try it": examples/adaptive/model_repository as written.
        repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "adaptive",
                            "model_repository")
        server = Server(INFERLOOP, repo, timeout=300)
        try:
            status, state = get_json(server.http_port, "/v2/models/digits/adaptive")
            self.assertEqual(status, 200, state)
            v = variants(state)
            self.assertTrue(v["fp32"]["usable"])
            self.assertEqual(v["fp32"]["metric"], "top-1 accuracy")  # labels.npy in evaluation/
            self.assertTrue(v["int8"]["usable"], v["int8"])
            self.assertEqual(v["int8"]["source"], "calibration/")
            self.assertLessEqual(v["int8"]["accuracy_drop"], 1)
            status, _, body = post_json(server.http_port, "/v2/models/digits/adaptive/pin", {"variant": "int8"})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["variant"], "int8")
        finally:
            server.terminate()


class TestAdaptiveConfigErrors(unittest.TestCase):
    def test_conflicting_and_bad_fields_are_load_errors(self):
        cases = {
            "prec": ('parameters { key: "precision" value: { string_value: "bf16" } }\n' + SLO % "1",
                     "fixes it to 'bf16'"),
            "pct": ('adaptive { latency_slo { percentile: 100 milliseconds: 5 } }', "percentile"),
            "ms": ('adaptive { latency_slo { percentile: 99 } }', "milliseconds must be > 0"),
            "var": ('adaptive { variants: ["fp32", "fp8"] }', "unknown variant 'fp8'"),
            "dup": ('adaptive { variants: ["int8", "int8"] }', "listed twice"),
            "share": ('adaptive { cpu_share: 0 }', "cpu_share"),
            "dir": ('adaptive { latency_slo { percentile: 99 milliseconds: 5 } evaluation: "../x" }', "evaluation"),
        }
        root = tempfile.mkdtemp(prefix="adaptive_bad_")
        try:
            for name, (cfg, _) in cases.items():
                make_model_folder(root, name, cfg, calibration=False, evaluation=False)
            server = Server(INFERLOOP, root, wait_ready=False)
            try:
                server.wait_event("server_not_ready", 120)
                status, index = 0, None
                status, _, body = post_json(server.http_port, "/v2/repository/index", {})
                self.assertEqual(status, 200, body)
                reasons = {e["name"]: e.get("reason", "") for e in body}
                for name, (_, needle) in cases.items():
                    self.assertIn(needle, reasons.get(name, ""), (name, reasons.get(name)))
            finally:
                server.terminate()
        finally:
            shutil.rmtree(root, ignore_errors=True)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
