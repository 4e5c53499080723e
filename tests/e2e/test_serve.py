"""End-to-end tests of `inferloop serve` over loopback, with the clients users run (Triton's
tritonclient for REST and gRPC) and raw HTTP for what a well-behaved client never sends.

Usage: test_serve.py --inferloop PATH/TO/inferloop [unittest args]
Needs the project venv (scripts/setup_venv.sh: numpy, onnx, tritonclient[http,grpc]).
"""
import argparse
import concurrent.futures as cf
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_test_repository  # noqa: E402
from serve_harness import (Server, get_json, metric_value, metrics, post_json, raw_socket_send,  # noqa: E402
                           request, slow_request)

INFERLOOP = None
REPO = None  # made once per run by make_test_repository


def setUpModule():
    global REPO
    REPO = tempfile.mkdtemp(prefix="inferloop_e2e_")
    subprocess.check_call([sys.executable, make_test_repository.__file__, REPO, "--big-mb", "96"])


def tearDownModule():
    shutil.rmtree(REPO, ignore_errors=True)


def copy_models(names, dest):
    for n in names:
        shutil.copytree(os.path.join(REPO, n), os.path.join(dest, n))


def simple_inputs(mod, batch=1, binary=True, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-1000, 1000, size=(batch, 16), dtype=np.int32)
    b = rng.integers(-1000, 1000, size=(batch, 16), dtype=np.int32)
    ins = [mod.InferInput("INPUT0", a.shape, "INT32"), mod.InferInput("INPUT1", b.shape, "INT32")]
    if mod is httpclient:
        ins[0].set_data_from_numpy(a, binary_data=binary)
        ins[1].set_data_from_numpy(b, binary_data=binary)
    else:
        ins[0].set_data_from_numpy(a)
        ins[1].set_data_from_numpy(b)
    return ins, a, b


def wait_blocker_running(server, model="slow", timeout=30):
    """Waits until a request is admitted and no longer queued: it is being computed."""
    end = time.time() + timeout
    while time.time() < end:
        m = metrics(server.metrics_port)
        inflight = metric_value(m, "inferloop_inflight_requests") or 0
        depth = metric_value(m, "inferloop_queue_depth", model=model, version="1") or 0
        if inflight >= 1 and depth == 0:
            return
        time.sleep(0.01)
    raise AssertionError("the blocking request never started")


def rounds_for(seconds, server):
    """Loop rounds of the slow model that take about `seconds` on this machine (measured)."""
    n = 20000
    t0 = time.time()
    status, _, body = post_json(server.http_port, "/v2/models/slow/infer", slow_request(n))
    assert status == 200, body
    per_round = max((time.time() - t0) / n, 1e-7)
    return int(seconds / per_round)


class SharedServerTest(unittest.TestCase):
    """One server (control mode none) over simple, all_types, slow and nobatch."""

    @classmethod
    def setUpClass(cls):
        cls.repo = tempfile.mkdtemp(prefix="inferloop_e2e_repo_")
        copy_models(["simple", "all_types", "slow", "nobatch"], cls.repo)
        cls.server = Server(INFERLOOP, cls.repo, "--max-request-mb", "4")

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.terminate()
        cls.server.__exit__()
        shutil.rmtree(cls.repo, ignore_errors=True)
        assert rc == 0, f"server exit code {rc}\n{cls.server.log_text()}"


