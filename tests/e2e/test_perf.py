"""End-to-end tests of `inferloop perf` against `inferloop serve` on the example repository
(examples/model_repository: simple, tiny_cnn), over REST JSON, REST binary and gRPC, closed and
open loop, with the CSV/JSON outputs read back, the error paths and Ctrl-C.

Usage: test_perf.py --inferloop PATH/TO/inferloop [unittest args]
"""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, free_port, get_json  # noqa: E402

INFERLOOP = None
SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
REPO = os.path.join(SOURCE_DIR, "examples", "model_repository")
# Short windows: these tests check behaviour, not numbers.
FAST = ["--duration", "0.2", "--max-windows", "3"]
CSV_COLUMNS = ["batch_size", "throughput_infer_per_s", "throughput_req_per_s", "completed", "errors",
               "latency_avg_us", "latency_p50_us", "latency_p90_us", "latency_p95_us", "latency_p99_us",
               "latency_p999_us", "latency_max_us", "server_queue_us", "server_compute_us", "windows", "stable",
               "errors_by_kind"]


def perf(*args, timeout=120):
    return subprocess.run([INFERLOOP, "perf", *args], capture_output=True, text=True, timeout=timeout)


class PerfAgainstServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(INFERLOOP, REPO)
        cls.rest = f"http://127.0.0.1:{cls.server.http_port}"
        cls.grpc = f"grpc://127.0.0.1:{cls.server.grpc_port}"
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.__exit__()
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def run_ok(self, *args):
        r = perf(*args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def read_outputs(self, csv_path, json_path, first_column, n_points):
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        with open(csv_path) as f:
            header = f.readline().strip().split(",")
        self.assertEqual(header, [first_column] + CSV_COLUMNS)
        self.assertEqual(len(rows), n_points)
        with open(json_path) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["points"]), n_points)
        for row, point in zip(rows, doc["points"]):
            self.assertGreater(int(row["completed"]), 0, row)
            self.assertEqual(int(row["errors"]), 0, row)
            self.assertGreater(float(row["throughput_infer_per_s"]), 0)
            self.assertLessEqual(float(row["latency_p50_us"]), float(row["latency_p99_us"]))
            self.assertLessEqual(float(row["latency_p99_us"]), float(row["latency_p999_us"]))
            self.assertGreaterEqual(int(row["windows"]), 3)
            self.assertIn(row["stable"], ("yes", "no"))
            self.assertEqual(point["completed"], int(row["completed"]))
            # The server-side split came from the statistics extension.
            self.assertIsNotNone(point["server_compute_us"])
            self.assertGreater(point["server_compute_us"], 0)
        return rows, doc

    def test_rest_json_closed_loop(self):
        c, j = self.path("rj.csv"), self.path("rj.json")
        r = self.run_ok("--url", self.rest, "--model", "simple", "--concurrency-range", "1:3:2", *FAST,
                        "--csv", c, "--json", j)
        rows, doc = self.read_outputs(c, j, "concurrency", 2)
        self.assertEqual([row["concurrency"] for row in rows], ["1", "3"])
        self.assertEqual(doc["protocol"], "rest-json")
        self.assertIn("p99.9 ms", r.stdout)

    def test_rest_binary_batched(self):
        c, j = self.path("rb.csv"), self.path("rb.json")
        self.run_ok("--url", self.rest, "--model", "simple", "--binary", "--batch-size", "4", *FAST, "--csv", c,
                    "--json", j)
        rows, doc = self.read_outputs(c, j, "concurrency", 1)
        self.assertEqual(doc["protocol"], "rest-binary")
        self.assertEqual(rows[0]["batch_size"], "4")
        self.assertAlmostEqual(float(rows[0]["throughput_infer_per_s"]), 4 * float(rows[0]["throughput_req_per_s"]),
                               delta=0.1)

    def test_grpc_closed_loop(self):
        c, j = self.path("g.csv"), self.path("g.json")
        self.run_ok("--url", self.grpc, "--model", "simple", "--concurrency-range", "2", *FAST, "--csv", c,
                    "--json", j)
        _, doc = self.read_outputs(c, j, "concurrency", 1)
        self.assertEqual(doc["protocol"], "grpc")

    def test_open_loop_rest_and_grpc(self):
        for url in (self.rest, self.grpc):
            c, j = self.path("o.csv"), self.path("o.json")
            self.run_ok("--url", url, "--model", "simple", "--request-rate-range", "100:200:100", *FAST, "--csv", c,
                        "--json", j)
            rows, doc = self.read_outputs(c, j, "request_rate", 2)
            self.assertEqual([float(r["request_rate"]) for r in rows], [100.0, 200.0])
            self.assertEqual(doc["points"][0]["mode"], "request_rate")

    def test_input_data_dir(self):
        d = self.path("npy")
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "image.npy"), np.zeros((1, 28, 28), np.float32))  # one sample: tiled to the batch
        self.run_ok("--url", self.rest, "--model", "tiny_cnn", "--input-data", d, "--batch-size", "2", *FAST)
        np.save(os.path.join(d, "image.npy"), np.zeros((5, 5), np.float32))
        r = perf("--url", self.rest, "--model", "tiny_cnn", "--input-data", d, *FAST)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("image.npy: shape [5,5]", r.stderr)

    def test_latency_bound_and_target_qps(self):
        j = self.path("lb.json")
        r = self.run_ok("--url", self.rest, "--model", "simple", "--concurrency-range", "1:2", "--latency-bound-ms",
                        "10000", "--target-qps", "50", *FAST, "--json", j)
        self.assertIn("latency bound: p99 < 10000.000 ms: best", r.stdout)
        self.assertIn("Little's law suggests concurrency", r.stdout)
        with open(j) as f:
            doc = json.load(f)
        self.assertIsNotNone(doc["best_under_bound"])
        self.assertGreaterEqual(doc["suggested_concurrency"], 1)
        self.assertIn(doc["target_reached"], (True, False))
        self.assertEqual(len(doc["points"]), 3)  # the sweep's two points and the suggested concurrency

    def test_plot(self):
        svg = self.path("plot.svg")
        r = perf("--url", self.rest, "--model", "simple", "--concurrency-range", "1:2", *FAST, "--plot", svg)
        has_writer = os.path.exists(os.path.join(SOURCE_DIR, "src", "perf", "svg_plot.cc"))
        if has_writer:
            self.assertEqual(r.returncode, 0, r.stderr)
            root = ET.parse(svg).getroot()
            self.assertTrue(root.tag.endswith("svg"), root.tag)
        else:  # a build without the plot writer refuses --plot up front, clearly
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("no SVG plot writer", r.stderr)
            self.assertFalse(os.path.exists(svg))

    def test_unknown_model(self):
        for url in (self.rest, self.grpc):
            r = perf("--url", url, "--model", "no_such_model", *FAST)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("model 'no_such_model' is not known to the server", r.stderr)

    def test_bad_input(self):
        cases = [
            (["--concurrency-range", "4:2"], "END is below START"),
            (["--concurrency-range", "0"], "START must be > 0"),
            (["--shape", "NOPE:1,2"], "'NOPE' is not an input of model 'simple'"),
            (["--shape", "INPUT0:3"], "dim 0 is fixed at 16"),
            (["--batch-size", "9"], "above model 'simple' max_batch_size 8"),
            (["--concurrency-range", "1", "--request-rate-range", "1"], "not both"),
        ]
        for extra, message in cases:
            r = perf("--url", self.rest, "--model", "simple", *extra, *FAST)
            self.assertEqual(r.returncode, 2, (extra, r.stderr))
            self.assertIn(message, r.stderr)

    def test_server_rejection_shows_server_message(self):
        r = perf("--url", self.rest, "--model", "simple", "--priority", "99", *FAST)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("every request failed", r.stderr)
        self.assertIn("http_400", r.stderr)
        self.assertIn("priority 99", r.stderr)  # the server's own message

    def test_sigint_prints_what_was_measured(self):
        j = self.path("int.json")
        def successes():
            status, doc = get_json(self.server.http_port, "/v2/models/simple/stats")
            self.assertEqual(status, 200)
            return doc["model_stats"][0]["inference_stats"]["success"]["count"]

        before = successes()
        proc = subprocess.Popen([INFERLOOP, "perf", "--url", self.rest, "--model", "simple", "--concurrency-range",
                                 "1:4", "--duration", "0.2", "--max-windows", "1000", "--json", j],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait until the load is on, then long enough for a few windows.
        for _ in range(600):
            if successes() > before + 10:
                break
            time.sleep(0.05)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, out + err)
        self.assertIn("interrupted", out)
        self.assertRegex(out, r"\n +1 +[0-9.]+ ")  # the concurrency-1 row
        with open(j) as f:
            doc = json.load(f)
        self.assertTrue(doc["interrupted"])
        self.assertGreaterEqual(len(doc["points"]), 1)
        self.assertGreater(doc["points"][0]["completed"], 0)


class PerfWithoutServer(unittest.TestCase):
    def test_unreachable_server(self):
        port = free_port()
        for url in (f"http://127.0.0.1:{port}", f"grpc://127.0.0.1:{port}"):
            r = perf("--url", url, "--model", "simple", timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("cannot reach the server at", r.stderr)

    def test_bad_url(self):
        r = perf("--url", "https://127.0.0.1:1", "--model", "simple")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected http://HOST:PORT or grpc://HOST:PORT", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
