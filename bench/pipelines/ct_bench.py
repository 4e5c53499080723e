#!/usr/bin/env python3
"""The CT analysis pipeline (examples/ct) against the same pipeline written in Python, side by side.

    .venv/bin/python bench/pipelines/ct_bench.py [--inferloop build/inferloop] [--series DIR] [--runs 5]

A 128-slice 256x256 series (bench/ct_pipeline_reference.py --make-series; made once under
/tmp/ct_bench_series unless --series names another) goes through:
  inferloop   `inferloop serve --threads N` on examples/ct/model_repository, one ct_analysis
              request over REST (tritonclient, binary data): read + sort + HU + resample to 1 mm
              (dicom_series) -> sliding-window U-Net (sliding_window, 4 windows per call through
              lesion_unet's scheduler) -> lesions, report and overlay (lesion_report); client wall time
  python      bench/ct_pipeline_reference.py's run_pipeline in this process: pydicom, numpy,
              ONNX Runtime with intra_op_num_threads = N (ORT's default on this machine: its cores)
              and 4 windows per run, scipy.ndimage.label; its own total (session creation excluded,
              as the server's model is loaded before)
Runs alternate (inferloop, python, inferloop, ...) after one warm-up each; prints medians, the
ratio python / inferloop (> 1: inferloop is faster), the python stages' medians, the ISA path and
the lesion volumes both found (they must agree).
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from serve_harness import Server  # noqa: E402
import tritonclient.http as httpclient  # noqa: E402


def load_reference():
    spec = importlib.util.spec_from_file_location("ct_ref", os.path.join(ROOT, "bench", "ct_pipeline_reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--series", default="/tmp/ct_bench_series")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    if not os.path.isdir(args.series) or not any(f.endswith(".dcm") for f in os.listdir(args.series)):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ct_pipeline_reference.py"), "--make-series",
                        args.series], check=True)
    files = sorted(os.path.join(args.series, f) for f in os.listdir(args.series) if f.endswith(".dcm"))
    blobs = [open(f, "rb").read() for f in files]
    ref = load_reference()
    with open(os.path.join(ROOT, "examples", "ct", "preprocessing.json")) as f:
        pre = json.load(f)
    model = os.path.join(ROOT, "examples", "ct", "model_repository", "lesion_unet", "1", "model.onnx")
    il_times, py_times, py_stages = [], [], []
    with Server(os.path.abspath(args.inferloop), os.path.join(ROOT, "examples", "ct", "model_repository"),
                "--threads", str(args.threads)) as srv:
        c = httpclient.InferenceServerClient(srv.http_url, network_timeout=900.0, connection_timeout=900.0)

        def run_inferloop():
            inp = httpclient.InferInput("DICOM_FILES", [len(blobs)], "BYTES")
            inp.set_data_from_numpy(np.array(blobs, dtype=np.object_))
            t0 = time.perf_counter()
            r = c.infer("ct_analysis", [inp])
            dt = time.perf_counter() - t0
            return dt, json.loads(r.as_numpy("REPORT")[0])

        def run_python():
            result, _ = ref.run_pipeline(args.series, model, pre, args.threads, 4)
            return result["timings_ms"]["total"] / 1e3, result

        _, il_report = run_inferloop()
        _, py_result = run_python()
        for _ in range(args.runs):
            il_times.append(run_inferloop()[0])
            dt, res = run_python()
            py_times.append(dt)
            py_stages.append(res["timings_ms"])
        srv.terminate()
    il, py = statistics.median(il_times), statistics.median(py_times)
    isa = os.environ.get("INFERLOOP_ISA", "default (the CPU's best)")
    print(f"CT series: {len(files)} files, {os.cpu_count()} cores, {args.threads} threads each; INFERLOOP_ISA={isa}")
    print(f"{'pipeline':34s} {'median s':>9s} {'runs':>5s}")
    print(f"{'inferloop serve (REST, C++)':34s} {il:9.2f} {len(il_times):5d}")
    print(f"{'python (pydicom+numpy+ORT+scipy)':34s} {py:9.2f} {len(py_times):5d}")
    print(f"ratio python / inferloop: {py / il:.2f}x")
    stages = {k: statistics.median(s[k] for s in py_stages) for k in py_stages[0] if k not in ("session", "total")}
    print("python stages (median ms): " + ", ".join(f"{k} {v:.0f}" for k, v in stages.items()))
    print("lesion volumes mm3, inferloop: " + ", ".join(f"{f['volume_mm3']:.0f}" for f in il_report["findings"]))
    print("lesion volumes mm3, python:    " + ", ".join(f"{f['volume_mm3']:.0f}" for f in py_result["findings"]))


if __name__ == "__main__":
    main()
