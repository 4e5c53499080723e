"""Triton's perf_analyzer (scripts/setup_perf_analyzer.sh) against `inferloop serve`: REST (binary
tensor data, as perf_analyzer sends it), gRPC, gRPC streaming, closed and open loop, a batching
model with batch 2. Each run must finish (exit 0) with every request successful.

Usage: test_perf_analyzer.py --inferloop PATH [unittest args]
"""
import argparse
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PERF_ANALYZER = os.path.join(ROOT, ".venv", "perf_analyzer", "perf_analyzer")
INFERLOOP = None


class TestPerfAnalyzer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(PERF_ANALYZER, os.X_OK):
            raise RuntimeError(f"{PERF_ANALYZER} missing: run scripts/setup_perf_analyzer.sh")
        cls.server = Server(INFERLOOP, os.path.join(ROOT, "examples", "model_repository"))

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.terminate()
        cls.server.__exit__()
        assert rc == 0, rc

    def run_pa(self, *args):
        # A check of the protocol, not a measurement: any three windows count as stable.
        r = subprocess.run([PERF_ANALYZER, "--measurement-interval", "1000", "--max-trials", "5",
                            "--stability-percentage", "1000", *args],
                           capture_output=True, text=True, timeout=300)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out[-3000:])
        self.assertRegex(out, r"Throughput: [0-9.]+ infer/sec")
        self.assertNotRegex(out.lower(), r"failed|error")
        # The server's statistics agree that every request succeeded.
        m = re.search(r"Inference count: (\d+)", out)
        self.assertIsNotNone(m, out[-2000:])
        self.assertGreater(int(m.group(1)), 0)
        return out

    def test_http_closed_loop(self):
        self.run_pa("-m", "simple", "-u", self.server.http_url, "-i", "http", "--concurrency-range", "1:4:3")

    def test_grpc_closed_loop_and_streaming(self):
        self.run_pa("-m", "simple", "-u", self.server.grpc_url, "-i", "grpc", "--concurrency-range", "2")
        self.run_pa("-m", "simple", "-u", self.server.grpc_url, "-i", "grpc", "--streaming", "--concurrency-range", "2")

    def test_open_loop_batched_model(self):
        self.run_pa("-m", "tiny_cnn", "-u", self.server.http_url, "-i", "http", "-b", "2", "--request-rate-range", "100")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
