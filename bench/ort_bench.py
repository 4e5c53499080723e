"""ONNX Runtime counterpart of `inferloop bench`: same options, same measurements, one JSON line.

    .venv/bin/python bench/ort_bench.py MODEL [--threads N] [--batch B] [--iterations N] [--warmup N]
                                        [--inputs DIR] [--shape NAME=D1,D2,...] [--dim SYMBOL=N]
                                        [--save-outputs DIR]

Session: CPUExecutionProvider, intra_op_num_threads=N (0 = ORT's default), inter_op_num_threads=1,
sequential execution, graph optimizations ORT_ENABLE_ALL. Timed: each InferenceSession.run call
(after --warmup untimed runs); percentiles are nearest-rank, as in inferloop bench. peak_rss_mb is
VmHWM of this process (Python and the onnxruntime module included; rss_base_mb is the resident
size after the imports, before the session is created). Made-up inputs follow inferloop bench:
floats uniform in [-1, 1), integers 1, bools true; symbolic dim 0 = --batch.
"""
import argparse
import json
import math
import os
import sys
import time


def proc_status_mb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return -1.0


def percentile(sorted_samples, p):
    rank = math.ceil(p / 100.0 * len(sorted_samples))
    return sorted_samples[min(max(rank, 1), len(sorted_samples)) - 1]


def parse_shape(spec):
    sep = spec.find("=")
    if sep < 0:
        sep = spec.rfind(":")
    if sep <= 0 or sep + 1 == len(spec):
        raise ValueError(f"--shape expects NAME=D1,D2,..., got '{spec}'")
    return spec[:sep], [int(d) for d in spec[sep + 1:].split(",")]


NP_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(int16)": "int16", "tensor(uint16)": "uint16",
    "tensor(int32)": "int32", "tensor(uint32)": "uint32", "tensor(int64)": "int64", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}


def make_feeds(np, session, args):
    inputs = session.get_inputs()
    names = {i.name for i in inputs}
    overrides = {}
    for spec in args.shape:
        name, shape = parse_shape(spec)
        if name not in names:
            raise ValueError(f"--shape names '{name}', which is not an input of the model (inputs: {', '.join(sorted(names))})")
        overrides[name] = shape
    symbols = {}
    for spec in args.dim:
        k, _, v = spec.partition("=")
        if not k or not v.isdigit():
            raise ValueError(f"--dim expects SYMBOL=N, got '{spec}'")
        symbols[k] = int(v)
    rng = np.random.default_rng(1234)
    feeds, batch = {}, None
    for inp in inputs:
        if args.inputs:
            path = os.path.join(args.inputs, inp.name.replace("/", "_").replace("\\", "_").replace(":", "_") + ".npy")
            if not os.path.exists(path):
                raise ValueError(f"input '{inp.name}': no file {path}")
            value = np.load(path)
        else:
            if inp.type not in NP_TYPES:
                raise ValueError(f"input '{inp.name}' has type {inp.type}, which ort_bench cannot make up")
            if inp.name in overrides:
                shape = overrides[inp.name]
            else:
                shape = []
                for d, dim in enumerate(inp.shape):
                    if isinstance(dim, int) and dim >= 0:
                        shape.append(dim)
                    elif isinstance(dim, str) and dim in symbols:
                        shape.append(symbols[dim])
                    elif d == 0:
                        shape.append(args.batch)
                    else:
                        raise ValueError(f"input '{inp.name}' dim {d} ('{dim}') is not fixed; pass --dim or --shape")
            dtype = NP_TYPES[inp.type]
            if dtype.startswith("float"):
                value = rng.uniform(-1.0, 1.0, shape).astype(dtype)
            else:
                value = np.ones(shape, dtype=dtype)
        if batch is None and value.ndim >= 1:
            batch = value.shape[0]
        feeds[inp.name] = value
    return feeds, batch or 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("-b", "--batch", type=int, default=1)
    ap.add_argument("-n", "--iterations", type=int, default=20)
    ap.add_argument("-w", "--warmup", type=int, default=3)
    ap.add_argument("--inputs")
    ap.add_argument("-s", "--shape", action="append", default=[])
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--save-outputs")
    args = ap.parse_args()
    if args.iterations < 1 or args.warmup < 0 or args.threads < 0 or args.batch < 1:
        sys.exit("error: --iterations >= 1, --warmup >= 0, --threads >= 0, --batch >= 1")
    if args.inputs and not os.path.isdir(args.inputs):
        sys.exit(f"error: --inputs {args.inputs}: no such folder")

    import numpy as np
    import onnxruntime as ort

    rss_base = proc_status_mb("VmRSS")
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    session = ort.InferenceSession(args.model, sess_options=so, providers=["CPUExecutionProvider"])
    create_ms = (time.perf_counter() - t0) * 1e3
    rss_after_create = proc_status_mb("VmRSS")
    try:
        feeds, batch = make_feeds(np, session, args)
    except ValueError as e:
        sys.exit(f"error: {e}")

    times, first_run_ms, outputs = [], 0.0, None
    for i in range(args.warmup + args.iterations):
        a = time.perf_counter()
        outputs = session.run(None, feeds)
        ms = (time.perf_counter() - a) * 1e3
        if i == 0:
            first_run_ms = ms
        if i >= args.warmup:
            times.append(ms)
    peak_rss = proc_status_mb("VmHWM")

    if args.save_outputs:
        os.makedirs(args.save_outputs, exist_ok=True)
        for meta, value in zip(session.get_outputs(), outputs):
            np.save(os.path.join(args.save_outputs, meta.name.replace("/", "_").replace(":", "_") + ".npy"), value)

    s = sorted(times)
    threads = args.threads if args.threads > 0 else (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    r3 = lambda x: round(x, 3)  # noqa: E731
    print(json.dumps({
        "model": args.model, "engine": "onnxruntime " + ort.__version__, "batch": batch, "threads": threads,
        "iterations": args.iterations, "warmup": args.warmup, "inputs": args.inputs or "random",
        "p50_ms": r3(percentile(s, 50)), "p90_ms": r3(percentile(s, 90)), "p99_ms": r3(percentile(s, 99)),
        "mean_ms": r3(sum(times) / len(times)), "min_ms": r3(s[0]), "max_ms": r3(s[-1]), "first_run_ms": r3(first_run_ms),
        "throughput": r3(batch * 1000.0 * len(times) / sum(times)), "peak_rss_mb": r3(peak_rss),
        "rss_base_mb": r3(rss_base), "rss_after_create_mb": r3(rss_after_create), "session_create_ms": r3(create_ms),
    }), flush=True)


if __name__ == "__main__":
    main()
