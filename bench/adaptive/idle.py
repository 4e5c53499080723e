"""The idle policy's effect (docs/ADAPTIVE.md, "Idle"): an idle `inferloop serve` with 10 small
models, with the idle policy off and then on, in one run.

    .venv/bin/python bench/adaptive/idle.py [--inferloop build/inferloop] [--models 10]
                                            [--window 60] [--weight-mib 8] [--threads 0]

Models: m00..m09, each Y = relu(X @ W1) @ W2 (W1, W2 together --weight-mib MiB, made here with
onnx.helper), max_batch_size 8 with dynamic batching (so the batcher's timers are part of it).
For each setting a fresh server is started, every model gets 20 requests (their arenas and shape
plans are then warm), then:
  off: --idle-release-after 0, no budget;
  on:  --idle-release-after 2 and --memory-budget of 3.5 times the median model's memory (as the
       server measured it with the policy off): the policy releases idle arenas and unloads the
       least recently used models until the rest fit (the script waits until it has);
and the server is left alone for --window seconds, measuring:
  CPU s/min  = (utime + stime of the process, /proc/PID/stat) over the window, per minute
  RSS MiB    = VmRSS at the end of the window
  threads    = threads of the process (/proc/PID/status)
Then (policy on) the first request to a model the policy unloaded (reload on demand + run) and a
request to a warm model, each timed end to end from this client (median of every unloaded model
once / 20 warm requests). Prints a table.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
from serve_harness import Server, metric_value, metrics, post_json  # noqa: E402

IN = 256


def make_repo(repo, n_models, weight_mib):
    hidden = max(16, int(weight_mib * (1 << 20) / 4 / (IN + IN)))
    for i in range(n_models):
        name = f"m{i:02d}"
        rng = np.random.default_rng(i)
        w1 = numpy_helper.from_array((rng.standard_normal((IN, hidden)) * 0.05).astype(np.float32), "W1")
        w2 = numpy_helper.from_array((rng.standard_normal((hidden, IN)) * 0.05).astype(np.float32), "W2")
        nodes = [helper.make_node("MatMul", ["X", "W1"], ["H"]), helper.make_node("Relu", ["H"], ["R"]),
                 helper.make_node("MatMul", ["R", "W2"], ["Y"])]
        graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", IN])],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", IN])], [w1, w2])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        os.makedirs(os.path.join(repo, name, "1"))
        onnx.save(model, os.path.join(repo, name, "1", "model.onnx"))
        with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
            f.write(f'name: "{name}"\nmax_batch_size: 8\n'
                    'input [{ name: "X" data_type: TYPE_FP32 dims: [256] }]\n'
                    'output [{ name: "Y" data_type: TYPE_FP32 dims: [256] }]\n'
                    'dynamic_batching { max_queue_delay_microseconds: 500 }\n')
    return [f"m{i:02d}" for i in range(n_models)]


def infer(port, name):
    x = np.ones((1, IN), dtype=np.float32)
    body = {"inputs": [{"name": "X", "datatype": "FP32", "shape": [1, IN], "data": x.ravel().tolist()}]}
    t0 = time.perf_counter()
    status, _, answer = post_json(port, f"/v2/models/{name}/infer", body)
    ms = (time.perf_counter() - t0) * 1000
    if status != 200:
        raise RuntimeError(f"{name}: {status} {answer}")
    return ms


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (stat field 3): utime, stime are stat fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def index(port):
    status, _, body = post_json(port, "/v2/repository/index", {})
    return {e["name"]: e for e in body}


def measure_idle(srv, window):
    pid = srv.proc.pid
    c0, t0 = cpu_seconds(pid), time.time()
    time.sleep(window)
    c1, t1 = cpu_seconds(pid), time.time()
    return {"cpu_s_per_min": (c1 - c0) / (t1 - t0) * 60, "rss_mib": proc_status(pid, "VmRSS") / 1024,
            "threads": proc_status(pid, "Threads")}


def run(args, repo, names, policy_on, budget):
    extra = ["--threads", str(args.threads), "--idle-release-after", "2" if policy_on else "0"]
    if policy_on:
        extra += ["--memory-budget", str(budget)]
    with Server(args.inferloop, repo, *extra) as srv:
        port = srv.http_port
        for n in names:
            for _ in range(20):
                infer(port, n)
        text = metrics(srv.metrics_port)
        model_bytes = {n: metric_value(text, "inferloop_model_memory_bytes", model=n) or 0 for n in names}
        if policy_on:
            end = time.time() + 120
            while time.time() < end:
                unloaded = [n for n, e in index(port).items() if "unloaded while idle" in e.get("reason", "")]
                released = {e["model"] for e in srv.find_events("model_idle_memory_released")}
                text = metrics(srv.metrics_port)
                held = sum(metric_value(text, "inferloop_model_memory_bytes", model=n) or 0 for n in names)
                if held <= budget and unloaded and set(names) - set(unloaded) <= released:
                    break
                time.sleep(0.2)
        row = measure_idle(srv, args.window)
        row["serving"] = sum(1 for e in index(port).values() if e.get("state") == "READY")
        row["model_mib"] = sum(model_bytes.values()) / (1 << 20)
        if policy_on:
            unloaded = sorted(n for n, e in index(port).items() if "unloaded while idle" in e.get("reason", ""))
            warm = sorted(set(names) - set(unloaded))[-1]
            infer(port, warm)
            row["warm_ms"] = statistics.median(infer(port, warm) for _ in range(20))
            before = len(srv.find_events("model_loaded_on_demand"))
            cold = [infer(port, n) for n in unloaded]
            row["unloaded_ms"] = statistics.median(cold)
            row["unloaded_n"] = len(cold)
            waits = [int(e["wait_ms"]) for e in srv.find_events("model_loaded_on_demand")[before:]]
            row["on_demand_wait_ms"] = statistics.median(waits) if waits else float("nan")
        srv.terminate()
    return row, model_bytes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default=os.path.join(HERE, "..", "..", "build", "inferloop"))
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--window", type=float, default=60)
    ap.add_argument("--weight-mib", type=float, default=8)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()
    repo = tempfile.mkdtemp(prefix="inferloop_idle_bench_")
    try:
        names = make_repo(repo, args.models, args.weight_mib)
        off, model_bytes = run(args, repo, names, False, 0)
        # The first model loaded also pays for the runtime's one-time setup: size by the median.
        budget = int(3.5 * statistics.median(model_bytes.values()))
        on, _ = run(args, repo, names, True, budget)
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    print(f"\nIdle server, {args.models} models of {args.weight_mib:g} MiB weights, {args.window:g} s window, "
          f"CPUs {os.cpu_count()}, --threads {args.threads}")
    print("| idle policy | models serving | CPU s/min | RSS MiB | threads |")
    print("|---|---|---|---|---|")
    print(f"| off | {off['serving']} | {off['cpu_s_per_min']:.3f} | {off['rss_mib']:.0f} | {off['threads']} |")
    print(f"| on (release after 2 s, budget {budget / (1 << 20):.0f} MiB) | {on['serving']} | "
          f"{on['cpu_s_per_min']:.3f} | {on['rss_mib']:.0f} | {on['threads']} |")
    print("\n| request | ms (client, end to end, median) |")
    print("|---|---|")
    print(f"| warm model | {on['warm_ms']:.2f} |")
    print(f"| model unloaded while idle (first request: load on demand + run; {on['unloaded_n']} models) "
          f"| {on['unloaded_ms']:.1f} |")
    print(f"| of which waiting for the load (server event wait_ms) | {on['on_demand_wait_ms']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"off": off, "on": on, "budget_bytes": budget}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
