#!/usr/bin/env python3
"""The response cache through `inferloop serve` (config.pbtxt `response_cache { enable: true }`,
--response-cache-bytes / --response-cache-dir / --response-cache-disk-bytes).

The repository (made here from make_test_repository's models):
  simple         Triton's "simple" (INPUT0 + INPUT1, INPUT0 - INPUT1), not cached: the reference
  simple_cached  the same model with the cache enabled (and `keyed`, another copy)
  slow_cached    the "slow" model (N rounds of a Loop) with the cache enabled: coalescing
  step           "simple" with the cache enabled, called by the ensemble `ens` (cached per step)
  ens_top        an ensemble with the cache enabled, over the uncached `simple` (cached on top)
  versioned      the cache enabled; version 2 and files replaced in place arrive while it serves
Checks: a hit answers exactly what the uncached model computes, with the request's own id;
statistics (REST and gRPC: cache_hit, cache_miss, success, inference and execution counts) and
metrics (Triton's nv_cache_*_per_model, inferloop_response_cache_*) move as documented; the key
covers the requested outputs and the inputs; a new version and files replaced in place are never
answered from the old entries; the disk tier survives a restart (the first request is a disk
hit) and drops corrupt and truncated entries (recomputed, never served); a full disk (a 256 KiB
tmpfs, or when mounting is refused, the cache folder replaced by a file) leaves the server
answering correctly; identical concurrent requests to the slow model are computed once; bad
options are refused with a message; --response-cache-bytes 0 serves cached models uncached.

Usage: test_response_cache.py --inferloop BUILD/inferloop [unittest args]
"""
import concurrent.futures as cf
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import tritonclient.grpc as grpcclient

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_test_repository as mtr  # noqa: E402
from serve_harness import (Server, get_json, metric_value, metrics, post_json, run_tests, slow_request,  # noqa: E402
                           wait_for)

INFERLOOP = None
CACHE_ON = "response_cache { enable: true }\n"
# Rounds of the slow model for the coalescing check: long enough that every concurrent request
# arrives while the first is computing (the time it took is printed).
SLOW_ROUNDS = 200000


def config_named(text, name):
    return text.replace('name: "simple"', f'name: "{name}"').replace('name: "slow"', f'name: "{name}"')


def variant_model(op0, op1, graph_name):
    """simple's interface with OUTPUT0 = op0(INPUT0, INPUT1), OUTPUT1 = op1(...)."""
    m = mtr.simple_model()
    m.graph.node[0].op_type = op0
    m.graph.node[1].op_type = op1
    m.graph.name = graph_name
    return m


def ensemble_config(name, step, extra=""):
    return f'''name: "{name}"
platform: "ensemble"
max_batch_size: 8
input [ {{ name: "A" data_type: TYPE_INT32 dims: [ 16 ] }}, {{ name: "B" data_type: TYPE_INT32 dims: [ 16 ] }} ]
output [ {{ name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] }}, {{ name: "DIFF" data_type: TYPE_INT32 dims: [ 16 ] }} ]
ensemble_scheduling {{ step [ {{
  model_name: "{step}" model_version: -1
  input_map {{ key: "INPUT0" value: "A" }} input_map {{ key: "INPUT1" value: "B" }}
  output_map {{ key: "OUTPUT0" value: "SUM" }} output_map {{ key: "OUTPUT1" value: "DIFF" }}
}} ] }}
{extra}'''


