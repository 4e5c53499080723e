"""Session-create and first-run time of each zoo model: cold, with a warm tuning cache, and from
the saved optimized model (what a restarted server pays).

    .venv/bin/python bench/create_time.py [--models resnet50,bert] [--threads 1] [--inferloop build/inferloop]

For each model, each in its own `inferloop bench --warmup 0 --iterations 1` process:
  cold         an empty tuning cache file: the first run of each GEMM/conv shape times the candidates
  tuned        the same command again: the cache file now holds every winner
  saved plan   `inferloop optimize MODEL -o OPT` once, then OPT at --level 0 with the warm cache:
               no graph passes, no timing
Columns: create = Session creation (load + optimize + compile) ms; first run = the first Run ms
(autotuning and weight packing happen there); load / optimize = creation phases. Prints a
markdown table.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
MODELS_DIR = os.path.join(BENCH_DIR, "models")
ZOO = ("resnet50", "mobilenet_v2", "bert", "dlrm", "unet3d")


def bench(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(shlex.quote(c) for c in cmd)} failed: {p.stderr.strip()[-300:]}")
    return json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--inferloop", default=os.path.join(REPO, "build", "inferloop"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="create_time_") as work:
        for name in [m for m in args.models.split(",") if m]:
            model = os.path.join(MODELS_DIR, name, "model.onnx")
            inputs = os.path.join(MODELS_DIR, name, "inputs_b1")
            if not os.path.exists(model):
                print(f"{name}: {model} missing; run /usr/bin/python3 bench/make_zoo.py", file=sys.stderr)
                continue
            env = dict(os.environ, INFERLOOP_TUNING_CACHE=os.path.join(work, name + "_tuning.tsv"))
            common = ["--threads", str(args.threads), "--warmup", "0", "--iterations", "1", "--inputs", inputs]
            opt = os.path.join(work, name + "_opt.onnx")
            subprocess.run([args.inferloop, "optimize", model, "-o", opt], check=True, capture_output=True)
            runs = {
                "cold": bench([args.inferloop, "bench", model] + common, env),
                "tuned": bench([args.inferloop, "bench", model] + common, env),
                "saved plan": bench([args.inferloop, "bench", opt, "--level", "0"] + common, env),
            }
            for kind, r in runs.items():
                rows.append([name, kind, f"{r['session_create_ms']:.0f}", f"{r['create_load_ms']:.0f}",
                             f"{r['create_optimize_ms']:.0f}", f"{r['first_run_ms']:.0f}",
                             f"{r['session_create_ms'] + r['first_run_ms']:.0f}"])
                print(f"{name} {kind}: create {r['session_create_ms']:.0f} ms, first run {r['first_run_ms']:.0f} ms",
                      file=sys.stderr, flush=True)
    header = ["model", "start", "create ms", "load ms", "optimize ms", "first run ms", "create + first run ms"]
    print(f"`{' '.join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])}` ({args.threads} thread(s))\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
