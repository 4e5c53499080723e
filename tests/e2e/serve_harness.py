"""Starts and stops `inferloop serve` for the end-to-end tests, and small raw-HTTP helpers.

The server is started with every port 0 (free ports); its "server_listening" log line says which
ports it got. Its stderr (one JSON line per lifecycle event) is kept for the tests to read.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest


class Server:
    def __init__(self, inferloop, repository, *extra, wait_ready=True, timeout=120, prefix=()):
        """prefix: a command line the server's is appended to (a wrapper that execs it)."""
        defaults = {"--http-port": "0", "--grpc-port": "0", "--metrics-port": "0", "--threads": "1"}
        self.cmd = list(prefix) + [inferloop, "serve", "--model-repository", repository]
        for flag, value in defaults.items():
            if flag not in extra:
                self.cmd += [flag, value]
        self.cmd += list(extra)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        listening = self.wait_event("server_listening", timeout)
        self.http_port = int(listening["http_port"])
        self.grpc_port = int(listening["grpc_port"]) if listening["grpc_port"] != "off" else None
        self.metrics_port = int(listening["metrics_port"])
        self.http_url = f"127.0.0.1:{self.http_port}"
        self.grpc_url = f"127.0.0.1:{self.grpc_port}"
        if wait_ready:
            ev = self.wait_event(("server_ready", "server_not_ready"), timeout)
            if ev["event"] != "server_ready":
                raise RuntimeError(f"server not ready: {ev}\n{self.log_text()}")

    def _read(self):
        for line in self.proc.stderr:
            line = line.strip()
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"event": "raw", "line": line}
            with self.lock:
                self.events.append(ev)

    def log_text(self):
        with self.lock:
            return "\n".join(json.dumps(e) for e in self.events)

    def find_events(self, name):
        with self.lock:
            return [e for e in self.events if e.get("event") == name]

    def wait_event(self, names, timeout=60, after=0):
        names = (names,) if isinstance(names, str) else names
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                for e in self.events[after:]:
                    if e.get("event") in names:
                        return e
            if self.proc.poll() is not None and not self.reader.is_alive():
                raise RuntimeError(f"server exited ({self.proc.returncode}) before {names}:\n{self.log_text()}")
            time.sleep(0.02)
        raise TimeoutError(f"no {names} within {timeout}s:\n{self.log_text()}")

    def rss_bytes(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def terminate(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)
        self.proc.stderr.close()


def request(port, method, path, body=None, headers=None, timeout=60):
    """One HTTP request on a new connection: (status, headers dict (lower-case names), body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def get_json(port, path):
    status, _, body = request(port, "GET", path)
    return status, (json.loads(body) if body else None)


def post_json(port, path, obj, timeout=60):
    status, headers, body = request(port, "POST", path, json.dumps(obj).encode(), {"Content-Type": "application/json"},
                                    timeout=timeout)
    return status, headers, (json.loads(body) if body else None)


def metrics(port):
    status, _, body = request(port, "GET", "/metrics")
    assert status == 200, status
    return body.decode()


def metric_values(text, name, **labels):
    """The values of every sample `name{labels...}` (labels matched as a subset), in order."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        got = {}
        for part in rest.rstrip("}").split(","):
            if "=" in part:
                k, v = part.split("=", 1)
                got[k] = v.strip('"')
        if all(got.get(k) == str(v) for k, v in labels.items()):
            yield float(value)


def metric_value(text, name, **labels):
    """The value of the first sample `name{labels...}` (labels matched as a subset), or None."""
    return next(metric_values(text, name, **labels), None)


def metric_sum(text, name, **labels):
    """The sum over every sample `name{labels...}` (e.g. over a model's versions); 0 when none."""
    return sum(metric_values(text, name, **labels))


def wait_for(what, predicate, timeout=30):
    """predicate()'s first truthy value, polled every 50 ms; TimeoutError naming `what` after `timeout` s."""
    end = time.time() + timeout
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"not within {timeout}s: {what}")


def slow_request(n_rounds, priority=None, timeout_us=None, request_id=None):
    body = {"inputs": [{"name": "X", "datatype": "FP32", "shape": [1, 16], "data": [0.5] * 16},
                       {"name": "N", "datatype": "INT64", "shape": [1, 1], "data": [int(n_rounds)]}]}
    params = {}
    if priority is not None:
        params["priority"] = priority
    if timeout_us is not None:
        params["timeout"] = timeout_us
    if params:
        body["parameters"] = params
    if request_id is not None:
        body["id"] = request_id
    return body


def local_serve_args(container_args):
    """A container's `serve FLAG VALUE ...` arguments (a Dockerfile's CMD, a manifest's args) for
    a Server on this machine: without --model-repository (Server passes the test's own), --host
    loopback, --http/grpc/metrics-port 0 (free ports, read back from the log); every other flag as
    given. ValueError when the arguments do not start with `serve` or a flag has no value."""
    if not container_args or container_args[0] != "serve":
        raise ValueError(f"not a serve command line: {container_args[:3]}")
    flags, out = container_args[1:], []
    if len(flags) % 2:
        raise ValueError(f"serve flags are FLAG VALUE pairs: {flags}")
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag == "--model-repository":
            continue
        if flag in ("--http-port", "--grpc-port", "--metrics-port"):
            value = "0"
        elif flag == "--host":
            value = "127.0.0.1"
        out += [flag, value]
    return out


def free_port():
    """A loopback TCP port that was free a moment ago (for programs that cannot take port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw_socket_send(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(data)
    return s


STORIES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "tests", "data", "llm", "stories260k.gguf")


class StoriesOpenAiTest(unittest.TestCase):
    """A class-wide `inferloop serve` with stories260k as model "stories" and an openai client on
    it (cls.server, cls.client). `inferloop` is set by the script (its set_inferloop); subclasses
    may set `server_args` and `client_timeout`. Skips when the model file is not present."""

    inferloop = None
    server_args = ()
    client_timeout = 60

    @classmethod
    def setUpClass(cls):
        import shutil
        import tempfile
        import openai
        if not os.path.exists(STORIES):
            raise unittest.SkipTest(f"test model not present: {STORIES} (see shared/models/README.md)")
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_stories_")
        os.makedirs(os.path.join(cls.tmp, "stories", "1"))
        shutil.copy(STORIES, os.path.join(cls.tmp, "stories", "1", "model.gguf"))
        cls.server = Server(cls.inferloop, cls.tmp, *cls.server_args)
        cls.client = openai.OpenAI(base_url=f"http://127.0.0.1:{cls.server.http_port}/v1", api_key="unused",
                                   max_retries=0, timeout=cls.client_timeout)

    @classmethod
    def tearDownClass(cls):
        import shutil
        if hasattr(cls, "server"):
            cls.server.terminate()
        if hasattr(cls, "tmp"):
            shutil.rmtree(cls.tmp, ignore_errors=True)


def run_tests(set_inferloop, skipped_is_failure=False):
    """The e2e scripts' main: parses --inferloop (passed to set_inferloop), runs the calling
    module's unittest cases (the rest of argv goes to unittest) and exits 0 when all passed, 1 on
    a failure or error, and 77 when some were skipped (ctest's SKIP_RETURN_CODE: a skipped check
    is not a pass), or 1 then if skipped_is_failure."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    set_inferloop(args.inferloop)
    result = unittest.main(module="__main__", argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    if result.failures or result.errors:
        sys.exit(1)
    if result.skipped:
        print(f"{len(result.skipped)} test(s) skipped: exit {1 if skipped_is_failure else 77}", file=sys.stderr)
        sys.exit(1 if skipped_is_failure else 77)
    sys.exit(0)
