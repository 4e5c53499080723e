"""The adaptive closed loop, measured (docs/ADAPTIVE.md; issue 16's "must show"), in one run:

  1. Load step (bench/adaptive/load_step.py): ResNet-50 with a latency SLO under an open-loop load
     that steps 20% -> 150% -> 20% of fp32's capacity: static fp32 against the adaptive loop,
     p50/p99 per step, the variants used and their accuracy loss; timeline plot
     docs/adaptive_load_step.svg.
  2. Noisy neighbour (bench/adaptive/noisy_neighbour.py): one model flooded at 3x its capacity,
     the other's p99 with fair CPU sharing on and off.
  3. Idle (bench/adaptive/idle.py): CPU seconds per minute and resident memory of an idle server
     with 10 models before and after the idle policy; the first request to an unloaded model.

Usage (after scripts/build.sh; once: /usr/bin/python3 bench/adaptive/make_probe_resnet50.py):
    .venv/bin/python bench/adaptive_bench.py [--inferloop build/inferloop] [--parts step,neighbour,idle]
                                             [--step-seconds 30] [--json out.json]
Prints the CPU features and ISA path next to each table (INFERLOOP_ISA is passed to the servers).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import isa_mask  # cpu_flags

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "adaptive"))
ROOT = os.path.dirname(HERE)


def cpu_line():
    flags = isa_mask.cpu_flags()
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    have = [x for x in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16") if x in flags]
    isa = os.environ.get("INFERLOOP_ISA", "") or "default (best the CPU has)"
    return f"CPU: {model}, {os.cpu_count()} CPUs; features: {' '.join(have)}; INFERLOOP_ISA: {isa}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--parts", default="step,neighbour,idle")
    ap.add_argument("--step-seconds", type=float, default=30)
    ap.add_argument("--json")
    args = ap.parse_args()
    inferloop = os.path.abspath(args.inferloop)
    parts = args.parts.split(",")
    print(cpu_line(), flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="adaptive_bench_") as work:
        if "step" in parts:
            import load_step
            out = load_step.run(inferloop, work, step_seconds=args.step_seconds,
                                svg=os.path.join(ROOT, "docs", "adaptive_load_step.svg"))
            results["load_step"] = out
            print("\n## Load step\n" + load_step.report(out), flush=True)
        for part, script, title in (("neighbour", "noisy_neighbour.py", "Noisy neighbour"), ("idle", "idle.py", "Idle")):
            if part not in parts:
                continue
            print(f"\n## {title}", flush=True)
            out_json = os.path.join(work, part + ".json")
            subprocess.run([sys.executable, os.path.join(HERE, "adaptive", script), "--inferloop", inferloop,
                            "--json", out_json], check=True)
            with open(out_json) as f:
                results[part] = json.load(f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
