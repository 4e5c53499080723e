#!/usr/bin/env python3
"""Busy neighbours: inferloop and ONNX Runtime at 2 threads on a machine whose cores are also
taken by CPU-bound processes (plain busy loops, one per CPU by default), side by side in one run.

    .venv/bin/python bench/busy_neighbours.py [--models resnet50,unet3d,dlrm] [--batch 8]
        [--threads 2] [--busy N] [--rounds 3] [--iterations 10] [--inferloop build/inferloop]
        [--llm MODEL.gguf,...] [--llm-tokens 32]

Needs the zoo (/usr/bin/python3 bench/make_zoo.py --models resnet50,unet3d,dlrm). For each model,
rounds alternate between: inferloop as the CLI runs it (libgomp's spin-wait limited, see
src/cli/omp_spin_limit.h), inferloop with libgomp's default spin-wait (GOMP_SPINCOUNT=300000, the
behaviour before the limit), and ONNX Runtime (bench/ort_bench.py, its default thread pool), each
`--iterations` timed runs on the zoo's inputs at --batch, each in its own process, while --busy
busy loops run. The table shows the median over rounds of each one's p50 (ms) and the worst
(largest) p50 of any round; ratio = inferloop / ORT (below 1: inferloop is faster), of the medians
and of the worst rounds. With --busy 0 it measures the quiet machine instead.

--llm (GGUF files; --models "" to run only these): LLM decode with and without the busy loops.
Each round runs, on the quiet machine and then next to --busy busy loops, `inferloop generate`
(greedy, a 32-token prompt, --llm-tokens generated, its own decode timing) and llama.cpp
(scripts/llama_cpp_anchor.py's full-strength build, in one child process per model, as
bench/llm_bench.py runs both: the same prompt ids, the
same number of greedy steps, timed the same way), alternating which goes first. The table gives
each engine's decode tokens/s quiet and busy (medians and the worst busy round) and what it keeps
under load (busy / quiet, of the medians): inferloop should keep at least as much as llama.cpp.
With INFERLOOP_ISA=avx512 or avx2, every process (ORT, llama.cpp) runs under bench/isa_mask.py's
CPUID mask, as on a CPU without AMX / without AVX-512, and llama.cpp is its build for that CPU
(scripts/setup_llama_cpp_isa.sh), as in bench/llm_bench.py.
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


class BusyLoops:
    """n CPU-bound processes for the duration of a with block."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        self.procs = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(self.n)]
        for b in self.procs:
            b.start()
        return self

    def __exit__(self, *exc):
        for b in self.procs:
            b.terminate()
        for b in self.procs:
            b.join()


def llm_rows(a):
    """Decode tok/s of inferloop (`inferloop generate`) and llama.cpp (its build for this path, in a
    child process), quiet and next to the busy loops: bench/llm_bench.py's runners and prompt."""
    import llm_bench  # loads llama.cpp's Python binding: only when --llm is given
    isa = os.environ.get("INFERLOOP_ISA", "default")
    isa = isa if isa in llm_bench.ISA_ENV else "default"
    rows = []
    for model in [m for m in a.llm.split(",") if m]:
        _, ids = llm_bench.prompt_ids(model, 32)
        lc = llm_bench.LlamaCppChild(model, a.threads, llm_bench.ISA_LLAMA_BUILD[isa])
        res = {(e, b): [] for e in ("inferloop", "llama.cpp") for b in ("quiet", "busy")}
        try:
            for r in range(a.rounds):
                for phase, n_busy in (("quiet", 0), ("busy", a.busy)):
                    with BusyLoops(n_busy):
                        order = [("inferloop", lambda: llm_bench.inferloop_single(a.inferloop, model, ids, a.llm_tokens,
                                                                                   a.threads, isa)),
                                 ("llama.cpp", lambda: lc.single(ids, a.llm_tokens))]
                        if r % 2:
                            order.reverse()
                        for name, fn in order:
                            res[(name, phase)].append(fn()["decode_tps"])
                print(f"{os.path.basename(model)} round {r + 1}: " +
                      ", ".join(f"{e} {b} {v[-1]:.2f}" for (e, b), v in res.items()), file=sys.stderr, flush=True)
        finally:
            lc.close()
        rows.append((model, res, lc.build))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,unet3d,dlrm")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--llm", default="", help="GGUF files (comma-separated): decode quiet and busy")
    ap.add_argument("--llm-tokens", type=int, default=32)
    a = ap.parse_args()
    sys.path.insert(0, BENCH)
    import isa_mask
    mask_note = isa_mask.apply_from_isa_env(os.path.dirname(os.path.abspath(a.inferloop)))
    print(mask_note, file=sys.stderr, flush=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    env_cli = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env_spin = dict(env_cli, GOMP_SPINCOUNT="300000")
    rows = []
    with BusyLoops(a.busy):
        for model in [m for m in a.models.split(",") if m]:
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
            rows.append((model, res))
    llm = llm_rows(a)
    print(f"\n{a.busy} busy loops on {os.cpu_count()} CPUs ({cpu}), --threads {a.threads}, batch {a.batch}, "
          f"{a.rounds} alternating rounds of {a.iterations} runs, median p50 ms; "
          f"INFERLOOP_ISA={os.environ.get('INFERLOOP_ISA', 'default')}; {mask_note}\n")
    fmt = lambda v: f"{v:.1f}" if v >= 10 else f"{v:.3f}"  # noqa: E731
    if rows:
        print("| model | inferloop | inferloop, libgomp default spin | ONNX Runtime | inferloop / ORT "
              "| worst round: inferloop / ORT |")
        print("|---|---:|---:|---:|---:|---:|")
    for model, res in rows:
        m = {k: statistics.median(v) for k, v in res.items()}
        w = {k: max(v) for k, v in res.items()}
        print(f"| {model} | {fmt(m['inferloop'])} | {fmt(m['inferloop_spin'])} | {fmt(m['ort'])} | "
              f"{m['inferloop'] / m['ort']:.2f} | {fmt(w['inferloop'])} / {fmt(w['ort'])} = "
              f"{w['inferloop'] / w['ort']:.2f} |")
    if llm:
        print(f"\nLLM decode, tokens/s (a 32-token prompt, {a.llm_tokens} generated, greedy; llama.cpp: its "
              f"{llm[0][2]} build, scripts/llama_cpp_anchor.py), quiet and next to the busy loops:\n")
        print("| model | engine | quiet | busy (median) | busy (worst round) | kept under load |")
        print("|---|---|---:|---:|---:|---:|")
    for model, res, _ in llm:
        for e in ("inferloop", "llama.cpp"):
            q, b = statistics.median(res[(e, "quiet")]), statistics.median(res[(e, "busy")])
            print(f"| {os.path.basename(model)} | {e} | {q:.2f} | {b:.2f} | {min(res[(e, 'busy')]):.2f} | "
                  f"{b / q:.0%} |")


if __name__ == "__main__":
    main()
