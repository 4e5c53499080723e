#!/usr/bin/env python3
"""Noisy neighbour: does a flooded model push a quiet one past its latency objective?

Two ONNX models in one repository, made here with onnx.helper (a MatMul stack of ~5-20 ms per
request): "flooded" (4 instances) is sent requests open-loop at --overload times its measured
capacity; "quiet" (1 instance) at a light steady rate. Runs the server twice, with
`--fair-share on` and `--fair-share off`, and prints quiet's p50/p99 (and refusals) and flooded's
throughput side by side.

    .venv/bin/python bench/adaptive/noisy_neighbour.py --inferloop build/inferloop

Prints one JSON object at the end (--json FILE also writes it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from serve_harness import Server, metric_value, metrics  # noqa: E402

WIDTH = 512


def make_model(path, rows, layers, seed):
    """x [1, WIDTH] -> Expand to [rows, WIDTH] -> layers x (MatMul, Relu) -> ReduceMean(axis 0) -> y [1, WIDTH]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(np.array([rows, WIDTH], np.int64), "shape")]
    nodes = [helper.make_node("Expand", ["x", "shape"], ["h0"])]
    for i in range(layers):
        w = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [f"h{i}", f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i + 1}"]))
    nodes.append(helper.make_node("ReduceMean", [f"h{layers}"], ["y"], axes=[0], keepdims=1))
    graph = helper.make_graph(nodes, "stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def make_repository(root, rows, layers, flooded_instances):
    for name, instances in (("flooded", flooded_instances), ("quiet", 1)):
        os.makedirs(os.path.join(root, name, "1"))
        make_model(os.path.join(root, name, "1", "model.onnx"), rows, layers, seed=len(name))
        with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
            f.write(f'name: "{name}"\nmax_batch_size: 0\ninstance_group [ {{ count: {instances} }} ]\n')


def perf(args, port, model, load, seconds, out, max_outstanding=1024):
    """Starts `inferloop perf` (the C++ load generator, docs/PERF.md: the client takes little of the
    CPUs the server shares); `load` is ("rate", R) open loop or ("concurrency", C) closed loop."""
    mode = "--request-rate-range" if load[0] == "rate" else "--concurrency-range"
    cmd = [args.inferloop, "perf", "--url", f"http://127.0.0.1:{port}", "-m", model, mode, str(load[1]), "--binary",
           "--duration", str(seconds), "--max-windows", "3", "--percentile", "99", "--json", out,
           "--max-outstanding", str(max_outstanding), "--io-threads", "1"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def point(proc, out):
    proc.wait()
    with open(out) as f:
        p = json.load(f)["points"][-1]
    return {"rps": round(p["throughput_req_per_s"], 1), "completed": p["completed"], "errors": p["errors"],
            "errors_by_kind": p.get("errors_by_kind"), "p50_ms": round(p["latency_p50_us"] / 1000, 2),
            "p99_ms": round(p["latency_p99_us"] / 1000, 2), "max_ms": round(p["latency_max_us"] / 1000, 2)}


def run_mode(args, repo, fair, work):
    extra = ["--threads", str(args.threads), "--fair-share", fair]
    with Server(args.inferloop, repo, *extra) as server:
        port = server.http_port
        f = os.path.join(work, f"{fair}_%s.json")
        alone = point(perf(args, port, "quiet", ("rate", args.quiet_rate), args.seconds / 3, f % "alone"), f % "alone")
        cap = point(perf(args, port, "flooded", ("concurrency", 2 * args.flooded_instances), 2, f % "cap"), f % "cap")
        flood_rate = args.overload * cap["rps"]
        flood = perf(args, port, "flooded", ("rate", flood_rate), args.seconds / 3 + 1, f % "flood", max_outstanding=100000)
        time.sleep(1.5)  # the flood's queue builds up first
        quiet = point(perf(args, port, "quiet", ("rate", args.quiet_rate), args.seconds / 3, f % "quiet"), f % "quiet")
        flooded = point(flood, f % "flood")
        text = metrics(server.metrics_port)
        return {
            "fair_share": fair,
            "quiet_alone": alone,
            "quiet_under_flood": quiet,
            "flooded_capacity_rps": cap["rps"],
            "flooded_offered_rps": round(flood_rate, 1),
            "flooded_under_flood": flooded,
            "quiet_slot_wait_s": metric_value(text, "inferloop_cpu_share_wait_seconds_total", model="quiet"),
            "quiet_slot_seconds": metric_value(text, "inferloop_cpu_share_seconds_total", model="quiet"),
            "flooded_slot_seconds": metric_value(text, "inferloop_cpu_share_seconds_total", model="flooded"),
            "refused_by_admission": {m: metric_value(text, "inferloop_requests_refused_total", model=m)
                                     for m in ("quiet", "flooded")},
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default="build/inferloop")
    ap.add_argument("--threads", type=int, default=2, help="server --threads (and fair-share slots)")
    ap.add_argument("--rows", type=int, default=256, help="rows each layer multiplies (sets the cost per request)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--flooded-instances", type=int, default=4)
    ap.add_argument("--overload", type=float, default=3.0, help="flooded's offered rate / its capacity")
    ap.add_argument("--quiet-rate", type=float, default=20.0, help="quiet's requests per second")
    ap.add_argument("--seconds", type=float, default=12.0, help="about how long each load runs")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as repo, tempfile.TemporaryDirectory() as work:
        make_repository(repo, args.rows, args.layers, args.flooded_instances)
        runs = [run_mode(args, repo, fair, work) for fair in ("off", "on")]
    result = {"setup": vars(args), "runs": runs}
    print(f"{'fair share':>10} | {'quiet alone p50/p99 ms':>22} | {'quiet flooded p50/p99 ms':>24} | "
          f"{'quiet errors':>12} | {'flooded done/offered rps':>24}")
    for r in runs:
        a, q, fl = r["quiet_alone"], r["quiet_under_flood"], r["flooded_under_flood"]
        print(f"{r['fair_share']:>10} | {a['p50_ms']:>10} / {a['p99_ms']:<9} | {q['p50_ms']:>11} / {q['p99_ms']:<10} | "
              f"{q['errors']:>12} | {fl['rps']:>11} / {r['flooded_offered_rps']:<10}")
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