def make_repository(root):
    for name, cached in (("simple", False), ("simple_cached", True), ("keyed", True), ("step", True)):
        mtr.save(mtr.simple_model(), f"{root}/{name}/1/model.onnx")
        mtr.write(f"{root}/{name}/config.pbtxt", config_named(mtr.SIMPLE_CONFIG, name) + (CACHE_ON if cached else ""))
    mtr.save(mtr.slow_model(), f"{root}/slow_cached/1/model.onnx")
    mtr.write(f"{root}/slow_cached/config.pbtxt", config_named(mtr.SLOW_CONFIG, "slow_cached") + CACHE_ON)
    mtr.write(f"{root}/ens/config.pbtxt", ensemble_config("ens", "step"))
    os.makedirs(f"{root}/ens/1", exist_ok=True)
    mtr.write(f"{root}/ens_top/config.pbtxt", ensemble_config("ens_top", "simple", CACHE_ON))
    os.makedirs(f"{root}/ens_top/1", exist_ok=True)
    mtr.save(variant_model("Add", "Sub", "v1"), f"{root}/versioned/1/model.onnx")
    mtr.write(f"{root}/versioned/config.pbtxt", config_named(mtr.SIMPLE_CONFIG, "versioned") + CACHE_ON)


def simple_body(a, b, outputs=None, request_id=None, names=("INPUT0", "INPUT1")):
    body = {"inputs": [{"name": names[0], "datatype": "INT32", "shape": [1, 16], "data": [int(v) for v in a]},
                       {"name": names[1], "datatype": "INT32", "shape": [1, 16], "data": [int(v) for v in b]}]}
    if outputs is not None:
        body["outputs"] = [{"name": o} for o in outputs]
    if request_id is not None:
        body["id"] = request_id
    return body


def infer(port, model, body, expect=200):
    status, _, out = post_json(port, f"/v2/models/{model}/infer", body)
    assert status == expect, (status, out)
    return out


def outputs_of(answer):
    return {o["name"]: o["data"] for o in answer["outputs"]}


def stats(port, model):
    status, s = get_json(port, f"/v2/models/{model}/stats")
    assert status == 200, s
    return s["model_stats"][0]


def ab(seed):
    r = np.random.default_rng(seed)
    return r.integers(-1000, 1000, 16), r.integers(-1000, 1000, 16)


def cache_files(d):
    return sorted(glob.glob(os.path.join(d, "*.ilrc")))


