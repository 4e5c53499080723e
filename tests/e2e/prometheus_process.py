"""A real Prometheus (Debian's `prometheus` binary, installed by scripts/install_deps.sh) started
by a test on loopback with a config it writes, in a temporary folder removed on close.

    with PrometheusProcess(config_text) as prom:      # config_text: prometheus.yml contents
        prom.wait_until(lambda: prom.query('count_over_time(up[30s])'), "scraped", 90)
        result = prom.query('sum(x) by (pod)')        # the "result" list of /api/v1/query

`config_text` may hold `{PROMETHEUS_PORT}`, replaced by the port it listens on. A query
Prometheus rejects raises AssertionError with its error. Binary missing: unittest.SkipTest.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from serve_harness import free_port, request


class PrometheusProcess:
    def __init__(self, config_text):
        binary = shutil.which("prometheus")
        if not binary:
            raise unittest.SkipTest("no prometheus binary on PATH (Debian: apt-get install prometheus; "
                                    "scripts/install_deps.sh installs it)")
        self.tmp = tempfile.mkdtemp(prefix="inferloop_prometheus_")
        self.port = free_port()
        config = os.path.join(self.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write(config_text.replace("{PROMETHEUS_PORT}", str(self.port)))
        self.log = open(os.path.join(self.tmp, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={os.path.join(self.tmp, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log_tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-4000:]

    def api(self, path, params, check=True):
        """GET /api/v1/<path>: its "data", or None when Prometheus is not answering yet (check=False)."""
        try:
            status, _, body = request(self.port, "GET", f"/api/v1/{path}?" + urllib.parse.urlencode(params))
        except OSError:
            if check:
                raise
            return None
        reply = json.loads(body) if body else {}
        if reply.get("status") != "success":
            if check:
                raise AssertionError(f"{path} {params}: HTTP {status}: {reply.get('error', body[:300])}")
            return None
        return reply.get("data")

    def query(self, expr, check=True):
        data = self.api("query", {"query": expr}, check)
        return None if data is None else data.get("result", [])

    def series(self, match):
        return self.api("series", {"match[]": match})

    def wait_until(self, probe, what, timeout_s):
        """Polls probe() until it returns something true; raises RuntimeError naming `what` after
        timeout_s or when Prometheus exits."""
        deadline = time.time() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log_tail()}")
            got = probe()
            if got:
                return got
            if time.time() > deadline:
                raise RuntimeError(f"prometheus: not {what} after {timeout_s} s\n{self.log_tail()}")
            time.sleep(0.5)
