"""End-to-end tests of the idle policy of `inferloop serve` (docs/ADAPTIVE.md, "Idle"):
--memory-budget unloads the least recently used models, a request to one loads it again (event
"model_loaded_on_demand"), a hot model (adaptive { hot: true }) is never unloaded and loads at
start even in explicit mode, a model the user unloaded is not loaded on demand, a language model
(GGUF, OpenAI API) unloaded for the budget loads again on its next completion, and
--idle-release-after frees an idle model's arenas ("model_idle_memory_released").

The models are made here with onnx.helper: Y = X @ W with W of 8 MiB (a distinct W per model),
and answers are checked against NumPy. The test waits on conditions (the index, events) with
deadlines, never on fixed sleeps.

Usage: test_idle.py --inferloop PATH/TO/inferloop [unittest args]
"""
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, get_json, metric_value, metrics, post_json, request, run_tests, wait_for  # noqa: E402

INFERLOOP = None
IN, OUT = 512, 4096  # W: 512 x 4096 float32 = 8 MiB
PLAIN = [f"m{i}" for i in range(7)]
STORIES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "llm", "stories260k.gguf")
HOT = "hot"


def weights(name):
    return np.random.default_rng(sum(map(ord, name))).standard_normal((IN, OUT)).astype(np.float32)


def make_model(repo, name, hot=False):
    w = numpy_helper.from_array(weights(name), "W")
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], name,
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, IN])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, OUT])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.join(repo, name, "1"))
    onnx.save(model, os.path.join(repo, name, "1", "model.onnx"))
    config = f'name: "{name}"\nmax_batch_size: 0\n'
    if hot:
        config += "adaptive { hot: true }\n"
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(config)


def infer(port, name, seed=0):
    """Runs `name` and checks Y against NumPy; returns the HTTP status and the body."""
    x = np.random.default_rng(seed).standard_normal((1, IN)).astype(np.float32)
    body = {"inputs": [{"name": "X", "datatype": "FP32", "shape": [1, IN], "data": x.ravel().tolist()}]}
    status, _, answer = post_json(port, f"/v2/models/{name}/infer", body)
    if status == 200:
        y = np.array(answer["outputs"][0]["data"], dtype=np.float32).reshape(1, OUT)
        np.testing.assert_allclose(y, x @ weights(name), rtol=1e-3, atol=1e-3)
    return status, answer


def index(port):
    status, _, body = post_json(port, "/v2/repository/index", {})
    assert status == 200, (status, body)
    return {e["name"]: e for e in body}


def serving(idx):
    return sorted(n for n, e in idx.items() if e.get("state") == "READY")


def idle_unloaded(idx):
    return sorted(n for n, e in idx.items()
                  if e.get("state") == "UNAVAILABLE" and "unloaded while idle" in e.get("reason", ""))


class IdleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = tempfile.mkdtemp(prefix="inferloop_e2e_idle_")
        for n in PLAIN:
            make_model(cls.repo, n)
        make_model(cls.repo, HOT, hot=True)
        # Each model's memory as the server measures it (the heap bytes its load kept), to size a
        # budget that fits the hot model and at least one other but not all: the hot model plus
        # 2.5 of the median model.
        with Server(INFERLOOP, cls.repo, "--idle-release-after", "0") as srv:
            text = metrics(srv.metrics_port)
            cls.bytes = {n: metric_value(text, "inferloop_model_memory_bytes", model=n) for n in PLAIN + [HOT]}
            srv.terminate()
        for n, b in cls.bytes.items():
            assert b and b >= 8 << 20, (n, b)  # the 8 MiB weight at least
        cls.budget = int(cls.bytes[HOT] + 2.5 * sorted(cls.bytes[n] for n in PLAIN)[len(PLAIN) // 2])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.repo, ignore_errors=True)

    def settled(self, srv):
        """The index once the policy is done: the serving models' memory (metrics) fits the budget,
        or only the hot model is left."""
        def check():
            idx = index(srv.http_port)
            text = metrics(srv.metrics_port)
            total = sum(metric_value(text, "inferloop_model_memory_bytes", model=n) or 0 for n in serving(idx))
            moving = [n for n, e in idx.items() if e.get("state") in ("LOADING", "UNLOADING")]
            return idx if not moving and (total <= self.budget or serving(idx) == [HOT]) else None
        return wait_for("the serving models fit the budget", check)

    def test_budget_unloads_least_recently_used_and_loads_on_demand(self):
        with Server(INFERLOOP, self.repo, "--memory-budget", str(self.budget), "--idle-release-after", "0") as srv:
            port = srv.http_port
            used = list(PLAIN)  # least recently used first: at start, the load order
            on_demand = {n: 0 for n in PLAIN}
            idx = self.settled(srv)
            self.assertTrue(idle_unloaded(idx), "the budget fits the hot model and one or two others")
            self.assertEqual(request(port, "GET", "/v2/health/ready")[0], 200)  # still ready
            self.assertEqual(idx[idle_unloaded(idx)[0]]["reason"],
                             "unloaded while idle (memory budget); loads on the next request")
            for step, n in enumerate(PLAIN + ["m0", "m1"]):
                if n in idle_unloaded(idx):
                    on_demand[n] += 1
                status, body = infer(port, n, seed=step)
                self.assertEqual(status, 200, body)
                used.remove(n)
                used.append(n)
                idx = self.settled(srv)
                # Least recently used unloaded first: every unloaded model was used before every
                # serving one; the one just used serves; the hot one always does.
                gone, kept = idle_unloaded(idx), [m for m in serving(idx) if m != HOT]
                self.assertIn(HOT, serving(idx))
                self.assertIn(n, kept, idx)
                self.assertEqual(sorted(gone + kept), PLAIN, idx)
                self.assertLess(max(used.index(m) for m in gone), min(used.index(m) for m in kept), (used, idx))
            # Events and metrics: an on-demand load (with the first request's wait) per request
            # that found its model unloaded; the idle unloads counted per model.
            loads = srv.find_events("model_loaded_on_demand")
            self.assertEqual({n: sum(e["model"] == n for e in loads) for n in PLAIN}, on_demand)
            self.assertGreaterEqual(sum(on_demand.values()), 2)
            for e in loads:
                self.assertGreaterEqual(int(e["wait_ms"]), 0)
                self.assertGreaterEqual(int(e["requests"]), 1)
            # The manager logs an unload's event, then counts it in the metric: poll until the two
            # agree (up to 5 s; after that the assertions below say how they differ).
            def read():
                unloads = [e["model"] for e in srv.find_events("model_unloaded") if e.get("reason") == "idle"]
                text = metrics(srv.metrics_port)
                agree = all((metric_value(text, "inferloop_model_idle_unloads_total", model=n) or 0) == unloads.count(n)
                            for n in PLAIN)
                return agree, unloads, text
            deadline = time.time() + 5
            agree, idle_unloads, text = read()
            while not agree and time.time() < deadline:
                time.sleep(0.05)
                agree, idle_unloads, text = read()
            self.assertNotIn(HOT, [e["model"] for e in srv.find_events("model_unloaded")])
            for n in PLAIN:
                self.assertEqual(metric_value(text, "inferloop_model_idle_unloads_total", model=n) or 0,
                                 idle_unloads.count(n))
                self.assertEqual(metric_value(text, "inferloop_model_on_demand_load_seconds_count", model=n) or 0,
                                 on_demand[n])
            self.assertEqual(srv.terminate(), 0)

    def test_same_models_are_charged_the_same_whatever_the_load_order(self):
        # The models differ only in W's values, so each holds the same memory, whether the server
        # loaded it first (with the process's one-time set-up around it), later, or on demand.
        # Charged as the resident memory a load added, it was 2 to 4 times W for the first (hot 24
        # to 30 MiB, then 16, then 8), which made the budget unload a model just loaded on demand.
        w = IN * OUT * 4
        for n, b in self.bytes.items():
            self.assertLess(b, 1.25 * w, (n, self.bytes))
        with Server(INFERLOOP, self.repo, "--memory-budget", str(self.budget), "--idle-release-after", "0") as srv:
            idx = self.settled(srv)
            gone = idle_unloaded(idx)
            self.assertTrue(gone, idx)
            status, body = infer(srv.http_port, gone[0])
            self.assertEqual(status, 200, body)
            text = metrics(srv.metrics_port)
            b = metric_value(text, "inferloop_model_memory_bytes", model=gone[0])
            self.assertGreaterEqual(b, w)
            self.assertLess(b, 1.25 * w, text)

    def test_concurrent_requests_share_one_load(self):
        with Server(INFERLOOP, self.repo, "--memory-budget", str(self.budget), "--idle-release-after", "0",
                    "--http-threads", "4") as srv:
            port = srv.http_port
            wait_for("m0 unloaded", lambda: "m0" in idle_unloaded(index(port)))
            with cf.ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda i: infer(port, "m0", seed=i), range(8)))
            for status, body in answers:
                self.assertEqual(status, 200, body)
            loads = [e for e in srv.find_events("model_loaded_on_demand") if e["model"] == "m0"]
            self.assertEqual(len(loads), 1, srv.log_text())

    def test_explicit_mode_hot_preloaded_and_user_unload_is_not_undone(self):
        startup = [a for n in PLAIN[:6] for a in ("--load-model", n)]
        with Server(INFERLOOP, self.repo, "--model-control-mode", "explicit", *startup, "--memory-budget",
                    str(self.budget), "--idle-release-after", "0") as srv:
            port = srv.http_port
            idx = wait_for("m0 unloaded while idle", lambda: (lambda i: i if "m0" in idle_unloaded(i) else None)(index(port)))
            # The hot model is loaded though not in the startup list; m6 was never asked for.
            self.assertIn(HOT, serving(idx))
            self.assertNotIn("m6", serving(idx) + idle_unloaded(idx))
            self.assertEqual(idx["m6"]["state"], "UNAVAILABLE")
            # Idle-unloaded: loads on demand in explicit mode too; m1 (least recently used) goes
            # (now, or it went at start already).
            self.assertEqual(infer(port, "m0")[0], 200)
            wait_for("m1 unloaded while idle", lambda: "m1" in idle_unloaded(index(port)))
            # The user unloads m1 (idle-unloaded) and m2 (serving): requests do not bring them back.
            for n in ("m1", "m2"):
                status, _, body = post_json(port, f"/v2/repository/models/{n}/unload", {})
                self.assertEqual(status, 200, body)
                status, body = infer(port, n)
                self.assertIn(status, (400, 404, 503), body)
                idx = index(port)
                self.assertEqual(idx[n]["state"], "UNAVAILABLE")
                self.assertNotIn("idle", idx[n].get("reason", ""))
            self.assertEqual([e["model"] for e in srv.find_events("model_loaded_on_demand")], ["m0"])
            # A model never loaded is not loaded by a request either (explicit mode as before).
            self.assertNotEqual(infer(port, "m6")[0], 200)
            # An explicit load brings m1 back.
            status, _, body = post_json(port, "/v2/repository/models/m1/load", {})
            self.assertEqual(status, 200, body)
            self.assertEqual(infer(port, "m1")[0], 200)

    def test_idle_release_frees_arenas_of_idle_models_not_hot_ones(self):
        with Server(INFERLOOP, self.repo, "--idle-release-after", "0.3") as srv:
            port = srv.http_port
            self.assertEqual(infer(port, "m0")[0], 200)
            self.assertEqual(infer(port, HOT)[0], 200)
            n = len(srv.events)
            srv.wait_event("model_idle_memory_released", timeout=30, after=n)
            wait_for("m0 released", lambda: any(e["model"] == "m0" for e in srv.find_events("model_idle_memory_released")))
            released = [e["model"] for e in srv.find_events("model_idle_memory_released")]
            self.assertNotIn(HOT, released)
            self.assertEqual(released.count("m0"), 1)  # once until used again
            for e in srv.find_events("model_idle_memory_released"):
                self.assertLessEqual(int(e["memory_bytes_after"]), int(e["memory_bytes_before"]))
            # Used again: it answers, and is released again later.
            self.assertEqual(infer(port, "m0", seed=3)[0], 200)
            wait_for("m0 released again",
                     lambda: [e["model"] for e in srv.find_events("model_idle_memory_released")].count("m0") == 2)
            # Nothing was unloaded (no budget).
            self.assertEqual([e for e in srv.find_events("model_unloaded")], [])

    def test_language_model_unloaded_for_the_budget_answers_on_demand(self):
        # Two copies of the test LLM (the same weights: greedy text must be the same from either),
        # a budget that holds one: each completion finds its model unloaded, loads it and answers.
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_idle_llm_")
        try:
            for n in ("a", "b"):
                os.makedirs(os.path.join(repo, n, "1"))
                shutil.copy(STORIES, os.path.join(repo, n, "1", "model.gguf"))
            args = ["--llm-kv-cache-mb", "8", "--idle-release-after", "0"]
            with Server(INFERLOOP, repo, *args) as srv:
                size = max(metric_value(metrics(srv.metrics_port), "inferloop_model_memory_bytes", model=n) for n in "ab")
                srv.terminate()
            with Server(INFERLOOP, repo, *args, "--memory-budget", str(int(1.5 * size))) as srv:
                port = srv.http_port
                first = wait_for("one model unloaded", lambda: idle_unloaded(index(port)))[0]
                order = [first, "b" if first == "a" else "a", first]
                texts = []
                for n in order:
                    status, _, body = post_json(port, "/v1/completions", {"model": n, "prompt": "Once upon a time",
                                                                          "max_tokens": 6, "temperature": 0})
                    self.assertEqual(status, 200, body)
                    texts.append(body["choices"][0]["text"])
                    # Settled: the one just used serves, the other is unloaded for the budget.
                    wait_for(f"{n} serving alone", lambda n=n: serving(index(port)) == [n])
                self.assertEqual(len(set(texts)), 1, texts)
                self.assertEqual([e["model"] for e in srv.find_events("model_loaded_on_demand")], order)
                self.assertEqual(srv.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)

    def test_bad_option_values_are_clear_errors(self):
        cases = [(["--memory-budget", "12XB"], "--memory-budget"), (["--memory-budget", "-5"], "--memory-budget"),
                 (["--memory-budget", "1.5GiB"], "--memory-budget"), (["--idle-release-after", "-1"], "--idle-release-after"),
                 (["--idle-release-after", "soon"], "--idle-release-after")]
        for extra, flag in cases:
            p = subprocess.run([INFERLOOP, "serve", "--model-repository", self.repo, "--http-port", "0",
                                "--grpc-port", "0", "--metrics-port", "0"] + extra,
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, extra)
            self.assertIn(flag, p.stderr, (extra, p.stderr))


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    run_tests(set_inferloop)
