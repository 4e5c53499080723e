#!/usr/bin/env python3
"""End-to-end tests of `inferloop serve --api-keys FILE`: bearer API keys with permissions on the
REST port, the metrics port, gRPC (tritonclient and raw grpcio metadata) and the OpenAI SDK.

The key file holds an infer-only key, a control-only key, a metrics-only key, an all-permissions
key and a rate-limited key. The repository: `simple` (make_test_repository.py), `other` (the same
model, not loaded at start: the control key loads it) and `stories` (tests/data/llm/stories260k.gguf).

A timing check (no timing threshold: the figures are printed): many interleaved requests with a
wrong key of the right length vs a right key lacking the permission (401 vs 403), and with a wrong
key sharing all but its last character with a stored key vs one sharing nothing (401 vs 401);
each pair is compared with a Mann-Whitney U test and its p-value printed.

Usage: test_serve_auth.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import socket
import tempfile
import time
import unittest

import grpc
import numpy as np
import openai
import tritonclient.grpc as grpcclient
from scipy.stats import mannwhitneyu
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_test_repository as mtr  # noqa: E402
import serve_harness as h  # noqa: E402

INFERLOOP = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")

INFER = "infer-k3y-7f2a9c41d0e85b36"
CONTROL = "control-k3y-1b8e5d7a2c9f4036"
METRICS = "metrics-k3y-5e0c2a8d7b1f3946"
ALL = "all-k3y-9d4b7e1c3a5f80626e"
RATED = "rated-k3y-2c6a9e4b8d1f7035"
KEYS = (INFER, CONTROL, METRICS, ALL, RATED)
# A wrong key of INFER's length sharing nothing with it, and one sharing all but the last character.
WRONG = "x" * len(INFER)
NEAR = INFER[:-1] + ("0" if INFER[-1] != "0" else "1")

KEY_FILE = f"""# inferloop API keys: KEY PERMISSIONS [rate=N/s]

