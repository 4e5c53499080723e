"""Chaos cases against `inferloop serve` (issue 22: the black-box suite's cases, kept as tests).

- Malformed HTTP: every request of a table of broken ones (request lines, headers, lengths,
  chunked bodies, path traversal, declared bodies of gigabytes) gets a 4xx answer or a closed
  connection, never a 2xx, a 5xx or a hang; the server answers a good request after each.
- Soak: thousands of mixed requests (good infers, bad JSON, unknown models, metadata) on
  keep-alive connections from several threads: every answer has exactly the expected status and,
  for infers, the right sums; afterwards the server holds no more descriptors than before
  (within the connections' own).
- kill -9 under load: a server killed mid-load leaves nothing that stops the next one on the same
  repository from starting and answering correctly.

Usage: test_serve_chaos.py --inferloop PATH/TO/inferloop [unittest args]
No timing is asserted; "no hang" is a generous socket deadline.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, run_tests, wait_for  # noqa: E402

INFERLOOP = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEADLINE = 20  # seconds a broken request may take to be answered or closed


def make_repository():
    repo = os.path.realpath(tempfile.mkdtemp(prefix="inferloop_chaos_repo_"))
    shutil.copytree(os.path.join(ROOT, "examples", "model_repository", "simple"), os.path.join(repo, "simple"))
    return repo


def infer_body(a):
    return json.dumps({"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": a},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}]}).encode()


def good_infer(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", "/v2/models/simple/infer", infer_body(list(range(16))), {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        return r.status, body
    finally:
        c.close()


def raw_exchange(port, data, half_close=False):
    """Sends `data` on a fresh connection and reads until the server closes or DEADLINE passes.
    Returns (bytes read, closed by the server)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    got = b""
    try:
        try:
            s.sendall(data)
        except OSError:  # the server closed while we were still sending (fine)
            return got, True
        if half_close:
            s.shutdown(socket.SHUT_WR)
        end = time.time() + DEADLINE
        while time.time() < end:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                return got, True  # reset
            if not chunk:
                return got, True
            got += chunk
            if b"\r\n\r\n" in got and not half_close:
                # An answer arrived; stop unless more is coming on a connection the server closes.
                s.settimeout(2)
        return got, False
    finally:
        s.close()


def status_of(answer):
    line = answer.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
        return int(parts[1])
    return None


