#!/usr/bin/env python3
"""Side by side: `inferloop bench` of each model at every --precision mode (one process each, in
one run), with p50 latency, peak RSS, the session's weight memory and each output's cosine
similarity to the fp32 run's; mode "ort" is ONNX Runtime's float32 run of the same model
(bench/ort_bench.py), for the side-by-side ratio. Prints a Markdown table (docs/QUANTIZATION.md "Precision modes").

    .venv/bin/python bench/precision_modes.py --inferloop build/inferloop \\
        --models bench/models/resnet50 bench/models/bert [--modes fp32 bf16 fp16 ort] [-t 2] [-n 20] \\
        [--rounds R]

With --rounds R every mode runs R times, the modes interleaved (fp32, bf16, fp16, fp32, ...), and
the table shows the median of the R p50s (a busy machine's slow spells then hit every mode alike).

Each model folder holds model.onnx and inputs_b1/<input>.npy (bench/make_zoo.py).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def cosine(a, b):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(a @ b / (na * nb))


def bench(inferloop, model_dir, mode, threads, iterations, out_dir):
    if mode == "ort":
        cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_bench.py"),
               os.path.join(model_dir, "model.onnx"), "--inputs", os.path.join(model_dir, "inputs_b1"),
               "-t", str(threads), "-n", str(iterations), "-w", "3", "--save-outputs", out_dir]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        res["precision"] = "ORT fp32"
        res["weight_bytes"] = float("nan")
        return res, r.stderr
    cmd = [inferloop, "bench", os.path.join(model_dir, "model.onnx"), "--inputs", os.path.join(model_dir, "inputs_b1"),
           "-t", str(threads), "-n", str(iterations), "-w", "3", "--precision", mode, "--save-outputs", out_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferloop", required=True)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--modes", nargs="+", default=["fp32", "bf16", "fp16", "ort"])
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-n", "--iterations", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="il_precision_") as tmp:
        for model_dir in args.models:
            name = os.path.basename(os.path.normpath(model_dir))
            outputs, results = {}, {mode: [] for mode in args.modes}
            for _ in range(args.rounds):
                for mode in args.modes:
                    out_dir = os.path.join(tmp, name, mode)
                    res, err = bench(args.inferloop, model_dir, mode, args.threads, args.iterations, out_dir)
                    results[mode].append(res)
                    outputs[mode] = {f[:-4]: np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))}
                    for line in err.splitlines():
                        if line.startswith("note:"):
                            print(f"{name} {mode}: {line}", file=sys.stderr)
            ref = outputs.get("fp32")
            for mode in args.modes:
                cos = min(cosine(outputs[mode][k], ref[k]) for k in ref) if ref else float("nan")
                res = results[mode]
                rows.append((name, mode, res[-1]["precision"], float(np.median([r["p50_ms"] for r in res])),
                             max(r["peak_rss_mb"] for r in res), res[-1]["weight_bytes"] / 2**20, cos))
    base = {r[0]: r for r in rows if r[1] == "fp32"}
    print(f"threads {args.threads}, batch 1, {args.iterations} timed runs, median p50 of {args.rounds} round(s)\n")
    print("| model | --precision | in force | p50 ms | vs fp32 | peak RSS MB | weights MB | min output cosine vs fp32 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, mode, eff, p50, rss, wmb, cos in rows:
        ratio = p50 / base[name][3] if name in base else float("nan")
        print(f"| {name} | {mode} | {eff} | {p50:.2f} | {ratio:.2f}x | {rss:.0f} | {wmb:.1f} | {cos:.6f} |")


if __name__ == "__main__":
    main()