class TestRestProtocol(SharedServerTest):
    def client(self):
        return httpclient.InferenceServerClient(self.server.http_url)

    def test_health_and_metadata(self):
        c = self.client()
        self.assertTrue(c.is_server_live())
        self.assertTrue(c.is_server_ready())
        md = c.get_server_metadata()
        self.assertEqual(md["name"], "inferloop")
        self.assertIn("model_repository", md["extensions"])
        self.assertTrue(c.is_model_ready("simple"))
        self.assertTrue(c.is_model_ready("simple", "1"))
        mm = c.get_model_metadata("simple")
        self.assertEqual(mm["name"], "simple")
        self.assertEqual(mm["versions"], ["1"])
        self.assertEqual([(i["name"], i["datatype"], i["shape"]) for i in mm["inputs"]],
                         [("INPUT0", "INT32", [-1, 16]), ("INPUT1", "INT32", [-1, 16])])
        self.assertGreater(mm["memory_bytes"], 0)
        cfg = c.get_model_config("simple")
        self.assertEqual(cfg["max_batch_size"], 8)
        self.assertEqual(len(cfg["input"]), 2)

    def test_config_completed_without_pbtxt(self):
        cfg = self.client().get_model_config("nobatch")
        self.assertEqual(cfg["name"], "nobatch")
        self.assertEqual(cfg["max_batch_size"], 8)  # the default for a model whose first dim is symbolic
        self.assertEqual([i["name"] for i in cfg["input"]], ["INPUT0", "INPUT1"])

    def test_infer_json_and_binary(self):
        c = self.client()
        for binary in (False, True):
            ins, a, b = simple_inputs(httpclient, batch=3, binary=binary)
            outs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary),
                    httpclient.InferRequestedOutput("OUTPUT1", binary_data=binary)]
            r = c.infer("simple", ins, outputs=outs, request_id=f"req-{binary}")
            np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
            np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
            self.assertEqual(r.get_response()["id"], f"req-{binary}")
            self.assertEqual(r.get_response()["model_version"], "1")

    def test_requested_output_subset(self):
        ins, a, b = simple_inputs(httpclient)
        r = self.client().infer("simple", ins, outputs=[httpclient.InferRequestedOutput("OUTPUT1")])
        self.assertIsNone(r.as_numpy("OUTPUT0"))
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)

    def test_every_datatype_round_trips(self):
        c = self.client()
        for binary in (False, True):
            ins, expect = [], {}
            rng = np.random.default_rng(3)
            for name, _ in make_test_repository.ALL_TYPES:
                if name == "BYTES":
                    arr = np.array(["", "héllo", "a b\nc", "x" * 100], dtype=np.object_)
                elif name == "BOOL":
                    arr = np.array([True, False, True, True])
                elif name.startswith("FP"):
                    arr = rng.standard_normal(4).astype({"FP16": np.float16, "FP32": np.float32, "FP64": np.float64}[name])
                else:
                    dt = np.dtype(name.lower())
                    info = np.iinfo(dt)
                    arr = np.array([info.min, info.max, 0, 1], dtype=dt)
                i = httpclient.InferInput(f"IN_{name}", arr.shape, np_to_triton_dtype(arr.dtype))
                i.set_data_from_numpy(arr, binary_data=binary or name == "FP16")
                ins.append(i)
                expect[f"OUT_{name}"] = arr
            outs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in expect]
            r = c.infer("all_types", ins, outputs=outs)
            for n, arr in expect.items():
                got = r.as_numpy(n)
                if arr.dtype == np.object_:
                    self.assertEqual([g.decode() if isinstance(g, bytes) else g for g in got], list(arr))
                else:
                    np.testing.assert_array_equal(got, arr)

    def test_repository_index_and_statistics(self):
        c = self.client()
        idx = {(m["name"], m.get("version", "")): m for m in c.get_model_repository_index()}
        self.assertEqual(idx[("simple", "1")]["state"], "READY")
        ins, _, _ = simple_inputs(httpclient)
        c.infer("simple", ins)
        st = c.get_inference_statistics("simple")["model_stats"][0]
        self.assertEqual(st["name"], "simple")
        self.assertGreaterEqual(int(st["inference_stats"]["success"]["count"]), 1)
        self.assertGreaterEqual(int(st["execution_count"]), 1)
        # Explicit load/unload is refused in mode none, with the reason.
        with self.assertRaises(InferenceServerException) as e:
            c.load_model("simple")
        self.assertIn("explicit", str(e.exception))


