#!/usr/bin/env python3
"""Ensembles and conditional cascades through `inferloop serve`, driven by tritonclient.

The repository (ONNX models made here with the onnx helper API):
  pre      x FP32[-1,4] -> y = 2 x                       (preprocess)
  clf      y FP32[-1,4] -> probs = Softmax(y W)  [-1,3]  (classifier)
  post     probs FP32[-1,3] -> top INT64[-1,1] = ArgMax, score FP32[-1,1] = ReduceMax (postprocess)
  screen   x FP32[-1,4] -> flag FP32[-1,1] = Sigmoid(sum x)  (the fast screen of the cascade)
  pipe     Triton's ensemble syntax: pre -> clf -> post (a Triton user's config, unchanged)
  fork     pre, then clf and screen side by side from the same tensor (a DAG)
  cascade  screen, then clf only when max(flag) > 0.5; clf's probs default to 0 when skipped
Checks: pipe answers over REST and gRPC exactly what the steps give run by hand; the DAG; the
cascade runs clf exactly as often as the screen flags (its statistics and the step metrics), with
skipped outputs taking the declared value; load errors name the step (unknown model, cycle, dtype
mismatch, unknown input); a step failing at run time fails that request with the step named while
others are answered; a member reloaded under load loses no request.

Usage: test_ensemble.py --inferloop BUILD/inferloop [unittest args]
"""
import argparse
import concurrent.futures as cf
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import onnx
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import TensorProto, helper, numpy_helper
from tritonclient.utils import InferenceServerException

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve_harness import Server, get_json, metric_value, metrics, post_json  # noqa: E402

INFERLOOP = None
OPSET = [helper.make_opsetid("", 17)]
W = np.array([[1, 0, -1], [0.5, 1, 0], [0, -0.5, 1], [1, 1, 1]], dtype=np.float32)


