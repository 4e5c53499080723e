"""Per-run overhead of inferloop's Python module next to onnxruntime's, in one process.

    PYTHONPATH=<inferloop package> .venv/bin/python bench/python_overhead.py [--runs N] [--threads-runs N] [--rounds N] [--inferloop build/inferloop]

1. Overhead: a tiny model (Relu over float32[1,16]) run back to back through each module's
   InferenceSession.run(None, feed); the median over blocks of 200 runs of the time per run, and
   p90. The engines alternate block by block so that both see the same machine load.
2. In and out without copies: Relu over float32[1024,1024] (4 MiB in, 4 MiB out), with a
   C-contiguous feed (inferloop reads it in place) and a transposed one (copied first), median
   per run for both modules; inferloop's copy counters show what was viewed and copied.
3. Threads: MatMul float32[64,256] x [256,256] with intra_op_num_threads=1, one session shared by
   1 and by 8 Python threads; runs per second and the speedup (GIL released during runs: the
   speedup is bounded by the CPUs this process may use, printed). With --inferloop BIN, the same
   model through `inferloop bench --concurrency 1|8` (the C++ API, no Python) for reference. The
   medians of --rounds rounds, the modules taking turns round by round (one shared machine's
   noise moves single figures by a third).
Prints a markdown table per part, and one JSON line with every figure at the end.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import inferloop
import onnxruntime


def relu_model(shape):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def matmul_model(m, k, n):
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def session(module, model, threads=0):
    so = module.SessionOptions()
    so.intra_op_num_threads = threads
    return module.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])


def time_block(sess, feed, n):
    run = sess.run
    t0 = time.perf_counter()
    for _ in range(n):
        run(None, feed)
    return (time.perf_counter() - t0) / n * 1e6  # us per run


def alternate(sessions, feed, blocks, block):
    """{name: [us per run of each block]}, the engines taking turns block by block."""
    samples = {name: [] for name in sessions}
    for name, s in sessions.items():  # warm up
        time_block(s, feed, block)
    for _ in range(blocks):
        for name, s in sessions.items():
            samples[name].append(time_block(s, feed, block))
    return samples


def machine_line():
    """The CPU, its vector features and the ISA path asked for (INFERLOOP_ISA), for the tables."""
    flags, model = set(), "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            elif line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
    have = [x for x in ("avx2", "avx512f", "avx512_vnni", "amx_tile", "amx_int8") if x in flags]
    isa = os.environ.get("INFERLOOP_ISA", "") or "default (best the CPU has)"
    return f"CPU: {model}; features: {' '.join(have)}; INFERLOOP_ISA: {isa}"


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def threads_rate(sess, feed, threads, runs_each):
    barrier = threading.Barrier(threads + 1)

    def work():
        barrier.wait()
        for _ in range(runs_each):
            sess.run(None, feed)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    return threads * runs_each / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20000, help="runs per engine for the overhead figure")
    ap.add_argument("--threads-runs", type=int, default=400, help="runs per thread in the threads part")
    ap.add_argument("--inferloop", help="the inferloop CLI, for the C++ API's own 1 vs 8 threads figure")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the threads part (medians are printed)")
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    engines = {"inferloop": inferloop, "onnxruntime": onnxruntime}
    result = {"inferloop": inferloop.__version__, "onnxruntime": onnxruntime.__version__, "cpus": cpus,
              "machine": machine_line()}
    print(result["machine"] + "\n")

    # 1. Overhead on a tiny model.
    block = 200
    tiny = relu_model([1, 16])
    feed = {"x": np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)}
    sessions = {name: session(mod, tiny, 1) for name, mod in engines.items()}
    samples = alternate(sessions, feed, max(args.runs // block, 5), block)
    print(f"## Per-run time, Relu float32[1,16] ({args.runs} runs each, blocks of {block}; us per run)\n")
    print("| module | median | p90 |\n|---|---|---|")
    for name, v in samples.items():
        result[f"tiny_{name}_median_us"] = round(statistics.median(v), 2)
        result[f"tiny_{name}_p90_us"] = round(pct(v, 90), 2)
        print(f"| {name} | {statistics.median(v):.2f} | {pct(v, 90):.2f} |")
    result["tiny_ratio"] = round(result["tiny_inferloop_median_us"] / result["tiny_onnxruntime_median_us"], 3)
    print(f"\ninferloop / onnxruntime: {result['tiny_ratio']}\n")

    # 2. A big feed in place vs copied.
    big = relu_model([1024, 1024])
    x = np.random.default_rng(2).standard_normal((1024, 1024)).astype(np.float32)
    feeds = {"contiguous": {"x": x}, "transposed (copied)": {"x": np.ascontiguousarray(x.T).T}}
    sessions = {name: session(mod, big, 1) for name, mod in engines.items()}
    print("## Relu float32[1024,1024] (4 MiB in and out; us per run, median of 15 blocks of 10)\n")
    print("| feed | inferloop | onnxruntime |\n|---|---|---|")
    for label, f in feeds.items():
        s = alternate(sessions, f, 15, 10)
        key = "contiguous" if label == "contiguous" else "transposed"
        for name in engines:
            result[f"big_{key}_{name}_median_us"] = round(statistics.median(s[name]), 1)
        print(f"| {label} | {statistics.median(s['inferloop']):.1f} | {statistics.median(s['onnxruntime']):.1f} |")
    result["big_copy_counts"] = sessions["inferloop"].copy_counts()
    print(f"\ninferloop copy counts: {result['big_copy_counts']}\n")

    # 3. One session, 1 vs 8 Python threads.
    mm = matmul_model(64, 256, 256)
    feed = {"x": np.random.default_rng(3).standard_normal((64, 256)).astype(np.float32)}
    print(f"## MatMul [64,256]x[256,256], intra_op_num_threads=1, one session ({cpus} CPUs; runs/s, "
          f"median of {args.rounds} rounds, the modules taking turns)\n")
    print("| module | 1 thread | 8 threads | speedup |\n|---|---|---|---|")
    mm_path = None
    with tempfile.TemporaryDirectory() as d:
        if args.inferloop:
            mm_path = os.path.join(d, "matmul.onnx")
            with open(mm_path, "wb") as f:
                f.write(mm)
        sessions = {name: session(mod, mm, 1) for name, mod in engines.items()}
        rates = {name: {1: [], 8: []} for name in list(engines) + (["cpp"] if mm_path else [])}
        for s in sessions.values():
            time_block(s, feed, 50)
        for _ in range(args.rounds):
            for name, s in sessions.items():
                rates[name][1].append(threads_rate(s, feed, 1, args.threads_runs * 2))
                rates[name][8].append(threads_rate(s, feed, 8, args.threads_runs))
            if mm_path:  # the C++ API through `inferloop bench`, no Python
                for c in (1, 8):
                    n = args.threads_runs * (2 if c == 1 else 1)
                    p = subprocess.run([args.inferloop, "bench", mm_path, "--threads", "1", "--concurrency", str(c),
                                        "--iterations", str(n), "--warmup", "20"], capture_output=True, text=True,
                                       check=True)
                    j = json.loads(p.stdout.strip().splitlines()[-1])
                    rates["cpp"][c].append(j["throughput"] / j.get("batch", 1))  # samples/s -> runs/s
    labels = {"inferloop": "inferloop", "onnxruntime": "onnxruntime", "cpp": "C++ API (inferloop bench)"}
    for name, r in rates.items():
        one, eight = statistics.median(r[1]), statistics.median(r[8])
        result[f"threads_{name}_1"] = round(one, 1)
        result[f"threads_{name}_8"] = round(eight, 1)
        result[f"threads_{name}_speedup"] = round(eight / one, 2)
        print(f"| {labels[name]} | {one:.0f} | {eight:.0f} | {eight / one:.2f}x |")
    print()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