class ResponseCacheServing(unittest.TestCase):
    """One server (poll mode, memory tier) over the whole repository."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="il_rc_")
        cls.repo = os.path.join(cls.tmp, "repo")
        make_repository(cls.repo)
        cls.server = Server(INFERLOOP, cls.repo, "--model-control-mode", "poll", "--repository-poll-secs", "0.2",
                            "--response-cache-bytes", "16MiB")
        cls.port = cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_hit_statistics_and_metrics(self):
        a, b = ab(1)
        reference = infer(self.port, "simple", simple_body(a, b))
        first = infer(self.port, "simple_cached", simple_body(a, b, request_id="one"))
        t0 = time.perf_counter()
        second = infer(self.port, "simple_cached", simple_body(a, b, request_id="two"))
        hit_ms = (time.perf_counter() - t0) * 1e3
        self.assertEqual(outputs_of(first), outputs_of(reference))
        self.assertEqual(outputs_of(second), outputs_of(reference))
        self.assertEqual(outputs_of(second)["OUTPUT0"], list(a + b))
        self.assertEqual((first["id"], second["id"]), ("one", "two"))
        self.assertEqual((second["model_name"], second["model_version"]), ("simple_cached", "1"))
        s = stats(self.port, "simple_cached")
        st = s["inference_stats"]
        print(f"\nhit round trip {hit_ms:.2f} ms; statistics: {st}")
        self.assertEqual(st["cache_hit"]["count"], 1)
        self.assertGreater(st["cache_hit"]["ns"], 0)
        self.assertEqual(st["cache_miss"]["count"], 1)
        self.assertGreater(st["cache_miss"]["ns"], 0)
        self.assertEqual(st["success"]["count"], 2)  # the hit is a success
        self.assertEqual(st["queue"]["count"], 1)    # ... not queued or computed
        self.assertEqual(st["compute_infer"]["count"], 1)
        self.assertEqual((s["inference_count"], s["execution_count"]), (1, 1))
        plain = stats(self.port, "simple")["inference_stats"]
        self.assertEqual((plain["cache_hit"]["count"], plain["cache_miss"]["count"]), (0, 0))
        g = grpcclient.InferenceServerClient(self.server.grpc_url)
        gs = g.get_inference_statistics("simple_cached").model_stats[0].inference_stats
        self.assertEqual((gs.cache_hit.count, gs.cache_miss.count, gs.success.count), (1, 1, 2))
        self.assertGreater(gs.cache_hit.ns, 0)
        m = metrics(self.server.metrics_port)
        self.assertEqual(metric_value(m, "nv_cache_num_hits_per_model", model="simple_cached", version="1"), 1)
        self.assertEqual(metric_value(m, "nv_cache_num_misses_per_model", model="simple_cached", version="1"), 1)
        self.assertGreater(metric_value(m, "nv_cache_hit_duration_per_model", model="simple_cached", version="1"), 0)
        self.assertGreater(metric_value(m, "nv_cache_miss_duration_per_model", model="simple_cached", version="1"), 0)
        self.assertEqual(metric_value(m, "nv_cache_num_hits_per_model", model="simple", version="1"), 0)
        self.assertEqual(metric_value(m, "inferloop_request_success_total", model="simple_cached", version="1"), 2)
        self.assertGreaterEqual(metric_value(m, "inferloop_response_cache_hits_total", tier="memory"), 1)
        self.assertEqual(metric_value(m, "inferloop_response_cache_hits_total", tier="disk"), 0)
        self.assertGreaterEqual(metric_value(m, "inferloop_response_cache_lookups_total"), 2)
        self.assertGreaterEqual(metric_value(m, "inferloop_response_cache_misses_total"), 1)
        self.assertGreater(metric_value(m, "inferloop_response_cache_entries", tier="memory"), 0)
        self.assertGreater(metric_value(m, "inferloop_response_cache_bytes", tier="memory"), 0)
        self.assertEqual(metric_value(m, "inferloop_response_cache_budget_bytes", tier="memory"), 16 << 20)
        self.assertEqual(metric_value(m, "inferloop_response_cache_budget_bytes", tier="disk"), 0)
        self.assertGreater(metric_value(m, "inferloop_response_cache_lookup_seconds_total"), 0)
        self.assertGreater(metric_value(m, "inferloop_response_cache_insert_seconds_total"), 0)
        self.assertIsNotNone(metric_value(m, "inferloop_response_cache_disk_errors_total", kind="corrupt"))
        self.assertIsNotNone(metric_value(m, "inferloop_response_cache_evictions_total", tier="memory"))

    def test_key_covers_outputs_and_inputs(self):
        a, b = ab(2)
        both = outputs_of(infer(self.port, "keyed", simple_body(a, b)))
        only0 = infer(self.port, "keyed", simple_body(a, b, outputs=["OUTPUT0"]))
        self.assertEqual(outputs_of(only0), {"OUTPUT0": both["OUTPUT0"]})
        only1 = infer(self.port, "keyed", simple_body(a, b, outputs=["OUTPUT1"]))
        self.assertEqual(outputs_of(only1), {"OUTPUT1": both["OUTPUT1"]})
        b2 = b.copy()
        b2[15] += 1
        other = outputs_of(infer(self.port, "keyed", simple_body(a, b2)))
        self.assertEqual(other["OUTPUT0"], list(a + b2))
        # A parameter that does not change the result (priority) is not part of the key.
        body = simple_body(a, b)
        body["parameters"] = {"priority": 1}
        before = stats(self.port, "keyed")["inference_stats"]["cache_hit"]["count"]
        self.assertEqual(outputs_of(infer(self.port, "keyed", body)), both)
        self.assertEqual(stats(self.port, "keyed")["inference_stats"]["cache_hit"]["count"], before + 1)

    def test_ensemble_steps_and_ensemble_top(self):
        a, b = ab(3)
        body = simple_body(a, b, names=("A", "B"))
        x = outputs_of(infer(self.port, "ens", body))
        y = outputs_of(infer(self.port, "ens", body))
        self.assertEqual(x, y)
        self.assertEqual(x["SUM"], list(a + b))
        step = stats(self.port, "step")
        self.assertEqual(step["inference_stats"]["cache_hit"]["count"], 1)  # the second run's step
        self.assertEqual(step["execution_count"], 1)
        self.assertEqual(stats(self.port, "ens")["inference_stats"]["success"]["count"], 2)
        simple_before = stats(self.port, "simple")["execution_count"]
        top1 = outputs_of(infer(self.port, "ens_top", body))
        top2 = outputs_of(infer(self.port, "ens_top", body))
        self.assertEqual(top1, x)
        self.assertEqual(top2, x)
        self.assertEqual(stats(self.port, "ens_top")["inference_stats"]["cache_hit"]["count"], 1)
        self.assertEqual(stats(self.port, "simple")["execution_count"], simple_before + 1)  # the hit ran no step

    def test_coalescing_identical_concurrent_requests(self):
        n = 6
        body = slow_request(SLOW_ROUNDS)
        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(lambda i: infer(self.port, "slow_cached", dict(body, id=f"c{i}")), range(n)))
        took = time.perf_counter() - t0
        s = stats(self.port, "slow_cached")
        print(f"\n{n} identical concurrent requests: {took:.2f} s; execution_count {s['execution_count']}; "
              f"compute_infer {s['inference_stats']['compute_infer']['ns'] / 1e9:.2f} s")
        self.assertEqual([a["id"] for a in answers], [f"c{i}" for i in range(n)])
        for a in answers[1:]:
            self.assertEqual(outputs_of(a), outputs_of(answers[0]))
        self.assertEqual(s["execution_count"], 1)
        self.assertEqual(s["inference_stats"]["cache_miss"]["count"], 1)
        self.assertEqual(s["inference_stats"]["cache_hit"]["count"], n - 1)
        self.assertEqual(s["inference_stats"]["success"]["count"], n)

    def test_new_version_and_files_replaced_in_place(self):
        a, b = ab(4)
        body = simple_body(a, b)

        def answer_twice():
            before = stats(self.port, "versioned")
            x = outputs_of(infer(self.port, "versioned", body))["OUTPUT0"]
            y = outputs_of(infer(self.port, "versioned", body))["OUTPUT0"]
            self.assertEqual(x, y)
            after = stats(self.port, "versioned")
            if after["version"] == before["version"]:  # the second was a hit of this version's files
                self.assertEqual(after["inference_stats"]["cache_hit"]["count"],
                                 before["inference_stats"]["cache_hit"]["count"] + 1)
            return x

        self.assertEqual(answer_twice(), list(a + b))
        mark = len(self.server.events)
        mtr.save(variant_model("Sub", "Add", "v2"), f"{self.repo}/versioned/2/model.onnx")
        self.server.wait_event("model_ready", after=mark)
        wait_for("version 2 serving", lambda: stats(self.port, "versioned")["version"] == "2")
        self.assertEqual(answer_twice(), list(a - b))
        self.assertEqual(stats(self.port, "versioned")["inference_stats"]["cache_hit"]["count"], 1)
        # The same version's file replaced in place (a different model of another size).
        mark = len(self.server.events)
        mtr.save(variant_model("Mul", "Add", "v2_replaced_in_place"), f"{self.repo}/versioned/2/model.onnx")
        self.server.wait_event("model_ready", after=mark)
        self.assertEqual(answer_twice(), list(a * b))


class ResponseCacheDisk(unittest.TestCase):
    """The disk tier across a restart, with corrupt and truncated entries."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="il_rcd_")
        self.repo = os.path.join(self.tmp, "repo")
        mtr.save(mtr.simple_model(), f"{self.repo}/simple_cached/1/model.onnx")
        mtr.write(f"{self.repo}/simple_cached/config.pbtxt", config_named(mtr.SIMPLE_CONFIG, "simple_cached") + CACHE_ON)
        self.dir = os.path.join(self.tmp, "cache")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self):
        return Server(INFERLOOP, self.repo, "--response-cache-dir", self.dir, "--response-cache-disk-bytes", "64MiB")

    def test_restart_corrupt_and_truncated(self):
        reqs = [ab(10 + i) for i in range(3)]
        files = []
        with self.serve() as s:
            for a, b in reqs:
                known = set(cache_files(self.dir))
                self.assertEqual(outputs_of(infer(s.http_port, "simple_cached", simple_body(a, b)))["OUTPUT0"], list(a + b))
                new = wait_for("the entry's file", lambda: sorted(set(cache_files(self.dir)) - known))
                self.assertEqual(len(new), 1, new)
                files.append(new[0])
            s.terminate()
        good, corrupt, truncated = files
        with open(corrupt, "r+b") as f:  # flip the last byte (payload): only the checksum can tell
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([last[0] ^ 0xFF]))
        size = os.path.getsize(truncated)
        with open(truncated, "r+b") as f:
            f.truncate(size // 2)
        with self.serve() as s:
            answers = [outputs_of(infer(s.http_port, "simple_cached", simple_body(a, b))) for a, b in reqs]
            for (a, b), got in zip(reqs, answers):
                self.assertEqual(got["OUTPUT0"], list(a + b))
                self.assertEqual(got["OUTPUT1"], list(a - b))
            st = stats(s.http_port, "simple_cached")
            m = metrics(s.metrics_port)
            corrupt_count = metric_value(m, "inferloop_response_cache_disk_errors_total", kind="corrupt")
            print(f"\nafter restart: execution_count {st['execution_count']}, cache_hit "
                  f"{st['inference_stats']['cache_hit']['count']}, disk hits "
                  f"{metric_value(m, 'inferloop_response_cache_hits_total', tier='disk')}, corrupt dropped {corrupt_count}")
            self.assertEqual(st["inference_stats"]["cache_hit"]["count"], 1)  # the good entry, from disk
            self.assertEqual(metric_value(m, "inferloop_response_cache_hits_total", tier="disk"), 1)
            self.assertEqual(st["execution_count"], 2)  # the damaged ones were recomputed
            self.assertGreaterEqual(corrupt_count, 1)
            # Recomputed entries are good again (memory hits now).
            for a, b in reqs[1:]:
                infer(s.http_port, "simple_cached", simple_body(a, b))
            self.assertEqual(stats(s.http_port, "simple_cached")["execution_count"], 2)
            s.terminate()
        self.assertTrue(os.path.exists(good))


class ResponseCacheDiskFull(unittest.TestCase):
    def test_disk_full_keeps_answering(self):
        tmp = tempfile.mkdtemp(prefix="il_rcf_")
        repo = os.path.join(tmp, "repo")
        mtr.save(mtr.simple_model(), f"{repo}/simple_cached/1/model.onnx")
        mtr.write(f"{repo}/simple_cached/config.pbtxt", config_named(mtr.SIMPLE_CONFIG, "simple_cached") + CACHE_ON)
        d = os.path.join(tmp, "cache")
        os.makedirs(d)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", d],
                                 capture_output=True, text=True).returncode == 0
        print(f"\ndisk full by: {'a 256 KiB tmpfs' if mounted else 'the cache folder replaced by a file (mount refused)'}")
        try:
            with Server(INFERLOOP, repo, "--response-cache-dir", d, "--response-cache-disk-bytes", "1GiB") as s:
                if not mounted:
                    os.rename(d, d + ".gone")
                    with open(d, "w") as f:
                        f.write("not a folder")
                reqs = [ab(100 + i) for i in range(200)]
                for a, b in reqs:
                    got = outputs_of(infer(s.http_port, "simple_cached", simple_body(a, b)))
                    self.assertEqual(got["OUTPUT0"], list(a + b))

                def failures():
                    m = metrics(s.metrics_port)
                    return (metric_value(m, "inferloop_response_cache_disk_errors_total", kind="write_failure") +
                            metric_value(m, "inferloop_response_cache_disk_errors_total", kind="skipped"))
                n = wait_for("disk write failures counted", failures)
                # Still answering, correctly, from memory and by computing.
                for a, b in reqs[:20] + [ab(999)]:
                    got = outputs_of(infer(s.http_port, "simple_cached", simple_body(a, b)))
                    self.assertEqual(got["OUTPUT1"], list(a - b))
                st = stats(s.http_port, "simple_cached")
                print(f"writes failed or skipped: {n:.0f}; files kept: {len(cache_files(d)) if mounted else 0}; "
                      f"hits {st['inference_stats']['cache_hit']['count']}, executions {st['execution_count']}")
                self.assertEqual(st["inference_stats"]["cache_hit"]["count"], 20)
                self.assertEqual(st["execution_count"], 201)
                self.assertEqual(s.terminate(), 0)
        finally:
            if mounted:
                subprocess.run(["umount", d], check=False)
            shutil.rmtree(tmp, ignore_errors=True)