def save(graph, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    m = helper.make_model(graph, opset_imports=OPSET)
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def tensor_cfg(kind, name, dtype, dims):
    return f'{kind} [ {{ name: "{name}" data_type: {dtype} dims: [ {", ".join(map(str, dims))} ] }} ]\n'


def make_repository(root):
    F = TensorProto.FLOAT
    two = numpy_helper.from_array(np.array(2, dtype=np.float32), "two")
    save(helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y"])], "pre",
                           [vi("x", F, ["n", 4])], [vi("y", F, ["n", 4])], [two]), f"{root}/pre/1/model.onnx")
    w = numpy_helper.from_array(W, "w")
    save(helper.make_graph([helper.make_node("MatMul", ["y", "w"], ["z"]), helper.make_node("Softmax", ["z"], ["probs"], axis=1)],
                           "clf", [vi("y", F, ["n", 4])], [vi("probs", F, ["n", 3])], [w]), f"{root}/clf/1/model.onnx")
    save(helper.make_graph([helper.make_node("ArgMax", ["probs"], ["top"], axis=1, keepdims=1),
                            helper.make_node("ReduceMax", ["probs"], ["score"], axes=[1], keepdims=1)],
                           "post", [vi("probs", F, ["n", 3])], [vi("top", TensorProto.INT64, ["n", 1]), vi("score", F, ["n", 1])]),
         f"{root}/post/1/model.onnx")
    save(helper.make_graph([helper.make_node("ReduceSum", ["x", "ax"], ["s"], keepdims=1),
                            helper.make_node("Sigmoid", ["s"], ["flag"])],
                           "screen", [vi("x", F, ["n", 4])], [vi("flag", F, ["n", 1])],
                           [numpy_helper.from_array(np.array([1], dtype=np.int64), "ax")]), f"{root}/screen/1/model.onnx")
    for name, ins, outs in (("pre", [("x", 4)], [("y", 4)]), ("clf", [("y", 4)], [("probs", 3)]),
                            ("screen", [("x", 4)], [("flag", 1)])):
        write(f"{root}/{name}/config.pbtxt", f'name: "{name}"\nbackend: "onnxruntime"\nmax_batch_size: 8\n' +
              "".join(tensor_cfg("input", n, "TYPE_FP32", [d]) for n, d in ins) +
              "".join(tensor_cfg("output", n, "TYPE_FP32", [d]) for n, d in outs) +
              "dynamic_batching { max_queue_delay_microseconds: 200 }\n")
    write(f"{root}/post/config.pbtxt", 'name: "post"\nbackend: "onnxruntime"\nmax_batch_size: 8\n' +
          tensor_cfg("input", "probs", "TYPE_FP32", [3]) +
          'output [ { name: "top" data_type: TYPE_INT64 dims: [ 1 ] }, { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]\n')
    # Triton's ensemble syntax, as a Triton user writes it.
    write(f"{root}/pipe/config.pbtxt", '''name: "pipe"
platform: "ensemble"
max_batch_size: 8
input [ { name: "RAW" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [
  { name: "LABEL" data_type: TYPE_INT64 dims: [ 1 ] },
  { name: "CONFIDENCE" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "PROBS" data_type: TYPE_FP32 dims: [ 3 ] }
]
ensemble_scheduling {
  step [
    {
      model_name: "pre"
      model_version: -1
      input_map { key: "x" value: "RAW" }
      output_map { key: "y" value: "normalized" }
    },
    {
      model_name: "clf"
      model_version: -1
      input_map { key: "y" value: "normalized" }
      output_map { key: "probs" value: "PROBS" }
    },
    {
      model_name: "post"
      model_version: -1
      input_map { key: "probs" value: "PROBS" }
      output_map [ { key: "top" value: "LABEL" }, { key: "score" value: "CONFIDENCE" } ]
    }
  ]
}
''')
    os.makedirs(f"{root}/pipe/1")
    write(f"{root}/fork/config.pbtxt", '''name: "fork"
platform: "ensemble"
max_batch_size: 8
input [ { name: "RAW" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "PROBS" data_type: TYPE_FP32 dims: [ 3 ] }, { name: "FLAG" data_type: TYPE_FP32 dims: [ 1 ] } ]
ensemble_scheduling {
  step [
    { model_name: "pre" input_map { key: "x" value: "RAW" } output_map { key: "y" value: "Y" } },
    { model_name: "clf" input_map { key: "y" value: "Y" } output_map { key: "probs" value: "PROBS" } },
    { model_name: "screen" input_map { key: "x" value: "Y" } output_map { key: "flag" value: "FLAG" } }
  ]
}
''')
    os.makedirs(f"{root}/fork/1")
    write(f"{root}/cascade/config.pbtxt", '''name: "cascade"
platform: "ensemble"
max_batch_size: 8
input [ { name: "RAW" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "FLAG" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "PROBS" data_type: TYPE_FP32 dims: [ 3 ] } ]
ensemble_scheduling {
  step [
    { model_name: "screen" input_map { key: "x" value: "RAW" } output_map { key: "flag" value: "FLAG" } },
    {
      model_name: "clf"
      input_map { key: "y" value: "RAW" }
      output_map { key: "probs" value: "PROBS" }
      condition { tensor: "FLAG" reduce: "max" op: ">" value: 0.5 }
      skipped_value { key: "PROBS" value: 0 }
    }
  ]
}
''')
    os.makedirs(f"{root}/cascade/1")


