#!/usr/bin/env python3
"""Latency of the inspection solution (examples/inspection), per path and per stage, measured
with `inferloop perf` against `inferloop serve` over REST (JSON), batch 1, concurrency 1.

    .venv/bin/python bench/pipelines/inspection_perf.py [--inferloop build/inferloop] [--duration 2]

Rows (p50 / p99 in ms, throughput):
  inspection, ok part       the screen path: decode + resize + screen + verdict (fine skipped)
  inspection, defect part   the full path: + fine + occlusion heatmap (65 passes) + PNG overlay
  preprocess                one JPEG decoded into the 64x64 and 128x128 tensors
  screen, fine              the models alone on their preprocessed tensors
  explain                   the occlusion heatmap alone
Prints the CPU's ISA path (INFERLOOP_ISA as the server saw it) and the machine's core count with
the table, and the issue's aim for the screen path (p50 <= 17 ms on 2 cores).
"""
import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from serve_harness import Server  # noqa: E402
import tritonclient.http as httpclient  # noqa: E402

REPO = os.path.join(ROOT, "examples", "inspection", "model_repository")
HELDOUT = os.path.join(ROOT, "examples", "inspection", "data", "heldout")


def jpeg(name):
    with open(os.path.join(HELDOUT, name), "rb") as f:
        return f.read()


def write_inputs(d, **arrays):
    os.makedirs(d, exist_ok=True)
    for name, a in arrays.items():
        np.save(os.path.join(d, name + ".npy"), a)
    return d


def perf(inferloop, port, model, data, duration):
    out = os.path.join(data, "perf.json")
    subprocess.run([inferloop, "perf", "--url", f"http://127.0.0.1:{port}", "--model", model, "--input-data", data,
                    "--batch-size", "1", "--concurrency-range", "1", "--duration", str(duration), "--binary", "--json", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        p = json.load(f)["points"][0]
    return p["latency_p50_us"] / 1000, p["latency_p99_us"] / 1000, p["throughput_req_per_s"], p["errors"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--duration", type=float, default=2)
    args = ap.parse_args()
    labels = json.load(open(os.path.join(HELDOUT, "labels.json")))["images"]
    tmp = tempfile.mkdtemp(prefix="inspection_perf_")
    rows = []
    try:
        with Server(os.path.abspath(args.inferloop), REPO, "--threads", "2") as srv:
            c = httpclient.InferenceServerClient(srv.http_url)

            def run(model, blob):
                inp = httpclient.InferInput("IMAGE", [1, 1], "BYTES")
                inp.set_data_from_numpy(np.array([[blob]], dtype=np.object_))
                return c.infer(model, [inp])

            ok = next(e["file"] for e in labels if e["label"] == 0 and run("inspection", jpeg(e["file"])).as_numpy("FINE_PROBS") is None)
            defect = next(e["file"] for e in labels if e["label"] == 1 and run("inspection", jpeg(e["file"])).as_numpy("HEATMAP") is not None)
            pre = run("preprocess", jpeg(defect))
            img64, img128 = pre.as_numpy("image64")[0], pre.as_numpy("image128")[0]
            as_bytes = lambda b: np.array([b], dtype=f"S{len(b)}")  # noqa: E731
            cases = [
                ("inspection, ok part (screen path)", "inspection", {"IMAGE": as_bytes(jpeg(ok))}),
                ("inspection, defect part (full path)", "inspection", {"IMAGE": as_bytes(jpeg(defect))}),
                ("preprocess (decode + 2 resizes)", "preprocess", {"IMAGE": as_bytes(jpeg(defect))}),
                ("screen (64x64)", "screen", {"image": img64}),
                ("fine (128x128)", "fine", {"image": img128}),
                ("explain (65 fine passes + PNG)", "explain", {"image": img128, "raw": as_bytes(jpeg(defect))}),
            ]
            for i, (label, model, arrays) in enumerate(cases):
                d = write_inputs(os.path.join(tmp, str(i)), **arrays)
                rows.append((label,) + perf(args.inferloop, srv.http_port, model, d, args.duration))
            srv.terminate()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    isa = os.environ.get("INFERLOOP_ISA", "default (the CPU's best)")
    print(f"inspection pipeline, REST binary, batch 1, concurrency 1; {os.cpu_count()} cores; INFERLOOP_ISA={isa}")
    print(f"{'path / stage':40s} {'p50 ms':>8s} {'p99 ms':>8s} {'req/s':>8s} {'errors':>6s}")
    for label, p50, p99, rps, err in rows:
        print(f"{label:40s} {p50:8.2f} {p99:8.2f} {rps:8.1f} {err:6d}")
    print(f"aim: screen path p50 <= 17 ms on 2 cores: {'met' if rows[0][1] <= 17 else 'NOT met'} ({rows[0][1]:.2f} ms)")


if __name__ == "__main__":
    main()