class ResponseCacheOptions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="il_rco_")
        cls.repo = os.path.join(cls.tmp, "repo")
        mtr.save(mtr.simple_model(), f"{cls.repo}/simple_cached/1/model.onnx")
        mtr.write(f"{cls.repo}/simple_cached/config.pbtxt", config_named(mtr.SIMPLE_CONFIG, "simple_cached") + CACHE_ON)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_serve(self, *flags):
        cmd = [INFERLOOP, "serve", "--model-repository", self.repo, "--http-port", "0", "--grpc-port", "0",
               "--metrics-port", "0"] + list(flags)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    def test_bad_options(self):
        a_file = os.path.join(self.tmp, "a_file")
        with open(a_file, "w") as f:
            f.write("x")
        cases = [
            (["--response-cache-bytes=-1"], "--response-cache-bytes"),
            (["--response-cache-bytes", "12XB"], "unknown unit"),
            (["--response-cache-dir", self.tmp + "/d", "--response-cache-disk-bytes=-5"], "--response-cache-disk-bytes"),
            (["--response-cache-bytes", "0", "--response-cache-dir", self.tmp + "/d"], "--response-cache-dir"),
            (["--response-cache-dir", a_file + "/sub"], a_file),
            (["--response-cache-dir", self.tmp + "/d", "--response-cache-disk-bytes", "0"], "response cache"),
        ]
        for flags, says in cases:
            with self.subTest(flags=flags):
                r = self.run_serve(*flags)
                self.assertNotEqual(r.returncode, 0, r.stderr)
                self.assertIn(says, r.stderr)
                self.assertNotIn("server_ready", r.stderr)

    def test_cache_off_serves_uncached(self):
        with Server(INFERLOOP, self.repo, "--response-cache-bytes", "0") as s:
            self.assertEqual(len(s.find_events("response_cache_off")), 1, s.log_text())
            a, b = ab(7)
            for _ in range(2):
                self.assertEqual(outputs_of(infer(s.http_port, "simple_cached", simple_body(a, b)))["OUTPUT0"], list(a + b))
            st = stats(s.http_port, "simple_cached")
            self.assertEqual(st["execution_count"], 2)
            self.assertEqual(st["inference_stats"]["cache_hit"]["count"], 0)
            self.assertIsNone(metric_value(metrics(s.metrics_port), "inferloop_response_cache_lookups_total"))
            s.terminate()


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
