"""INT8 side by side: inferloop FP32, inferloop INT8 and ONNX Runtime INT8, one table.

    .venv/bin/python bench/quant_bench.py [--models resnet50,bert] [--threads 2] [--rounds 3]
                                          [--iterations 20] [--warmup 3] [--zoo DIR]
                                          [--inferloop build/inferloop] [--omp-passive] [--variant qdq|dyn|mixed]

With INFERLOOP_ISA=avx512 or avx2, every process (ORT too) runs under bench/isa_mask.py's CPUID
mask: ORT runs the kernels it runs on a CPU without AMX / without AVX-512, next to inferloop's
path for that CPU (INFERLOOP_ANCHOR_UNMASKED=1 runs ORT on the whole CPU instead).

For each model: the FP32 zoo model (DIR/<name>/model.onnx, default bench/models) and its QDQ
version made by bench/make_qdq_models.py (bench/models/<name>_qdq/model.onnx), inputs
DIR/<name>/inputs_b1 (batch 1). Every round runs, each in its own process and in a rotating
order: `inferloop bench` on the FP32 model, `inferloop bench` on the QDQ model (level 2: the QDQ
patterns fused into int8 kernels) and bench/ort_bench.py on the QDQ model (--variant dyn: the
dynamically quantized bench/models/<name>_dyn/model.onnx of make_qdq_models.py --dynamic instead); the table shows the
median over rounds of each one's p50 (ms). A first, untimed `inferloop bench` of each model fills
the tuning cache (INFERLOOP_TUNING_CACHE, default a fresh file for this run).
  int8/fp32  = inferloop INT8 p50 / inferloop FP32 p50   (target <= 0.5)
  il/ort     = inferloop INT8 p50 / ORT INT8 p50         (target <= 1.0)
  --omp-passive sets OMP_WAIT_POLICY=PASSIVE for every process: OpenMP threads (inferloop's pool
  and oneDNN run on libgomp) sleep instead of spinning when idle. On a machine whose cores are
  busy with other work, spinning threads steal time from the ones doing work and multi-threaded
  latency collapses; ORT (its own thread pool) is not affected by the variable.
  cos        = cosine similarity of inferloop INT8's outputs to inferloop FP32's (all outputs
               flattened together), and of ORT INT8's to inferloop FP32's.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

import numpy as np

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
MODELS_DIR = os.path.join(BENCH_DIR, "models")

sys.path.insert(0, BENCH_DIR)
from bench_vs_ort import run_json  # noqa: E402
import isa_mask  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def cosine(dir_a, dir_b):
    a, b = [], []
    for f in sorted(os.listdir(dir_a)):
        if f.endswith(".npy") and os.path.exists(os.path.join(dir_b, f)):
            a.append(np.load(os.path.join(dir_a, f)).astype(np.float64).ravel())
            b.append(np.load(os.path.join(dir_b, f)).astype(np.float64).ravel())
    if not a:
        return float("nan")
    a, b = np.concatenate(a), np.concatenate(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--zoo", default=MODELS_DIR)
    ap.add_argument("--inferloop", default=os.path.join(REPO, "build", "inferloop"))
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--variant", default="qdq", help="qdq, dyn, or any suffix X of a bench/models/<name>_X folder (e.g. mixed)")
    ap.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE for every process")
    args = ap.parse_args()
    mask_note = isa_mask.apply_from_isa_env(os.path.dirname(os.path.abspath(args.inferloop)))
    log(mask_note)
    if args.omp_passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    work = tempfile.mkdtemp(prefix="quant_bench_")
    os.environ.setdefault("INFERLOOP_TUNING_CACHE", os.path.join(work, "tuning_cache.tsv"))
    rows = []
    for name in args.models.split(","):
        fp32 = os.path.join(args.zoo, name, "model.onnx")
        qdq = os.path.join(MODELS_DIR, name + "_" + args.variant, "model.onnx")
        inputs = os.path.join(args.zoo, name, "inputs_b1")
        for p in (fp32, qdq, inputs):
            if not os.path.exists(p):
                sys.exit(f"{p} missing (bench/make_zoo.py, then bench/make_qdq_models.py)")
        common = ["--threads", str(args.threads), "--iterations", str(args.iterations), "--warmup", str(args.warmup),
                  "--inputs", inputs]
        cmds = {
            "il_fp32": [args.inferloop, "bench", fp32] + common,
            "il_int8": [args.inferloop, "bench", qdq] + common,
            "ort_int8": [sys.executable, os.path.join(BENCH_DIR, "ort_bench.py"), qdq] + common,
        }
        for m in (fp32, qdq):  # prime the tuning cache
            run_json([args.inferloop, "bench", m, "--threads", str(args.threads), "--iterations", "1", "--warmup", "0",
                      "--inputs", inputs], args.timeout)
        p50 = {k: [] for k in cmds}
        outs = {k: os.path.join(work, name, k) for k in cmds}
        order = list(cmds)
        for r in range(args.rounds):
            for engine in order[r % len(order):] + order[:r % len(order)]:
                cmd = cmds[engine] + ["--save-outputs", outs[engine]]
                log("  $ " + " ".join(shlex.quote(c) for c in cmd))
                res, err = run_json(cmd, args.timeout)
                if res is None:
                    sys.exit(f"{engine} failed on {name}: {err}")
                p50[engine].append(res["p50_ms"])
        med = {k: statistics.median(v) for k, v in p50.items()}
        rows.append((name, med, cosine(outs["il_int8"], outs["il_fp32"]), cosine(outs["ort_int8"], outs["il_fp32"])))
    print(f"batch 1, {args.threads} threads, median of {args.rounds} rounds of p50 ({args.iterations} iterations, "
          f"{args.warmup} warmup){', OMP_WAIT_POLICY=PASSIVE' if args.omp_passive else ''}; "
          f"INFERLOOP_ISA={os.environ.get('INFERLOOP_ISA', 'default')}; {mask_note}\n")
    if args.variant != "qdq":
        print(f"INT8 models: bench/models/<name>_{args.variant}\n")
    print("| model | inferloop FP32 ms | inferloop INT8 ms | ORT INT8 ms | int8/fp32 | il/ort | cos IL INT8 | cos ORT INT8 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, m, c_il, c_ort in rows:
        print(f"| {name} | {m['il_fp32']:.2f} | {m['il_int8']:.2f} | {m['ort_int8']:.2f} | "
              f"{m['il_int8'] / m['il_fp32']:.2f} | {m['il_int8'] / m['ort_int8']:.2f} | {c_il:.4f} | {c_ort:.4f} |")


if __name__ == "__main__":
    main()