class TestGrpcProtocol(SharedServerTest):
    def client(self):
        return grpcclient.InferenceServerClient(self.server.grpc_url)

    def test_health_metadata_config(self):
        c = self.client()
        self.assertTrue(c.is_server_live())
        self.assertTrue(c.is_server_ready())
        self.assertEqual(c.get_server_metadata().name, "inferloop")
        self.assertTrue(c.is_model_ready("simple"))
        mm = c.get_model_metadata("simple")
        self.assertEqual([i.name for i in mm.inputs], ["INPUT0", "INPUT1"])
        cfg = c.get_model_config("simple").config
        self.assertEqual(cfg.max_batch_size, 8)

    def test_infer(self):
        c = self.client()
        ins, a, b = simple_inputs(grpcclient, batch=2)
        r = c.infer("simple", ins, request_id="g1")
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
        self.assertEqual(r.get_response().id, "g1")

    def test_bytes_and_errors(self):
        c = self.client()
        arr = np.array([b"abc", b"", b"\xff\x00binary"], dtype=np.object_)
        ins = []
        for name, _ in make_test_repository.ALL_TYPES:
            a = arr if name == "BYTES" else np.zeros(3, dtype=np.bool_ if name == "BOOL" else
                                                      {"FP16": np.float16, "FP32": np.float32, "FP64": np.float64}.get(name, None) or np.dtype(name.lower()))
            i = grpcclient.InferInput(f"IN_{name}", a.shape, np_to_triton_dtype(a.dtype))
            i.set_data_from_numpy(a)
            ins.append(i)
        r = c.infer("all_types", ins)
        self.assertEqual(list(r.as_numpy("OUT_BYTES")), list(arr))
        with self.assertRaises(InferenceServerException) as e:
            c.infer("no_such_model", ins)
        self.assertIn("NOT_FOUND", str(e.exception.status()))
        bad = grpcclient.InferInput("INPUT0", [1, 15], "INT32")
        bad.set_data_from_numpy(np.zeros((1, 15), np.int32))
        with self.assertRaises(InferenceServerException) as e:
            c.infer("simple", [bad])
        self.assertIn("INVALID_ARGUMENT", str(e.exception.status()))

    def test_statistics_and_index(self):
        c = self.client()
        names = {m.name for m in c.get_model_repository_index().models}
        self.assertTrue({"simple", "slow", "all_types"} <= names)
        ins, _, _ = simple_inputs(grpcclient)
        c.infer("simple", ins)
        st = c.get_inference_statistics("simple").model_stats[0]
        self.assertGreaterEqual(st.inference_stats.success.count, 1)