{INFER} infer
{CONTROL} control   # the operator
{METRICS} metrics
{ALL} infer,control,metrics
{RATED} infer rate=2/s
"""


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def make_repository(root):
    for name in ("simple", "other"):
        mtr.save(mtr.simple_model(), os.path.join(root, name, "1", "model.onnx"))
        mtr.write(os.path.join(root, name, "config.pbtxt"), mtr.SIMPLE_CONFIG.replace('name: "simple"', f'name: "{name}"'))
    os.makedirs(os.path.join(root, "stories", "1"))
    shutil.copy(STORIES, os.path.join(root, "stories", "1", "model.gguf"))


def infer_body():
    data = list(range(16))
    return json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": data},
                                  {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": data}]}).encode()


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_auth_")
        cls.repo = os.path.join(cls.tmp, "repo")
        make_repository(cls.repo)
        cls.key_file = os.path.join(cls.tmp, "keys.txt")
        with open(cls.key_file, "w") as f:
            f.write(KEY_FILE)
        cls.server = h.Server(INFERLOOP, cls.repo, "--api-keys", cls.key_file, "--model-control-mode", "explicit",
                              "--load-model", "simple", "--load-model", "stories")
        cls.grpc = grpcclient.InferenceServerClient(cls.server.grpc_url)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
            log = cls.server.log_text()
            cls.server.__exit__()
            for key in KEYS + (WRONG, NEAR):
                assert key not in log, "a key appeared in the server's stderr"
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def rest(self, method, path, key=None, body=None, port=None):
        headers = bearer(key) if key else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return h.request(port or self.server.http_port, method, path, body, headers)

    def assert_refused(self, status, headers, body, code, key=None):
        self.assertEqual(status, code, body)
        if code == 401:
            self.assertEqual(headers.get("www-authenticate"), "Bearer")
        self.assertIn("error", json.loads(body))
        if key:
            self.assertNotIn(key.encode(), body)

    def grpc_code(self, call, **kwargs):
        with self.assertRaises(InferenceServerException) as e:
            call(**kwargs)
        return str(e.exception.status())

    def test_log_says_how_many_keys(self):
        self.assertEqual(self.server.find_events("server_listening")[0]["api_keys"], "5")

    def test_health_is_open(self):
        for path in ("/v2/health/live", "/v2/health/ready"):
            self.assertEqual(self.rest("GET", path)[0], 200, path)
            self.assertEqual(self.rest("GET", path, key=WRONG)[0], 200, path)
        self.assertTrue(self.grpc.is_server_live())
        self.assertTrue(self.grpc.is_server_ready())

    def test_rest_no_key_and_wrong_key_are_401(self):
        for key in (None, WRONG, NEAR, INFER + "x"):
            for method, path, body in (("POST", "/v2/models/simple/infer", infer_body()), ("GET", "/v2/models/simple", None),
                                       ("GET", "/v2", None), ("POST", "/v2/repository/index", b"{}"),
                                       ("GET", "/metrics", None), ("GET", "/nope", None)):
                status, headers, resp = self.rest(method, path, key, body)
                self.assert_refused(status, headers, resp, 401, key)
                self.assertIn("error", json.loads(resp))
        # Not a bearer token at all.
        status, headers, body = h.request(self.server.http_port, "GET", "/v2", headers={"Authorization": f"Basic {INFER}"})
        self.assert_refused(status, headers, body, 401, INFER)

    def test_rest_permissions(self):
        # The infer key infers and reads metadata, but cannot load models nor read metrics.
        status, _, body = self.rest("POST", "/v2/models/simple/infer", INFER, infer_body())
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["outputs"][0]["data"], [2 * i for i in range(16)])
        self.assertEqual(self.rest("GET", "/v2/models/simple", INFER)[0], 200)
        self.assertEqual(self.rest("GET", "/v2/models/simple/ready", INFER)[0], 200)
        for method, path, body in (("POST", "/v2/repository/models/other/load", b""), ("POST", "/v2/repository/index", b"{}"),
                                   ("GET", "/metrics", None), ("GET", "/v2/models/stats", None)):
            self.assert_refused(*self.rest(method, path, INFER, body), 403, INFER)
        self.assert_refused(*self.rest("GET", "/metrics", INFER, port=self.server.metrics_port), 403, INFER)
        # The control key loads and unloads, but cannot infer or read metadata.
        self.assertEqual(self.rest("POST", "/v2/repository/models/other/load", CONTROL, b"")[0], 200)
        status, _, body = self.rest("POST", "/v2/repository/index", CONTROL, b"{}")
        self.assertEqual(status, 200)
        self.assertIn("other", [m["name"] for m in json.loads(body)])
        self.assert_refused(*self.rest("POST", "/v2/models/other/infer", CONTROL, infer_body()), 403, CONTROL)
        self.assert_refused(*self.rest("GET", "/v2/models/other", CONTROL), 403, CONTROL)
        self.assert_refused(*self.rest("GET", "/metrics", CONTROL), 403, CONTROL)
        self.assertEqual(self.rest("POST", "/v2/models/other/infer", ALL, infer_body())[0], 200)
        self.assertEqual(self.rest("POST", "/v2/repository/models/other/unload", CONTROL, b"")[0], 200)
        # The metrics key reads /metrics on both ports and nothing else.
        for port in (self.server.http_port, self.server.metrics_port):
            status, _, body = self.rest("GET", "/metrics", METRICS, port=port)
            self.assertEqual(status, 200)
            self.assertIn(b"inferloop_auth_refused_total", body)
        self.assert_refused(*self.rest("GET", "/metrics", port=self.server.metrics_port), 401)
        self.assert_refused(*self.rest("POST", "/v2/models/simple/infer", METRICS, infer_body()), 403, METRICS)

    def test_refusals_are_counted(self):
        def counts():
            text = self.rest("GET", "/metrics", METRICS)[2].decode()
            return {r: h.metric_value(text, "inferloop_auth_refused_total", reason=r)
                    for r in ("missing", "invalid", "forbidden", "rate_limited")}
        before = counts()
        self.rest("GET", "/v2")
        self.rest("GET", "/v2", WRONG)
        self.rest("GET", "/v2", NEAR)
        self.rest("GET", "/metrics", INFER)
        self.grpc_code(self.grpc.get_server_metadata)
        after = counts()
        self.assertEqual(after["missing"] - before["missing"], 2)
        self.assertEqual(after["invalid"] - before["invalid"], 2)
        self.assertEqual(after["forbidden"] - before["forbidden"], 1)

    def test_grpc(self):
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        for i in inputs:
            i.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
        g = self.grpc
        for key in (None, WRONG):
            headers = {"authorization": f"Bearer {key}"} if key else None
            self.assertIn("UNAUTHENTICATED", self.grpc_code(g.infer, model_name="simple", inputs=inputs, headers=headers))
            self.assertIn("UNAUTHENTICATED", self.grpc_code(g.get_model_metadata, model_name="simple", headers=headers))
            self.assertIn("UNAUTHENTICATED", self.grpc_code(g.load_model, model_name="other", headers=headers))
        infer_h, control_h = {"authorization": f"Bearer {INFER}"}, {"authorization": f"Bearer {CONTROL}"}
        out = g.infer("simple", inputs, headers=infer_h).as_numpy("OUTPUT0")
        self.assertEqual(out.tolist(), [[2 * i for i in range(16)]])
        self.assertEqual(g.get_model_metadata("simple", headers=infer_h).name, "simple")
        self.assertIn("PERMISSION_DENIED", self.grpc_code(g.load_model, model_name="other", headers=infer_h))
        self.assertIn("PERMISSION_DENIED", self.grpc_code(g.get_inference_statistics, model_name="simple", headers=infer_h))
        self.assertIn("PERMISSION_DENIED", self.grpc_code(g.infer, model_name="simple", inputs=inputs, headers=control_h))
        self.assertEqual(len(g.get_model_repository_index(headers=control_h).models), 3)
        self.assertTrue(g.is_server_live(headers={"authorization": f"Bearer {WRONG}"}))

    def test_grpc_stream_and_raw_metadata(self):
        request = service_pb2.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            t = request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            t.contents.int_contents.extend(range(16))
        with grpc.insecure_channel(self.server.grpc_url) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            for metadata, code in ((None, grpc.StatusCode.UNAUTHENTICATED),
                                   ((("authorization", f"Bearer {WRONG}"),), grpc.StatusCode.UNAUTHENTICATED),
                                   ((("authorization", f"Bearer {CONTROL}"),), grpc.StatusCode.PERMISSION_DENIED)):
                with self.assertRaises(grpc.RpcError) as e:
                    list(stub.ModelStreamInfer(iter([request]), metadata=metadata, timeout=30))
                self.assertEqual(e.exception.code(), code)
                with self.assertRaises(grpc.RpcError) as e:
                    stub.ModelInfer(request, metadata=metadata, timeout=30)
                self.assertEqual(e.exception.code(), code)
                self.assertNotIn(INFER, e.exception.details() or "")
            answers = list(stub.ModelStreamInfer(iter([request]), metadata=(("authorization", f"Bearer {INFER}"),), timeout=30))
            self.assertEqual(len(answers), 1)
            self.assertEqual(answers[0].error_message, "")
            self.assertTrue(stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=30).live)

    def test_openai_sdk(self):
        base = f"http://127.0.0.1:{self.server.http_port}/v1"
        client = openai.OpenAI(base_url=base, api_key=INFER, max_retries=0, timeout=60)
        self.assertIn("stories", [m.id for m in client.models.list().data])
        done = client.completions.create(model="stories", prompt="Once upon a time", max_tokens=4, temperature=0)
        self.assertEqual(done.usage.completion_tokens, 4)
        with self.assertRaises(openai.AuthenticationError) as e:
            openai.OpenAI(base_url=base, api_key=WRONG, max_retries=0).models.list()
        self.assertEqual(e.exception.status_code, 401)
        self.assertEqual(e.exception.code, "invalid_api_key")
        self.assertEqual(e.exception.type, "invalid_request_error")
        self.assertNotIn(WRONG, str(e.exception))
        with self.assertRaises(openai.PermissionDeniedError):
            openai.OpenAI(base_url=base, api_key=CONTROL, max_retries=0).models.list()

    def test_rate_limit(self):
        # rate=2/s: a burst of 2, then 429 with Retry-After (REST) / RESOURCE_EXHAUSTED (gRPC).
        statuses, retry_after = [], None
        for _ in range(4):
            status, headers, _ = self.rest("GET", "/v2/models/simple", RATED)
            statuses.append(status)
            retry_after = headers.get("retry-after", retry_after)
        self.assertEqual(statuses[:2], [200, 200])
        self.assertIn(429, statuses[2:])
        self.assertEqual(retry_after, "1")
        code = self.grpc_code(self.grpc.get_model_metadata, model_name="simple",
                              headers={"authorization": f"Bearer {RATED}"})
        self.assertIn("RESOURCE_EXHAUSTED", code)
        # Other keys are not limited by it.
        self.assertEqual(self.rest("GET", "/v2/models/simple", INFER)[0], 200)
        time.sleep(1.1)
        self.assertEqual(self.rest("GET", "/v2/models/simple", RATED)[0], 200)

    def test_timing_does_not_tell_keys_apart(self):
        # Raw socket, one keep-alive connection: Python's header parsing would add noise of its own.
        sock = socket.create_connection(("127.0.0.1", self.server.http_port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def timed(key):
            data = f"GET /v2/models/stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n".encode()
            t0 = time.perf_counter_ns()
            sock.sendall(data)
            buf = b""
            while True:
                buf += sock.recv(65536)
                end = buf.find(b"\r\n\r\n")
                if end >= 0:
                    head = buf[:end].decode()
                    length = int(next(line.split(":")[1] for line in head.split("\r\n")
                                      if line.lower().startswith("content-length:")))
                    if len(buf) >= end + 4 + length:
                        return time.perf_counter_ns() - t0, int(head.split()[1])

        kinds = {"wrong": WRONG, "forbidden": INFER, "near": NEAR, "forbidden_2nd": CONTROL}
        expected = {"wrong": 401, "forbidden": 403, "near": 401, "forbidden_2nd": 403}
        times = {k: [] for k in kinds}
        order = list(kinds) * 1500
        random.Random(7).shuffle(order)
        for kind in order[:300]:  # warm-up, not recorded
            timed(kinds[kind])
        for kind in order:
            ns, status = timed(kinds[kind])
            self.assertEqual(status, expected[kind])
            times[kind].append(ns)
        sock.close()
        # near vs wrong: the same answer, a wrong key sharing all but one character with a stored
        # key vs one sharing nothing (what a byte-by-byte comparison would leak). forbidden vs
        # wrong: a stored key vs an unknown one (their answers differ by a few bytes anyway).
        # forbidden_2nd vs forbidden: the same answer to the 2nd and the 1st stored key.
        for a, b in (("near", "wrong"), ("forbidden", "wrong"), ("forbidden_2nd", "forbidden")):
            p = mannwhitneyu(times[a], times[b], alternative="two-sided").pvalue
            print(f"timing {a} ({expected[a]}) vs {b} ({expected[b]}): median {np.median(times[a]) / 1e3:.2f} us vs "
                  f"{np.median(times[b]) / 1e3:.2f} us, n={len(times[a])} each, Mann-Whitney U p={p:.3g}",
                  file=sys.stderr)


class KeyReloadTest(unittest.TestCase):
    """SIGHUP reads the key file again: a key removed from it is refused at once, a new one
    accepted; a bad file keeps the old keys; connections in between are not dropped."""

    def test_sighup_reloads_the_key_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "repo")
            for_root = os.path.join(repo, "simple")
            mtr.save(mtr.simple_model(), os.path.join(for_root, "1", "model.onnx"))
            mtr.write(os.path.join(for_root, "config.pbtxt"), mtr.SIMPLE_CONFIG)
            path = os.path.join(tmp, "keys.txt")
            with open(path, "w") as f:
                f.write(f"{INFER} infer\n")
            with h.Server(INFERLOOP, repo, "--api-keys", path) as server:
                def status(key):
                    return h.request(server.http_port, "POST", "/v2/models/simple/infer", infer_body(),
                                     {**bearer(key), "Content-Type": "application/json"})[0]

                def reload():
                    before = len(server.events)
                    server.proc.send_signal(signal.SIGHUP)
                    return server.wait_event(("api_keys_reloaded", "api_keys_reload_failed"), after=before)

                self.assertEqual(status(INFER), 200)
                self.assertEqual(status(CONTROL), 401)
                with open(path + ".new", "w") as f:
                    f.write(f"{CONTROL} infer\n{METRICS} metrics\n")
                os.replace(path + ".new", path)
                e = reload()
                self.assertEqual(e["event"], "api_keys_reloaded")
                self.assertEqual(e["keys"], "2")
                self.assertEqual(status(INFER), 401)
                self.assertEqual(status(CONTROL), 200)
                self.assertEqual(status(METRICS), 403)
                # A bad file: refused with the line, without the key; the last good keys serve on.
                with open(path, "w") as f:
                    f.write(f"{INFER} infer,admin\n")
                e = reload()
                self.assertEqual(e["event"], "api_keys_reload_failed")
                self.assertIn("line 1: unknown permission 'admin'", e["reason"])
                self.assertEqual(status(CONTROL), 200)
                self.assertEqual(status(INFER), 401)
                self.assertIsNone(server.proc.poll(), "SIGHUP must not stop the server")
                for key in KEYS:
                    self.assertNotIn(key, server.log_text())


class KeyFileErrorTest(unittest.TestCase):
    def serve(self, text):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "keys.txt")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([INFERLOOP, "serve", "--model-repository", tmp, "--api-keys", path, "--http-port", "0",
                                "--grpc-port", "0", "--metrics-port", "0"], capture_output=True, text=True, timeout=60)
            return p.returncode, p.stderr.replace(path, "KEYFILE")

    def test_bad_lines_stop_the_server_without_printing_the_key(self):
        for text, message in ((f"# ok\n{ALL} infer\n{INFER} infer,admin\n", "KEYFILE line 3: unknown permission 'admin'"),
                              (f"{INFER} infer\n\n{INFER} control\n", "KEYFILE line 3: the key of line 1 again"),
                              (f"{INFER}\n", "KEYFILE line 1: expected 'KEY PERMISSIONS [rate=N/s]'"),
                              (f"{INFER} infer rate=fast\n", "KEYFILE line 1: expected rate=N/s"),
                              ("short infer\n", "KEYFILE line 1: the key must have 16 to 256 characters")):
            code, err = self.serve(text)
            self.assertEqual(code, 2, err)
            self.assertIn("error: --api-keys: " + message, err)
            for key in KEYS:
                self.assertNotIn(key, err)
            self.assertNotIn("short", err)

    def test_missing_file(self):
        code, err = self.serve("")  # empty: no key
        self.assertEqual(code, 2)
        self.assertIn("KEYFILE: no key", err)
        p = subprocess.run([INFERLOOP, "serve", "--model-repository", "/tmp", "--api-keys", "/nonexistent/keys.txt"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read the API key file /nonexistent/keys.txt", p.stderr)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    h.run_tests(set_inferloop, skipped_is_failure=True)
