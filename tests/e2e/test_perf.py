"""End-to-end tests of `inferloop perf` against `inferloop serve` on the example repository
(examples/model_repository: simple, tiny_cnn), over REST JSON, REST binary and gRPC, closed and
open loop, with the CSV/JSON outputs read back, input sets with their distributions (the
per-sample counts checked against the server's own request count), the error paths and Ctrl-C.

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
               "errors_by_kind", "input_samples", "input_distribution"]


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

    def make_input_set(self, name, n):
        """n samples for `simple` (INPUT0, INPUT1 int32[16]), each a distinct sum."""
        d = self.path(name)
        for i in range(n):
            os.makedirs(os.path.join(d, f"s{i}"), exist_ok=True)
            np.save(os.path.join(d, f"s{i}", "INPUT0.npy"), np.full((16,), i, np.int32))
            np.save(os.path.join(d, f"s{i}", "INPUT1.npy"), np.arange(16, dtype=np.int32).reshape(1, 16))
        return d

    def simple_successes(self):
        status, doc = get_json(self.server.http_port, "/v2/models/simple/stats")
        self.assertEqual(status, 200)
        return doc["model_stats"][0]["inference_stats"]["success"]["count"]

    def run_input_set(self, url, d, distribution, load_args, concurrency_bound):
        """Runs one point over the set; checks what the JSON, CSV and table report and that the
        per-sample counts add up to the point and to the server's own count. Returns the counts."""
        c, j = self.path("set.csv"), self.path("set.json")
        before = self.simple_successes()
        r = self.run_ok("--url", url, "--model", "simple", "--input-data", d, "--input-distribution", distribution,
                        "--seed", "7", *load_args, *FAST, "--csv", c, "--json", j)
        served = self.simple_successes() - before
        rows, doc = self.read_outputs(c, j, load_args[0].lstrip("-").replace("-range", "").replace("-", "_"), 1)
        names = sorted(os.listdir(d))
        self.assertEqual(doc["input_samples"], len(names))
        self.assertEqual(doc["input_sample_names"], names)
        self.assertEqual(doc["input_data"], d)
        self.assertEqual(rows[0]["input_samples"], str(len(names)))
        self.assertEqual(rows[0]["input_distribution"], doc["input_distribution"])
        self.assertIn(f"inputs: {d}, {len(names)} samples, distribution {doc['input_distribution']}", r.stdout)
        point = doc["points"][0]
        counts = point["requests_per_sample"]
        self.assertEqual(len(counts), len(names))
        # The counts cover the whole point: the reported windows and the moments until the load stopped.
        self.assertGreaterEqual(sum(counts), point["completed"])
        # The server answered each of them, plus at most the requests in flight when perf stopped.
        self.assertGreaterEqual(served, sum(counts))
        self.assertLessEqual(served, sum(counts) + concurrency_bound)
        return doc, counts

    def test_input_set_round_robin_every_sample(self):
        d = self.make_input_set("rr", 5)
        for url in (self.rest, self.grpc):
            doc, counts = self.run_input_set(url, d, "round-robin", ["--concurrency-range", "2"], 2)
            self.assertEqual(doc["input_distribution"], "round-robin")
            self.assertGreater(min(counts), 0, counts)
            # Round-robin: each I/O thread cycles through the set; what a stop cuts off is at most
            # the requests in flight (2) plus one partial cycle.
            self.assertLessEqual(max(counts) - min(counts), 3, counts)

    def test_input_set_zipf_and_uniform(self):
        d = self.make_input_set("zipf", 4)
        doc, counts = self.run_input_set(self.grpc, d, "zipf:1.2", ["--concurrency-range", "1"], 1)
        self.assertEqual(doc["input_distribution"], "zipf:1.2")
        # p = 0.47, 0.20, 0.13, 0.09 over hundreds of requests: the first sample leads.
        self.assertGreater(sum(counts), 100)
        self.assertEqual(counts.index(max(counts)), 0, counts)
        doc, counts = self.run_input_set(self.rest, d, "uniform", ["--request-rate-range", "300"], 1024)
        self.assertEqual(doc["input_distribution"], "uniform")
        self.assertGreater(min(counts), 0, counts)

    def test_input_set_errors(self):
        empty = self.path("empty_set")
        os.makedirs(empty, exist_ok=True)
        missing = self.make_input_set("missing", 2)
        os.remove(os.path.join(missing, "s1", "INPUT1.npy"))
        shape = self.make_input_set("shape", 2)
        np.save(os.path.join(shape, "s1", "INPUT0.npy"), np.zeros((5,), np.int32))
        mixed = self.make_input_set("mixed", 1)
        np.save(os.path.join(mixed, "INPUT0.npy"), np.zeros((16,), np.int32))
        good = self.make_input_set("good", 2)
        cases = [
            (["--input-data", empty], f"--input-data '{empty}': empty"),
            (["--input-data", missing], f"sample 's1': --input-data: no {missing}/s1/INPUT1.npy for input 'INPUT1'"),
            (["--input-data", shape], "sample 's1': " + os.path.join(shape, "s1", "INPUT0.npy") +
             ": shape [5], expected [1,16] or [16]"),
            (["--input-data", mixed], "holds both .npy files and folders"),
            (["--input-data", good, "--input-distribution", "zipf:0"], "the Zipf exponent must be > 0"),
            (["--input-data", good, "--input-distribution", "zipf:-1"], "the Zipf exponent must be > 0"),
            (["--input-data", good, "--input-distribution", "zipf:abc"], "'abc' is not a number"),
            (["--input-data", good, "--input-distribution", "pareto"],
             "expected round-robin, uniform, zipf or zipf:S with S > 0"),
        ]
        for extra, message in cases:
            r = perf("--url", self.rest, "--model", "simple", *extra, *FAST)
            self.assertEqual(r.returncode, 2, (extra, r.stderr))
            self.assertIn(message, r.stderr)

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