class TestBadRequests(SharedServerTest):
    """Each bad request gets a clear error with the right status, and the server keeps serving."""

    def infer_raw(self, model, body, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return request(self.server.http_port, "POST", f"/v2/models/{model}/infer", body, h)

    def assert_error(self, status, body, want_status, *words):
        self.assertEqual(status, want_status, body)
        msg = json.loads(body)["error"]
        for w in words:
            self.assertIn(w, msg)

    def test_long_model_names_are_not_echoed_whole(self):
        """A 6 KB (REST) or 10 KB (gRPC) model name gets a short 404 that names it truncated, and
        no message carries the server's repository path (a 10 KB gRPC error would exceed a default
        client's metadata limit)."""
        name = "m" * 6000
        status, _, body = self.infer_raw(name, b'{"inputs": []}')
        self.assertEqual(status, 404, body[:200])
        msg = json.loads(body)["error"]
        self.assertLess(len(msg), 300, msg[:400])
        self.assertIn("6000 bytes", msg)
        status, _, body = request(self.server.http_port, "GET", f"/v2/models/{name}")
        self.assertEqual(status, 404)
        self.assertLess(len(json.loads(body)["error"]), 300)
        client = grpcclient.InferenceServerClient(self.server.grpc_url)
        inp = grpcclient.InferInput("INPUT0", [1, 16], "INT32")
        inp.set_data_from_numpy(np.zeros((1, 16), np.int32))
        with self.assertRaises(InferenceServerException) as e:
            client.infer("g" * 10000, [inp])
        self.assertEqual(e.exception.status(), "StatusCode.NOT_FOUND")
        self.assertLess(len(e.exception.message()), 300, e.exception.message()[:400])
        self.assertIn("10000 bytes", e.exception.message())
        # Loading a model that is not in the repository names no server path.
        status, _, body = request(self.server.http_port, "POST", "/v2/repository/models/nope/load", b"{}")
        self.assertNotIn(self.repo, body.decode())

    def test_cases(self):
        good = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
                           {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))}]}
        st, _, body = self.infer_raw("simple", b'{"inputs": [ {"name": "INPUT0", ')
        self.assert_error(st, body, 400)
        bad = json.loads(json.dumps(good))
        bad["inputs"][0]["datatype"] = "FP32"
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "INPUT0", "FP32")
        bad = json.loads(json.dumps(good))
        bad["inputs"][0]["shape"] = [1, 8]
        bad["inputs"][0]["data"] = list(range(8))
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "INPUT0", "shape")
        bad = json.loads(json.dumps(good))
        bad["inputs"][0]["data"] = list(range(15))  # shape says 16
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "INPUT0")
        bad = json.loads(json.dumps(good))
        bad["inputs"][0]["shape"] = [9, 16]  # over max_batch_size 8
        bad["inputs"][0]["data"] = [0] * 144
        bad["inputs"][1]["shape"] = [9, 16]
        bad["inputs"][1]["data"] = [0] * 144
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "batch size")
        bad = json.loads(json.dumps(good))
        bad["inputs"][1]["shape"] = [2, 16]  # INPUT0 has 1 row
        bad["inputs"][1]["data"] = list(range(32))
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "INPUT0", "INPUT1", "batch size")
        st, _, body = self.infer_raw("no_such_model", json.dumps(good).encode())
        self.assert_error(st, body, 404, "no_such_model")
        st, _, body = request(self.server.http_port, "POST", "/v2/models/simple/versions/7/infer", json.dumps(good).encode())
        self.assert_error(st, body, 404, "7")
        bad = json.loads(json.dumps(good))
        bad["inputs"][0]["shape"] = [1 << 40, 1 << 20]
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assertIn(st, (400, 429), body)
        self.assertIn("error", json.loads(body))
        st, _, body = self.infer_raw("simple", b"{" + b" " * (5 << 20) + b"}")  # over --max-request-mb 4
        self.assertEqual(st, 413, body)
        st, _, body = self.infer_raw("simple", json.dumps(good).encode(), {"Inference-Header-Content-Length": "99999"})
        self.assert_error(st, body, 400)
        st, _, body = self.infer_raw("simple", json.dumps(good).encode(), {"Inference-Header-Content-Length": "abc"})
        self.assert_error(st, body, 400)
        st, _, body = request(self.server.http_port, "GET", "/v2/nothing/here")
        self.assertEqual(st, 404)
        st, _, body = request(self.server.http_port, "GET", "/v2/models/simple/infer")
        self.assertEqual(st, 405)
        bad = json.loads(json.dumps(good))
        bad["outputs"] = [{"name": "NOPE"}]
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "NOPE")
        bad = json.loads(json.dumps(good))
        bad["inputs"][0]["datatype"] = "FP99"
        st, _, body = self.infer_raw("simple", json.dumps(bad).encode())
        self.assert_error(st, body, 400, "FP99")
        # Garbage that is not HTTP at all: the connection is closed, the server stays up.
        s = raw_socket_send(self.server.http_port, b"\x00\x01\x02 garbage \r\n\r\n")
        s.settimeout(10)
        try:
            s.recv(4096)
        except OSError:
            pass
        s.close()
        # Still serving, with a correct answer.
        st, _, body = self.infer_raw("simple", json.dumps(good).encode())
        self.assertEqual(st, 200, body)
        out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
        self.assertEqual(out["OUTPUT0"], [2 * i for i in range(16)])