def by_hand(x):
    y = 2 * x
    z = y @ W
    e = np.exp(z - z.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    return probs, probs.argmax(axis=1)[:, None].astype(np.int64), probs.max(axis=1, keepdims=True)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


class TestEnsemble(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = tempfile.mkdtemp(prefix="inferloop_ensemble_")
        make_repository(cls.repo)
        cls.server = Server(INFERLOOP, cls.repo, "--model-control-mode", "explicit", "--load-model", "*")
        cls.http = httpclient.InferenceServerClient(cls.server.http_url)
        cls.grpc = grpcclient.InferenceServerClient(cls.server.grpc_url)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        shutil.rmtree(cls.repo, ignore_errors=True)

    def infer(self, mod, client, model, x, outputs=None):
        inp = mod.InferInput("RAW", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        outs = [mod.InferRequestedOutput(o) for o in outputs] if outputs else None
        return client.infer(model, [inp], outputs=outs)

    def step(self, model, name, x, out):
        inp = httpclient.InferInput(name, list(x.shape), "FP32" if x.dtype == np.float32 else "INT64")
        inp.set_data_from_numpy(x)
        return self.http.infer(model, [inp]).as_numpy(out)

    def test_triton_ensemble_over_rest_and_grpc_equals_the_steps_by_hand(self):
        x = np.array([[0.1, -0.2, 0.3, 0.4], [1, 2, -1, 0.5], [-1, -1, 2, 0]], dtype=np.float32)
        # The steps run by hand through the server.
        y = self.step("pre", "x", x, "y")
        probs = self.step("clf", "y", y, "probs")
        inp = httpclient.InferInput("probs", list(probs.shape), "FP32")
        inp.set_data_from_numpy(probs)
        r = self.http.infer("post", [inp])
        top, score = r.as_numpy("top"), r.as_numpy("score")
        ref_probs, ref_top, ref_score = by_hand(x)
        np.testing.assert_allclose(probs, ref_probs, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(top, ref_top)
        for mod, client in ((httpclient, self.http), (grpcclient, self.grpc)):
            r = self.infer(mod, client, "pipe", x)
            np.testing.assert_array_equal(r.as_numpy("PROBS"), probs)
            np.testing.assert_array_equal(r.as_numpy("LABEL"), top)
            np.testing.assert_array_equal(r.as_numpy("CONFIDENCE"), score)
        # Only what is asked for.
        r = self.infer(httpclient, self.http, "pipe", x, outputs=["LABEL"])
        self.assertIsNone(r.as_numpy("PROBS"))
        np.testing.assert_array_equal(r.as_numpy("LABEL"), top)
        meta = self.http.get_model_metadata("pipe")
        self.assertEqual(meta["platform"], "ensemble")
        self.assertEqual([o["name"] for o in meta["outputs"]], ["LABEL", "CONFIDENCE", "PROBS"])

    def test_dag_steps_from_one_tensor(self):
        x = np.array([[0.5, 0.5, -2, 0.1]], dtype=np.float32)
        r = self.infer(httpclient, self.http, "fork", x)
        np.testing.assert_allclose(r.as_numpy("PROBS"), by_hand(x)[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r.as_numpy("FLAG"), sigmoid((2 * x).sum(axis=1, keepdims=True)), rtol=1e-5)

    def clf_count(self):
        stats = self.http.get_inference_statistics("clf")["model_stats"]
        return sum(int(s["inference_stats"]["success"]["count"]) for s in stats)

    def test_cascade_runs_the_fine_model_only_when_flagged(self):
        rng = np.random.default_rng(3)
        before = self.clf_count()
        flagged = 0
        for _ in range(40):
            x = rng.normal(0, 1, size=(1, 4)).astype(np.float32)
            r = self.infer(httpclient, self.http, "cascade", x)
            flag = sigmoid(x.sum())
            np.testing.assert_allclose(r.as_numpy("FLAG")[0, 0], flag, rtol=1e-5)
            if flag > 0.5:
                flagged += 1
                np.testing.assert_allclose(r.as_numpy("PROBS"), by_hand(x / 2)[0], rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(r.as_numpy("PROBS"), np.zeros((1, 3), np.float32))
        self.assertGreater(flagged, 5)
        self.assertLess(flagged, 35)
        self.assertEqual(self.clf_count() - before, flagged)
        text = metrics(self.server.metrics_port)
        self.assertEqual(metric_value(text, "inferloop_ensemble_step_total", model="cascade", step="step 2 (clf)",
                                      outcome="ran"), flagged)
        self.assertEqual(metric_value(text, "inferloop_ensemble_step_total", model="cascade", step="step 2 (clf)",
                                      outcome="skipped"), 40 - flagged)

    def test_a_failing_step_is_named_and_others_are_answered(self):
        bad = np.zeros((1, 5), dtype=np.float32)  # the first step's model refuses the shape
        with self.assertRaises(InferenceServerException) as e:
            self.infer(httpclient, self.http, "pipe", bad)
        self.assertIn("ensemble 'pipe' step 1 (pre)", str(e.exception))
        self.assertEqual(e.exception.status(), "400")
        good = np.ones((1, 4), dtype=np.float32)
        np.testing.assert_array_equal(self.infer(httpclient, self.http, "pipe", good).as_numpy("LABEL"), by_hand(good)[1])

    def load_error(self, name, config):
        d = os.path.join(self.repo, name)
        os.makedirs(os.path.join(d, "1"), exist_ok=True)
        write(os.path.join(d, "config.pbtxt"), config)
        status, _, body = post_json(self.server.http_port, f"/v2/repository/models/{name}/load", {})
        self.assertNotEqual(status, 200, body)
        return body["error"]

    def test_bad_ensembles_fail_to_load_naming_the_step(self):
        head = ('platform: "ensemble"\nmax_batch_size: 8\ninput [ { name: "RAW" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
                'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]\n')
        err = self.load_error("e_unknown", head + 'ensemble_scheduling { step [ { model_name: "nope" '
                              'input_map { key: "x" value: "RAW" } output_map { key: "y" value: "OUT" } } ] }')
        self.assertIn("step 1 (nope)", err)
        err = self.load_error("e_cycle", head + '''ensemble_scheduling { step [
            { model_name: "pre" input_map { key: "x" value: "B" } output_map { key: "y" value: "A" } },
            { model_name: "clf" input_map { key: "y" value: "A" } output_map { key: "probs" value: "OUT" } },
            { model_name: "pre" input_map { key: "x" value: "OUT" } output_map { key: "y" value: "B" } } ] }''')
        self.assertIn("cycle", err)
        self.assertIn("step", err)
        head3 = head.replace("dims: [ 4 ] } ]", "dims: [ 3 ] } ]", 1)
        err = self.load_error("e_dtype", head3 + '''ensemble_scheduling { step [
            { model_name: "post" input_map { key: "probs" value: "RAW" } output_map { key: "top" value: "T" } },
            { model_name: "clf" input_map { key: "y" value: "T" } output_map { key: "probs" value: "OUT" } } ] }''')
        self.assertIn("step 2 (clf)", err)
        self.assertIn("TYPE_INT64", err)
        err = self.load_error("e_input", head + 'ensemble_scheduling { step [ { model_name: "clf" '
                              'input_map { key: "nope" value: "RAW" } output_map { key: "probs" value: "OUT" } } ] }')
        self.assertIn("has no input 'nope'", err)
        # The server serves on.
        self.assertTrue(self.http.is_model_ready("pipe"))

    def test_reloading_a_member_under_load_fails_no_request(self):
        x = np.array([[0.3, 0.1, 0.2, -0.4]], dtype=np.float32)
        want = by_hand(x)[1]
        stop = threading.Event()
        results = []

        def worker():
            client = httpclient.InferenceServerClient(self.server.http_url)
            while not stop.is_set():
                try:
                    r = self.infer(httpclient, client, "pipe", x)
                    results.append(bool((r.as_numpy("LABEL") == want).all()))
                except InferenceServerException as e:
                    results.append(str(e))

        with cf.ThreadPoolExecutor(3) as pool:
            futs = [pool.submit(worker) for _ in range(3)]
            for i in range(3):
                time.sleep(0.3)
                path = os.path.join(self.repo, "clf", "1", "model.onnx")
                os.utime(path, (time.time() + i + 1, time.time() + i + 1))
                status, _, body = post_json(self.server.http_port, "/v2/repository/models/clf/load", {})
                self.assertEqual(status, 200, body)
            time.sleep(0.3)
            stop.set()
            for f in futs:
                f.result()
        failures = [r for r in results if r is not True]
        self.assertGreater(len(results), 20)
        self.assertEqual(failures, [])
        reloads = [e for e in self.server.find_events("model_version_loaded") if e["model"] == "clf" and e["reload"] == "true"]
        self.assertEqual(len(reloads), 3)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
