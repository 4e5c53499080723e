"""Limits of `inferloop serve` against misbehaving clients (issue 22's loose ends).

- Slow headers (slowloris): connections that never finish their request header are closed after
  --http-header-timeout-secs, while normal requests are served; at most --http-max-header-waiting
  connections wait for a header (one more closes the longest waiting); both counted in
  inferloop_http_connections_closed_total{reason}; bad values of the flags are startup errors.
- gRPC: bytes that are no protobuf message are answered INVALID_ARGUMENT saying so.
- Error messages name the model as the request gave it, truncated, and never a server path
  (REST and gRPC; a 10 KB model name; a model whose load failed).

Usage: test_serve_limits.py --inferloop PATH/TO/inferloop [unittest args]
No timing is asserted: "closed" is waited for with generous deadlines.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, get_json, metric_value, metrics, request, run_tests, wait_for  # noqa: E402

INFERLOOP = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HALF_HEADER = b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n"
CLOSED_METRIC = "inferloop_http_connections_closed_total"


def make_repository():
    """The example `simple` model and `broken` (a model.onnx that is no ONNX file: its load fails)."""
    repo = os.path.realpath(tempfile.mkdtemp(prefix="inferloop_limits_repo_"))
    shutil.copytree(os.path.join(ROOT, "examples", "model_repository", "simple"), os.path.join(repo, "simple"))
    os.makedirs(os.path.join(repo, "broken", "1"))
    with open(os.path.join(repo, "broken", "config.pbtxt"), "w") as f:
        f.write('name: "broken"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n'
                'input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n')
    with open(os.path.join(repo, "broken", "1", "model.onnx"), "wb") as f:
        f.write(b"this is not an onnx model")
    return repo


def is_closed(sock):
    """True once the server closed `sock` (EOF or reset); False while it is open with nothing to read."""
    sock.setblocking(False)
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


def half_header_connections(port, n, send=HALF_HEADER):
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        if send:
            s.sendall(send)
        out.append(s)
    return out


class TestHeaderTimeout(unittest.TestCase):
    def test_half_headers_are_closed_and_others_served(self):
        repo = make_repository()
        self.addCleanup(shutil.rmtree, repo, True)
        with Server(INFERLOOP, repo, "--http-header-timeout-secs", "2", wait_ready=False) as server:
            port = server.http_port
            # A keep-alive connection that answered a request and then stays idle is not waiting
            # for a header: only the (default 60 s) read timeout applies to it.
            idle = socket.create_connection(("127.0.0.1", port), timeout=30)
            idle.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(b"200 OK", idle.recv(4096))
            # One that sends part of its next header is.
            keepalive = socket.create_connection(("127.0.0.1", port), timeout=30)
            keepalive.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(b"200 OK", keepalive.recv(4096))
            keepalive.sendall(HALF_HEADER)
            start = time.time()
            slow = half_header_connections(port, 50) + half_header_connections(port, 10, send=b"")
            trickle = half_header_connections(port, 5)
            # Served meanwhile, on new connections.
            for _ in range(5):
                status, _, _ = request(port, "GET", "/v2/health/live")
                self.assertEqual(status, 200)
            everyone = slow + trickle + [keepalive]

            def all_closed():
                for s in trickle:  # a byte now and then does not extend the deadline
                    try:
                        s.setblocking(True)
                        s.send(b"X")
                    except OSError:
                        pass
                return all(is_closed(s) for s in everyone)

            wait_for("the server closes every connection with an unfinished header", all_closed, timeout=30)
            elapsed = time.time() - start
            self.assertFalse(is_closed(idle), "an idle keep-alive connection was closed by the header timeout")
            idle.setblocking(True)
            idle.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(b"200 OK", idle.recv(4096))
            closed = metric_value(metrics(server.metrics_port), CLOSED_METRIC, reason="header_timeout")
            self.assertEqual(closed, len(everyone))
            print(f"\n{len(everyone)} half-header connections closed {elapsed:.1f} s after they were opened "
                  f"(header timeout 2 s)")
            for s in everyone + [idle]:
                s.close()

    def test_waiting_connections_are_capped(self):
        repo = make_repository()
        self.addCleanup(shutil.rmtree, repo, True)
        with Server(INFERLOOP, repo, "--http-header-timeout-secs", "60", "--http-max-header-waiting", "10",
                    wait_ready=False) as server:
            port = server.http_port
            socks = half_header_connections(port, 30)
            # The 20 that waited longest are closed, the 10 newest stay.
            wait_for("the 20 oldest waiting connections are closed", lambda: all(is_closed(s) for s in socks[:20]))
            self.assertEqual([is_closed(s) for s in socks[20:]], [False] * 10)
            text = metrics(server.metrics_port)  # the metrics port has its own cap
            self.assertEqual(metric_value(text, CLOSED_METRIC, reason="header_waiting_limit"), 20)
            self.assertEqual(metric_value(text, CLOSED_METRIC, reason="header_timeout"), 0)
            # A new client gets in (and the longest waiting one goes).
            status, _, _ = request(port, "GET", "/v2/health/live")
            self.assertEqual(status, 200)
            wait_for("the oldest waiting connection is closed", lambda: is_closed(socks[20]))
            self.assertEqual([is_closed(s) for s in socks[21:]], [False] * 9)
            text = metrics(server.metrics_port)
            self.assertEqual(metric_value(text, CLOSED_METRIC, reason="header_waiting_limit"), 21)
            for s in socks:
                s.close()

    def test_bad_flag_values_are_startup_errors(self):
        repo = make_repository()
        self.addCleanup(shutil.rmtree, repo, True)
        for flag, value in (("--http-header-timeout-secs", "0"), ("--http-header-timeout-secs", "soon"),
                            ("--http-max-header-waiting", "0")):
            with self.subTest(flag=flag, value=value):
                p = subprocess.run([INFERLOOP, "serve", "--model-repository", repo, "--http-port", "0",
                                    "--grpc-port", "-1", "--metrics-port", "-1", flag, value],
                                   capture_output=True, text=True, timeout=60)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(flag, p.stderr)


class TestGrpcGarbage(unittest.TestCase):
    def test_unparsable_model_infer_is_invalid_argument(self):
        import grpc
        repo = make_repository()
        self.addCleanup(shutil.rmtree, repo, True)
        with Server(INFERLOOP, repo, wait_ready=False) as server:
            with grpc.insecure_channel(server.grpc_url) as channel:
                call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                           request_serializer=None, response_deserializer=None)
                for garbage in (b"\xff\xff\xff\xff\xff garbage", b"\x0a\xff\xff\xff\x0f"):
                    with self.subTest(garbage=garbage):
                        with self.assertRaises(grpc.RpcError) as caught:
                            call(garbage, timeout=30)
                        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                        self.assertIn("could not be parsed", caught.exception.details())
                # The same method still answers a well-formed request (an empty message: no model).
                with self.assertRaises(grpc.RpcError) as caught:
                    call(b"", timeout=30)
                self.assertNotEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    def test_unparsable_stream_message_is_answered_and_the_stream_goes_on(self):
        import grpc
        import numpy as np
        from tritonclient.grpc import service_pb2
        repo = make_repository()
        self.addCleanup(shutil.rmtree, repo, True)
        good = service_pb2.ModelInferRequest(model_name="simple", id="good")
        for name in ("INPUT0", "INPUT1"):
            t = good.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            t.contents.int_contents.extend(range(16))
        with Server(INFERLOOP, repo, wait_ready=False) as server:
            server.wait_event(("server_ready", "server_not_ready"), 120)
            with grpc.insecure_channel(server.grpc_url) as channel:
                call = channel.stream_stream("/inference.GRPCInferenceService/ModelStreamInfer",
                                             request_serializer=None, response_deserializer=None)
                answers = [service_pb2.ModelStreamInferResponse.FromString(b) for b in
                           call(iter([b"\xff\xff\xff\xff\xff garbage", good.SerializeToString()]), timeout=60)]
        self.assertEqual(len(answers), 2, answers)
        bad = [a for a in answers if a.error_message]
        ok = [a for a in answers if not a.error_message]
        self.assertEqual(len(bad), 1, answers)
        self.assertIn("could not be parsed", bad[0].error_message)
        self.assertIn("inference.ModelInferRequest", bad[0].error_message)
        self.assertEqual(len(ok), 1, answers)
        self.assertEqual(ok[0].infer_response.id, "good")
        out = {o.name: i for i, o in enumerate(ok[0].infer_response.outputs)}
        raw = ok[0].infer_response.raw_output_contents[out["OUTPUT0"]]
        self.assertEqual(np.frombuffer(raw, dtype=np.int32).tolist(), [2 * i for i in range(16)])

    def test_unparsable_messages_to_every_unary_method(self):
        import grpc
        repo = make_repository()
        self.addCleanup(shutil.rmtree, repo, True)
        with Server(INFERLOOP, repo, wait_ready=False) as server:
            with grpc.insecure_channel(server.grpc_url) as channel:
                for method in ("ServerLive", "ServerReady", "ServerMetadata", "ModelReady", "ModelMetadata",
                               "ModelConfig", "ModelStatistics", "RepositoryIndex", "RepositoryModelLoad",
                               "RepositoryModelUnload"):
                    with self.subTest(method=method):
                        call = channel.unary_unary(f"/inference.GRPCInferenceService/{method}")
                        with self.assertRaises(grpc.RpcError) as caught:
                            call(b"\xff\xff\xff\xff\xff garbage", timeout=30)
                        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                        self.assertIn(f"inference.{method}Request", caught.exception.details())
                # Well-formed (empty) messages are answered as before.
                self.assertEqual(channel.unary_unary("/inference.GRPCInferenceService/ServerLive")(b"", timeout=30),
                                 b"\x08\x01")  # live: true


class TestErrorMessages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = make_repository()
        cls.server = Server(INFERLOOP, cls.repo, wait_ready=False)
        cls.server.wait_event(("server_ready", "server_not_ready"), 120)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        shutil.rmtree(cls.repo, ignore_errors=True)

    def check_message(self, message, name_start):
        self.assertLess(len(message), 600, message)
        self.assertIn(name_start, message)
        self.assertNotIn(self.repo, message)
        self.assertNotIn(os.path.dirname(self.repo) + "/", message)

    def test_long_model_name_rest(self):
        name = "m" + "x" * 10239
        for method, path, body in (("GET", f"/v2/models/{name}", None), ("GET", f"/v2/models/{name}/ready", None),
                                   ("POST", f"/v2/models/{name}/infer", b'{"inputs": []}')):
            with self.subTest(method=method, path=path[-6:]):
                status, _, raw = request(self.server.http_port, method, path, body=body)
                self.assertEqual(status, 404, raw[:300])
                self.check_message(json.loads(raw)["error"], name[:64])

    def test_long_model_name_grpc(self):
        import tritonclient.grpc as grpcclient
        from tritonclient.utils import InferenceServerException
        name = "m" + "x" * 10239
        client = grpcclient.InferenceServerClient(self.server.grpc_url)
        inp = grpcclient.InferInput("INPUT0", [1, 16], "INT32")
        inp.set_data_from_numpy(__import__("numpy").zeros((1, 16), dtype="int32"))
        for what, call in (("metadata", lambda: client.get_model_metadata(name)),
                           ("infer", lambda: client.infer(name, [inp]))):
            with self.subTest(what=what):
                with self.assertRaises(InferenceServerException) as caught:
                    call()
                self.check_message(caught.exception.message(), name[:64])

    def test_failed_model_names_no_path(self):
        status, _, raw = request(self.server.http_port, "POST", "/v2/models/broken/infer", body=b'{"inputs": []}')
        self.assertNotEqual(status, 200)
        message = json.loads(raw)["error"]
        self.check_message(message, "broken")
        status, _, raw = request(self.server.http_port, "POST", "/v2/repository/index", body=b"{}")
        self.assertEqual(status, 200)
        reasons = [m.get("reason", "") for m in json.loads(raw) if m["name"] == "broken"]
        self.assertTrue(reasons and reasons[0], raw)
        for reason in reasons:
            self.assertNotIn(self.repo, reason)
        print(f"\nbroken model: {message!r}; index reason {reasons[0]!r}")


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    run_tests(set_inferloop)