class TestScheduling(SharedServerTest):
    def test_dynamic_batching_coalesces_and_answers_each(self):
        c = httpclient.InferenceServerClient(self.server.http_url)
        before = c.get_inference_statistics("simple")["model_stats"][0]

        def client_thread(t):  # 16 clients, each with its own connection, 4 requests each
            cl = httpclient.InferenceServerClient(self.server.http_url)
            for k in range(4):
                i = t * 4 + k
                ins, a, b = simple_inputs(httpclient, batch=1 + i % 3, seed=i)
                r = cl.infer("simple", ins)
                np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
                np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)

        with cf.ThreadPoolExecutor(16) as pool:
            for f in [pool.submit(client_thread, t) for t in range(16)]:
                f.result()
        after = c.get_inference_statistics("simple")["model_stats"][0]
        rows = int(after["inference_count"]) - int(before["inference_count"])
        execs = int(after["execution_count"]) - int(before["execution_count"])
        self.assertEqual(rows, sum(1 + i % 3 for i in range(64)))
        self.assertLess(execs, 64, "64 concurrent requests should have been coalesced into fewer batches")
        m = metrics(self.server.metrics_port)
        total = sum(metric_value(m, "inferloop_batches_total", model="simple", version="1", reason=r) or 0
                    for r in ("full", "preferred", "delay"))
        self.assertGreaterEqual(total, execs)
        self.assertIsNotNone(metric_value(m, "inferloop_batch_size_count", model="simple", version="1"))

    def test_priority_overtakes_and_timeouts(self):
        port = self.server.http_port
        blocker_rounds = rounds_for(3.0, self.server)
        # Each queued request computes for ~0.25 s, so completions are far apart compared with
        # how late a loaded machine may schedule the client threads that record them.
        item_rounds = max(1000, blocker_rounds // 12)
        order, lock = [], threading.Lock()

        def send(tag, body):
            st, headers, resp = post_json(port, "/v2/models/slow/infer", body, timeout=120)
            with lock:
                order.append((tag, st, headers, resp))

        with cf.ThreadPoolExecutor(16) as pool:
            futs = [pool.submit(send, "blocker", slow_request(blocker_rounds))]
            wait_blocker_running(self.server)  # everything below queues behind it
            for i in range(4):  # one at a time, so they queue in this order
                futs.append(pool.submit(send, f"low{i}", slow_request(item_rounds, priority=2)))
                self.wait_queue_depth(i + 1)
            futs.append(pool.submit(send, "expires", slow_request(item_rounds, priority=2, timeout_us=1000000)))
            self.wait_queue_depth(5)
            futs.append(pool.submit(send, "high", slow_request(item_rounds, priority=1)))
            for f in futs:
                f.result()
        by_tag = {t: (st, h, r) for t, st, h, r in order}
        for tag, (st, _, r) in by_tag.items():
            if tag != "expires":
                self.assertEqual(st, 200, (tag, r))
        self.assertEqual(by_tag["expires"][0], 504, by_tag["expires"])
        finished = [t for t, st, _, _ in order if st == 200]
        self.assertEqual(finished[0], "blocker")
        self.assertEqual(finished[1], "high", f"completion order {finished}")
        self.assertEqual(finished[2:], ["low0", "low1", "low2", "low3"])

    def wait_queue_depth(self, n, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            d = metric_value(metrics(self.server.metrics_port), "inferloop_queue_depth", model="slow", version="1")
            if d is not None and d >= n:
                return
            time.sleep(0.01)
        self.fail(f"queue depth never reached {n}")

    def test_queue_full_is_503_with_retry_after(self):
        port = self.server.http_port
        blocker_rounds = rounds_for(2.0, self.server)
        results, lock = [], threading.Lock()

        def send(body):
            st, headers, resp = post_json(port, "/v2/models/slow/infer", body, timeout=120)
            with lock:
                results.append((st, headers, resp))

        with cf.ThreadPoolExecutor(24) as pool:
            futs = [pool.submit(send, slow_request(blocker_rounds))]
            wait_blocker_running(self.server)
            futs += [pool.submit(send, slow_request(10)) for _ in range(20)]  # max_queue_size 16
            for f in futs:
                f.result()
        codes = sorted(st for st, _, _ in results)
        self.assertIn(503, codes)
        self.assertEqual(codes.count(200), 17, codes)  # the blocker + 16 queued
        for st, headers, resp in results:
            if st == 503:
                self.assertIn("retry-after", headers)
                self.assertIn("queue", resp["error"])

    def test_client_gone_is_never_computed(self):
        port = self.server.http_port
        blocker_rounds = rounds_for(1.5, self.server)
        before = httpclient.InferenceServerClient(self.server.http_url).get_inference_statistics("slow")["model_stats"][0]
        with cf.ThreadPoolExecutor(2) as pool:
            blocker = pool.submit(post_json, port, "/v2/models/slow/infer", slow_request(blocker_rounds), 120)
            wait_blocker_running(self.server)
            body = json.dumps(slow_request(10)).encode()
            s = raw_socket_send(port, b"POST /v2/models/slow/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            self.wait_queue_depth(1)
            s.close()  # the client goes away while its request waits
            self.assertEqual(blocker.result()[0], 200)
        time.sleep(0.2)
        after = httpclient.InferenceServerClient(self.server.http_url).get_inference_statistics("slow")["model_stats"][0]
        self.assertEqual(int(after["execution_count"]) - int(before["execution_count"]), 1)
        self.assertGreaterEqual(int(after["inference_stats"]["fail"]["count"]) - int(before["inference_stats"]["fail"]["count"]), 1)

    def test_metrics_families(self):
        m = metrics(self.server.metrics_port)
        for family in ("inferloop_request_success_total", "inferloop_request_duration_seconds_bucket",
                       "inferloop_queue_duration_seconds_bucket", "inferloop_compute_duration_seconds_bucket",
                       "inferloop_batch_size_bucket", "inferloop_queue_depth", "inferloop_inflight_requests",
                       "inferloop_model_ready", "inferloop_model_memory_bytes", "process_resident_memory_bytes",
                       "process_cpu_seconds_total"):
            self.assertIn(family, m, family)
        self.assertEqual(metric_value(m, "inferloop_model_ready", model="simple", version="1"), 1.0)


class TestAdmissionAndLiveness(unittest.TestCase):
    def test_overload_is_429_and_wedged_worker_turns_liveness_off(self):
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_adm_")
        copy_models(["slow"], repo)
        try:
            with Server(INFERLOOP, repo, "--max-inflight", "3", "--liveness-stall-secs", "0.5") as srv:
                port = srv.http_port
                rounds = rounds_for(2.5, srv)
                with cf.ThreadPoolExecutor(8) as pool:
                    futs = [pool.submit(post_json, port, "/v2/models/slow/infer", slow_request(rounds), 120)]
                    wait_blocker_running(srv)
                    # One batch running for more than 0.5 s: the scheduler is "stalled".
                    end = time.time() + 20
                    while time.time() < end and request(port, "GET", "/v2/health/live")[0] != 503:
                        time.sleep(0.05)
                    self.assertFalse(futs[0].done(), "the blocking request ended before liveness was seen off")
                    self.assertEqual(request(port, "GET", "/v2/health/live")[0], 503)
                    st, _, _ = request(port, "GET", "/v2/health/ready")
                    self.assertEqual(st, 200)
                    futs += [pool.submit(post_json, port, "/v2/models/slow/infer", slow_request(10), 120) for _ in range(2)]
                    end = time.time() + 20
                    while time.time() < end and metric_value(metrics(srv.metrics_port), "inferloop_inflight_requests") != 3:
                        time.sleep(0.01)
                    self.assertFalse(futs[0].done())
                    st, headers, body = post_json(port, "/v2/models/slow/infer", slow_request(10))
                    self.assertEqual(st, 429, body)
                    self.assertIn("retry-after", headers)
                    self.assertTrue(all(f.result()[0] == 200 for f in futs))
                st, _, _ = request(port, "GET", "/v2/health/live")
                self.assertEqual(st, 200)
                self.assertEqual(srv.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)

    def test_per_model_limit_from_config(self):
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_modlim_")
        copy_models(["slow", "simple"], repo)
        with open(f"{repo}/slow/config.pbtxt", "a") as f:
            f.write('parameters { key: "max_inflight_requests" value: { string_value: "2" } }\n')
        try:
            with Server(INFERLOOP, repo) as srv:
                port = srv.http_port
                rounds = rounds_for(2.0, srv)
                with cf.ThreadPoolExecutor(4) as pool:
                    futs = [pool.submit(post_json, port, "/v2/models/slow/infer", slow_request(rounds), 120)]
                    wait_blocker_running(srv)
                    futs.append(pool.submit(post_json, port, "/v2/models/slow/infer", slow_request(10), 120))
                    end = time.time() + 20
                    while time.time() < end and metric_value(metrics(srv.metrics_port), "inferloop_inflight_requests") != 2:
                        time.sleep(0.01)
                    st, headers, body = post_json(port, "/v2/models/slow/infer", slow_request(10))
                    self.assertEqual(st, 429, body)
                    self.assertIn("model 'slow'", body["error"])
                    self.assertIn("retry-after", headers)
                    # Another model is not limited by slow's limit.
                    ok = post_json(port, "/v2/models/simple/infer", {"inputs": [
                        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
                        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]})
                    self.assertEqual(ok[0], 200, ok)
                    self.assertTrue(all(f.result()[0] == 200 for f in futs))
                self.assertEqual(srv.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)

    def test_live_but_not_ready_when_a_model_fails_to_load(self):
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_bad_")
        copy_models(["simple"], repo)
        os.makedirs(f"{repo}/broken/1")
        with open(f"{repo}/broken/1/model.onnx", "wb") as f:
            f.write(b"this is not an onnx model")
        try:
            with Server(INFERLOOP, repo, wait_ready=False) as srv:
                ev = srv.wait_event(("server_ready", "server_not_ready"))
                self.assertEqual(ev["event"], "server_not_ready")
                self.assertEqual(request(srv.http_port, "GET", "/v2/health/live")[0], 200)
                self.assertEqual(request(srv.http_port, "GET", "/v2/health/ready")[0], 503)
                st, _, idx = post_json(srv.http_port, "/v2/repository/index", {})
                broken = [m for m in idx if m["name"] == "broken"]
                self.assertEqual(broken[0]["state"], "UNAVAILABLE")
                self.assertIn("model.onnx", broken[0]["reason"])
                st, _, body = post_json(srv.http_port, "/v2/models/broken/infer", {"inputs": []})
                self.assertEqual(st, 503, body)
                self.assertTrue(httpclient.InferenceServerClient(srv.http_url).is_model_ready("simple"))
                self.assertEqual(srv.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)


class TestLifecycle(unittest.TestCase):
    def test_hot_reload_under_load_fails_nothing(self):
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_poll_")
        copy_models(["simple"], repo)
        try:
            with Server(INFERLOOP, repo, "--model-control-mode", "poll", "--repository-poll-secs", "0.2") as srv:
                stop = threading.Event()
                results, lock = [], threading.Lock()

                def load():
                    c = httpclient.InferenceServerClient(srv.http_url)
                    i = 0
                    while not stop.is_set():
                        ins, a, b = simple_inputs(httpclient, seed=i)
                        i += 1
                        try:
                            r = c.infer("simple", ins)
                            ok = np.array_equal(r.as_numpy("OUTPUT0"), a + b)
                            with lock:
                                results.append(("ok" if ok else "wrong", r.get_response()["model_version"]))
                        except Exception as e:  # noqa: BLE001 - every failure is counted
                            with lock:
                                results.append(("fail", str(e)))

                threads = [threading.Thread(target=load) for _ in range(4)]
                for t in threads:
                    t.start()
                time.sleep(0.5)
                shutil.copytree(f"{repo}/simple/1", f"{repo}/simple/2.tmp")
                os.rename(f"{repo}/simple/2.tmp", f"{repo}/simple/2")  # appears whole
                srv.wait_event("model_version_unloaded", timeout=60)
                time.sleep(0.5)
                stop.set()
                for t in threads:
                    t.join()
                fails = [r for r in results if r[0] != "ok"]
                self.assertEqual(fails, [], f"{len(fails)} of {len(results)} failed")
                versions = {r[1] for r in results}
                self.assertEqual(versions, {"1", "2"})
                self.assertEqual(results[-1][1], "2")
                c = httpclient.InferenceServerClient(srv.http_url)
                self.assertEqual(c.get_model_metadata("simple")["versions"], ["2"])

                # A broken new version leaves version 2 serving, says why, and polling goes on.
                n_events = len(srv.events)
                os.makedirs(f"{repo}/simple/3")
                with open(f"{repo}/simple/3/model.onnx", "wb") as f:
                    f.write(b"broken")
                srv.wait_event("model_load_failed", timeout=60, after=n_events)
                idx = {(m["name"], m.get("version", "")): m for m in c.get_model_repository_index()}
                self.assertEqual(idx[("simple", "3")]["state"], "UNAVAILABLE")
                self.assertTrue(idx[("simple", "3")]["reason"])
                self.assertEqual(idx[("simple", "2")]["state"], "READY")
                ins, a, b = simple_inputs(httpclient)
                self.assertEqual(c.infer("simple", ins).get_response()["model_version"], "2")
                time.sleep(0.05)
                shutil.copy(f"{repo}/simple/2/model.onnx", f"{repo}/simple/3/model.onnx.tmp")
                os.rename(f"{repo}/simple/3/model.onnx.tmp", f"{repo}/simple/3/model.onnx")
                end = time.time() + 60
                while time.time() < end and c.get_model_metadata("simple")["versions"] != ["3"]:
                    time.sleep(0.05)
                self.assertEqual(c.get_model_metadata("simple")["versions"], ["3"])

                # A removed model is unloaded; an added one is loaded.
                shutil.rmtree(f"{repo}/simple")
                shutil.copytree(os.path.join(REPO, "all_types"), f"{repo}/.all_types.tmp")
                os.rename(f"{repo}/.all_types.tmp", f"{repo}/all_types")
                end = time.time() + 60
                while time.time() < end and (c.is_model_ready("simple") or not c.is_model_ready("all_types")):
                    time.sleep(0.05)
                self.assertFalse(c.is_model_ready("simple"))
                self.assertTrue(c.is_model_ready("all_types"))
                self.assertEqual({m["name"] for m in c.get_model_repository_index()}, {"all_types"})
                self.assertEqual(srv.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)

    def test_explicit_load_unload_returns_memory(self):
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_explicit_")
        copy_models(["simple", "big"], repo)
        try:
            with Server(INFERLOOP, repo, "--model-control-mode", "explicit", "--load-model", "simple") as srv:
                c = httpclient.InferenceServerClient(srv.http_url, network_timeout=300)
                idx = {m["name"]: m for m in c.get_model_repository_index()}
                self.assertEqual(idx["big"]["state"], "UNAVAILABLE")
                self.assertFalse(c.is_model_ready("big"))
                rss0 = srv.rss_bytes()
                c.load_model("big")
                self.assertTrue(c.is_model_ready("big"))
                x = np.ones((2, 1024), np.float32)
                i = httpclient.InferInput("X", x.shape, "FP32")
                i.set_data_from_numpy(x)
                self.assertEqual(c.infer("big", [i]).as_numpy("Y").shape[0], 2)
                mem = c.get_model_metadata("big")["memory_bytes"]
                self.assertGreater(mem, 64 << 20)  # the weights are 96 MiB
                m = metrics(srv.metrics_port)
                self.assertGreater(metric_value(m, "inferloop_model_memory_bytes", model="big", version="1"), 64 << 20)
                rss1 = srv.rss_bytes()
                self.assertGreater(rss1 - rss0, 64 << 20)
                c.unload_model("big")
                self.assertFalse(c.is_model_ready("big"))
                rss2 = srv.rss_bytes()
                self.assertLess(rss2, rss1 - (64 << 20), f"RSS {rss0} -> {rss1} -> {rss2}")
                idx = {m["name"]: m for m in c.get_model_repository_index()}
                self.assertEqual(idx["big"]["state"], "UNAVAILABLE")
                self.assertIsNone(metric_value(metrics(srv.metrics_port), "inferloop_model_memory_bytes", model="big"))
                with self.assertRaises(InferenceServerException):
                    c.load_model("not_in_repository")
                self.assertTrue(c.is_model_ready("simple"))
                self.assertEqual(srv.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)

    def test_sigterm_finishes_in_flight_then_exits_0(self):
        repo = tempfile.mkdtemp(prefix="inferloop_e2e_term_")
        copy_models(["slow"], repo)
        try:
            with Server(INFERLOOP, repo) as srv:
                rounds = rounds_for(1.5, srv)
                with cf.ThreadPoolExecutor(2) as pool:
                    fut = pool.submit(post_json, srv.http_port, "/v2/models/slow/infer", slow_request(rounds), 120)
                    wait_blocker_running(srv)
                    srv.proc.send_signal(15)
                    st, _, body = fut.result()
                self.assertEqual(st, 200, body)
                self.assertEqual(srv.proc.wait(60), 0)
                with self.assertRaises(OSError):
                    socket.create_connection(("127.0.0.1", srv.http_port), timeout=2).close()
        finally:
            shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