BIG = b"x" * 200000
MALFORMED = [
    ("no version", b"GET /v2/health/ready\r\n\r\n"),
    ("unknown version", b"GET /v2/health/ready HTTP/9.9\r\nHost: x\r\n\r\n"),
    ("NUL in method", b"G\x00T /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("header without colon", b"GET /v2/health/ready HTTP/1.1\r\nHost x\r\n\r\n"),
    ("200 KB header", b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nX-Big: " + BIG + b"\r\n\r\n"),
    ("200 KB URL", b"GET /v2/" + BIG + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("negative length", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}"),
    ("length not a number", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}"),
    ("two lengths", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\n{}"),
    ("2 GB declared body", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2147483648\r\n\r\n{"),
    ("bad chunk size", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
    ("not JSON", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n\xff\xfe{nope}}"),
    ("JSON of the wrong shape", b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n{\"inputs\": 7}"),
    ("path traversal", b"GET /v2/models/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("encoded path traversal", b"GET /v2/models/%2e%2e%2f%2e%2e%2fetc%2fpasswd/config HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("unknown method", b"BREW /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("binary garbage", bytes(range(256)) * 4 + b"\r\n\r\n"),
]


class TestChaos(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = make_repository()
        cls.server = Server(INFERLOOP, cls.repo, "--http-header-timeout-secs", "5")
        cls.port = cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.repo, ignore_errors=True)

    def assert_serving(self, after):
        st, body = good_infer(self.port)
        self.assertEqual(st, 200, f"after {after}: {body[:200]!r}")
        out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
        self.assertEqual(out["OUTPUT0"], [i + 1 for i in range(16)], after)

    def test_malformed_requests_get_4xx_or_close(self):
        for what, data in MALFORMED:
            with self.subTest(what):
                answer, closed = raw_exchange(self.port, data)
                st = status_of(answer)
                self.assertTrue(st is not None or closed or answer == b"",
                                f"{what}: neither an HTTP answer nor a close: {answer[:200]!r}")
                if st is not None:
                    self.assertTrue(400 <= st < 500, f"{what}: status {st}: {answer[:300]!r}")
                self.assertNotIn(b"root:", answer, f"{what}: a server file leaked")
                self.assert_serving(what)

    def test_incomplete_body_then_half_close_is_closed(self):
        # A body shorter than its Content-Length, then the client stops sending: closed, no hang.
        data = b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"inputs\":"
        answer, closed = raw_exchange(self.port, data, half_close=True)
        self.assertTrue(closed, f"the server kept a half-closed connection open: {answer[:200]!r}")
        st = status_of(answer)
        if st is not None:
            self.assertTrue(400 <= st < 500, answer[:300])
        self.assert_serving("a half-closed short body")

    def test_soak_of_mixed_requests(self):
        fd_dir = f"/proc/{self.server.proc.pid}/fd"
        fds_before = len(os.listdir(fd_dir))
        threads, per_thread = 8, 300
        failures = []
        counts = {"ok": 0, "400": 0, "404": 0, "meta": 0}
        lock = threading.Lock()

        def worker(t):
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                for i in range(per_thread):
                    kind = (t + i) % 4
                    if kind == 0:
                        a = [(t * 1000 + i + k) % 997 for k in range(16)]
                        c.request("POST", "/v2/models/simple/infer", infer_body(a), {"Content-Type": "application/json"})
                        r = c.getresponse()
                        body = r.read()
                        out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]} if r.status == 200 else {}
                        if r.status != 200 or out.get("OUTPUT0") != [v + 1 for v in a]:
                            raise AssertionError(f"infer: {r.status} {body[:200]!r}")
                        key = "ok"
                    elif kind == 1:
                        c.request("POST", "/v2/models/simple/infer", b"{\"inputs\": [", {"Content-Type": "application/json"})
                        r = c.getresponse()
                        body = r.read()
                        if r.status != 400:
                            raise AssertionError(f"bad JSON: {r.status} {body[:200]!r}")
                        key = "400"
                    elif kind == 2:
                        c.request("POST", "/v2/models/nothing_here/infer", infer_body([0] * 16))
                        r = c.getresponse()
                        body = r.read()
                        if r.status != 404:
                            raise AssertionError(f"unknown model: {r.status} {body[:200]!r}")
                        key = "404"
                    else:
                        c.request("GET", "/v2/models/simple")
                        r = c.getresponse()
                        body = r.read()
                        if r.status != 200 or json.loads(body)["name"] != "simple":
                            raise AssertionError(f"metadata: {r.status} {body[:200]!r}")
                        key = "meta"
                    with lock:
                        counts[key] += 1
            except Exception as e:  # noqa: BLE001 - reported below with the thread
                with lock:
                    failures.append(f"thread {t}: {e!r}")
            finally:
                c.close()

        ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(600)
        self.assertEqual(failures, [])
        self.assertEqual(sum(counts.values()), threads * per_thread, counts)
        print(f"soak: {counts}", file=sys.stderr)
        # Every connection closed by the client: the server's descriptors come back down.
        wait_for("descriptors back to the level before the soak",
                 lambda: len(os.listdir(fd_dir)) <= fds_before + 1, timeout=30)
        self.assert_serving("the soak")


class TestKill9(unittest.TestCase):
    def test_restart_after_kill_9_under_load(self):
        repo = make_repository()
        try:
            server = Server(INFERLOOP, repo)
            port = server.http_port
            stop = threading.Event()
            answered = [0]

            def load():
                while not stop.is_set():
                    try:
                        st, _ = good_infer(port)
                        if st == 200:
                            answered[0] += 1
                    except OSError:
                        pass  # the server is gone

            ts = [threading.Thread(target=load) for _ in range(4)]
            for t in ts:
                t.start()
            wait_for("answers under load", lambda: answered[0] >= 20, timeout=60)
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(30)
            stop.set()
            for t in ts:
                t.join(60)
            server.__exit__(None, None, None)
            self.assertEqual(server.proc.returncode, -signal.SIGKILL)
            with Server(INFERLOOP, repo) as again:
                st, body = good_infer(again.http_port)
                self.assertEqual(st, 200, body[:200])
                out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
                self.assertEqual(out["OUTPUT0"], [i + 1 for i in range(16)])
                self.assertEqual(again.terminate(), 0)
        finally:
            shutil.rmtree(repo, ignore_errors=True)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    run_tests(set_inferloop)
