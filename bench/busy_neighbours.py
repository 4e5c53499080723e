#!/usr/bin/env python3
"""Busy neighbours: inferloop and ONNX Runtime at 2 threads on a machine whose cores are also
taken by CPU-bound processes (plain busy loops, one per CPU by default), side by side in one run.

    .venv/bin/python bench/busy_neighbours.py [--models resnet50,unet3d,dlrm] [--batch 8]
        [--threads 2] [--busy N] [--rounds 3] [--iterations 10] [--inferloop build/inferloop]

Needs the zoo (/usr/bin/python3 bench/make_zoo.py --models resnet50,unet3d,dlrm). For each model,
rounds alternate between: inferloop as the CLI runs it (libgomp's spin-wait limited, see
src/cli/omp_spin_limit.h), inferloop with libgomp's default spin-wait (GOMP_SPINCOUNT=300000, the
behaviour before the limit), and ONNX Runtime (bench/ort_bench.py, its default thread pool), each
`--iterations` timed runs on the zoo's inputs at --batch, each in its own process, while --busy
busy loops run. The table shows the median over rounds of each one's p50 (ms); ratio = inferloop /
ORT (below 1: inferloop is faster). With --busy 0 it measures the quiet machine instead.
"""
import argparse
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)


def busy_loop():
    os.nice(0)
    while True:
        pass


def p50(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()[-400:]}")
    line = [ln for ln in p.stdout.strip().splitlines() if ln.startswith("{")][-1]
    return json.loads(line)["p50_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,unet3d,dlrm")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    a = ap.parse_args()
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    env_cli = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env_spin = dict(env_cli, GOMP_SPINCOUNT="300000")
    busy = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(a.busy)]
    for b in busy:
        b.start()
    try:
        rows = []
        for model in a.models.split(","):
            path = os.path.join(BENCH, "models", model, "model.onnx")
            inputs = os.path.join(BENCH, "models", model, f"inputs_b{a.batch}")
            if not os.path.exists(path):
                sys.exit(f"missing {path}: run /usr/bin/python3 bench/make_zoo.py --models {model}")
            common = ["-t", str(a.threads), "-n", str(a.iterations), "-w", "2", "--inputs", inputs]
            il = [a.inferloop, "bench", path] + common
            ort = [sys.executable, os.path.join(BENCH, "ort_bench.py"), path] + common
            res = {"inferloop": [], "inferloop_spin": [], "ort": []}
            for r in range(a.rounds):
                order = [("inferloop", il, env_cli), ("inferloop_spin", il, env_spin), ("ort", ort, env_cli)]
                if r % 2:
                    order.reverse()
                for name, cmd, env in order:
                    res[name].append(p50(cmd, env))
                print(f"{model} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in res.items()),
                      file=sys.stderr, flush=True)
            rows.append((model, {k: statistics.median(v) for k, v in res.items()}))
    finally:
        for b in busy:
            b.terminate()
    print(f"\n{a.busy} busy loops on {os.cpu_count()} CPUs ({cpu}), --threads {a.threads}, batch {a.batch}, "
          f"{a.rounds} alternating rounds of {a.iterations} runs, median p50 ms; "
          f"INFERLOOP_ISA={os.environ.get('INFERLOOP_ISA', 'default')}\n")
    print("| model | inferloop | inferloop, libgomp default spin | ONNX Runtime | inferloop / ORT |")
    print("|---|---:|---:|---:|---:|")
    for model, m in rows:
        ms = {k: f"{v:.1f}" if v >= 10 else f"{v:.3f}" for k, v in m.items()}
        print(f"| {model} | {ms['inferloop']} | {ms['inferloop_spin']} | {ms['ort']} | "
              f"{m['inferloop'] / m['ort']:.2f} |")


if __name__ == "__main__":
    main()
