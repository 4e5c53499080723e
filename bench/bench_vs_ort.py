"""Runs the model zoo through inferloop and ONNX Runtime side by side and prints a markdown table.

    .venv/bin/python bench/bench_vs_ort.py [--models resnet50,bert] [--iterations N] [--warmup N]
                                           [--quick] [--rounds R] [--inferloop build/inferloop]

Needs bench/models/ (make it with: /usr/bin/python3 bench/make_zoo.py; ct_lesion_unet, the CT template's
model, is copied from examples/ct with seeded inputs and has no PyTorch outputs). For every model, batch in
(1, 8) and threads in (1, 2), it runs `inferloop bench` and bench/ort_bench.py, each in its own
process (so peak RSS is per process, measured the same way: VmHWM), alternately: in round r the
engine that goes first alternates, and the table shows the median over rounds of each engine's p50.
Before a model's rows at batch B, one untimed `inferloop bench` process fills the tuning cache file
(INFERLOOP_TUNING_CACHE, default a fresh file for this run) for those shapes, as a deployed
server's cache would be. Both get the same warmup and iterations and the zoo's saved inputs (inputs_b<B>/), and both save the
outputs of their last timed run, which are compared with PyTorch's (outputs_b<B>/):
  abs err = max |y - y_torch| over all elements of all outputs
  rel err = max over outputs of  max |y - y_torch| / max |y_torch|  (error relative to the output's scale)
Node counts: the original graph, and the graph `inferloop optimize MODEL -o OUT` writes (n/a when
the command is absent). ratio = inferloop p50 / ORT p50 (below 1: inferloop is faster).
With INFERLOOP_ISA=avx512 or avx2, both engines run under bench/isa_mask.py's CPUID mask, so ORT
runs the kernels it has on a CPU without AMX / without AVX-512 (INFERLOOP_ANCHOR_UNMASKED=1: not).
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile

import numpy as np

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
MODELS_DIR = os.path.join(BENCH_DIR, "models")
ZOO = ("resnet50", "mobilenet_v2", "bert", "dlrm", "unet3d")
# Models from elsewhere in the repository, copied into MODELS_DIR/<name>/ on first use with
# inputs drawn from a fixed seed (no PyTorch outputs: their error columns read n/a).
CT_UNET = os.path.join(REPO, "examples", "ct", "model_repository", "lesion_unet", "1", "model.onnx")
EXTRA = {"ct_lesion_unet": (CT_UNET, "volume", (1, 32, 64, 64))}  # the CT template's 3-D U-Net window


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_json(cmd, timeout):
    """Runs cmd; returns (parsed JSON of its last stdout line, None) or (None, error text)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return None, err[:200]
    lines = [l for l in p.stdout.strip().splitlines() if l.startswith("{")]
    if not lines:
        return None, "no JSON in output"
    return json.loads(lines[-1]), None


def prepare_extra(name, batches):
    """Makes MODELS_DIR/<name>/ for an EXTRA model: model.onnx and inputs_b<B>/ (seeded normal values)."""
    src, input_name, dims = EXTRA[name]
    model_dir = os.path.join(MODELS_DIR, name)
    os.makedirs(model_dir, exist_ok=True)
    model = os.path.join(model_dir, "model.onnx")
    if not os.path.exists(model):
        import shutil
        shutil.copyfile(src, model)
    for b in batches:
        d = os.path.join(model_dir, f"inputs_b{b}")
        if not os.path.exists(os.path.join(d, input_name + ".npy")):
            os.makedirs(d, exist_ok=True)
            x = np.random.default_rng(b).standard_normal((b,) + dims).astype(np.float32)
            np.save(os.path.join(d, input_name + ".npy"), x)


def count_nodes(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    return len(m.graph.node)


def optimized_node_count(inferloop, model, workdir, timeout):
    helptext = subprocess.run([inferloop, "--help"], capture_output=True, text=True).stdout
    if "optimize" not in helptext:
        return None, "no optimize command"
    out = os.path.join(workdir, "optimized.onnx")
    p = subprocess.run([inferloop, "optimize", model, "-o", out], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0 or not os.path.exists(out):
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return count_nodes(out), None


def compare(ref_dir, got_dir):
    """(abs err, rel err) over every output saved in ref_dir, or raises with a message."""
    worst_abs, worst_rel = 0.0, 0.0
    for f in sorted(os.listdir(ref_dir)):
        ref = np.load(os.path.join(ref_dir, f)).astype(np.float64)
        path = os.path.join(got_dir, f)
        if not os.path.exists(path):
            raise RuntimeError(f"output {f[:-4]} missing")
        got = np.load(path).astype(np.float64)
        if got.shape != ref.shape:
            raise RuntimeError(f"output {f[:-4]} shape {got.shape}, PyTorch {ref.shape}")
        err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
        if np.isnan(got).any() and not np.isnan(ref).any():
            err = float("inf")
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / scale if scale > 0 else err)
    return worst_abs, worst_rel


def bench_pair(args, model_dir, batch, threads, workdir):
    """Runs both engines args.rounds times, alternating; returns {engine: result dict}."""
    model = os.path.join(model_dir, "model.onnx")
    inputs = os.path.join(model_dir, f"inputs_b{batch}")
    common = ["--threads", str(threads), "--batch", str(batch), "--iterations", str(args.iterations),
              "--warmup", str(args.warmup), "--inputs", inputs]
    cmds = {
        "inferloop": [args.inferloop, "bench", model] + common,
        "ort": [sys.executable, os.path.join(BENCH_DIR, "ort_bench.py"), model] + common,
    }
    runs = {"inferloop": [], "ort": []}
    errors = {}
    for r in range(args.rounds):
        order = ["inferloop", "ort"] if r % 2 == 0 else ["ort", "inferloop"]
        for engine in order:
            if engine in errors:
                continue
            out_dir = os.path.join(workdir, f"{engine}_b{batch}_t{threads}_r{r}")
            cmd = cmds[engine] + ["--save-outputs", out_dir]
            log("  $ " + " ".join(shlex.quote(c) for c in cmd))
            res, err = run_json(cmd, args.timeout)
            if err:
                errors[engine] = err
                log(f"    {engine} failed: {err}")
                continue
            ref_dir = os.path.join(model_dir, f"outputs_b{batch}")
            res["abs_err"] = res["rel_err"] = res["compare_error"] = None
            try:
                if os.path.isdir(ref_dir):  # absent for an EXTRA model: nothing to compare with
                    res["abs_err"], res["rel_err"] = compare(ref_dir, out_dir)
            except Exception as e:  # noqa: BLE001  (reported in the table)
                res["compare_error"] = str(e)
            log(f"    {engine}: p50 {res['p50_ms']:.2f} ms, peak RSS {res['peak_rss_mb']:.0f} MB, "
                f"rel err {res['rel_err'] if res['rel_err'] is not None else res.get('compare_error') or 'n/a'}")
            runs[engine].append(res)
    summary = {}
    for engine, rs in runs.items():
        if not rs:
            summary[engine] = {"error": errors.get(engine, "not run")}
            continue
        errs_abs = [x["abs_err"] for x in rs if x["abs_err"] is not None]
        errs_rel = [x["rel_err"] for x in rs if x["rel_err"] is not None]
        summary[engine] = {
            "p50_ms": statistics.median(x["p50_ms"] for x in rs),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
            "rss_base_mb": min(x.get("rss_base_mb", 0) for x in rs),
            "session_create_ms": statistics.median(x["session_create_ms"] for x in rs),
            "abs_err": max(errs_abs) if errs_abs else None,
            "rel_err": max(errs_rel) if errs_rel else None,
            "compare_error": next((x["compare_error"] for x in rs if x["compare_error"]), None),
            "runs": rs,
        }
    return summary


def fmt_err(s):
    if "error" in s:
        return "FAIL"
    if s["abs_err"] is None:
        return "n/a (no PyTorch outputs)" if s["compare_error"] is None else "mismatch: " + s["compare_error"]
    return f"{s['abs_err']:.1e} / {s['rel_err']:.1e}"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    known = ZOO + tuple(EXTRA)
    ap.add_argument("--models", default=",".join(known), help="comma-separated subset of: " + ", ".join(known))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per row (median p50 over rounds)")
    ap.add_argument("--quick", action="store_true", help="warmup 1, iterations 3, rounds 1")
    ap.add_argument("--inferloop", default=os.environ.get("INFERLOOP", os.path.join(REPO, "build", "inferloop")))
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per engine run")
    ap.add_argument("--json-out", help="also write every measurement to this JSON file")
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.iterations, args.rounds = 1, 3, 1
    if not os.access(args.inferloop, os.X_OK):
        sys.exit(f"error: no inferloop binary at {args.inferloop} (build it, or pass --inferloop PATH)")
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in known]
    if unknown:
        sys.exit(f"error: unknown model(s) {', '.join(unknown)}; known: {', '.join(known)}")
    batches = [int(b) for b in args.batches.split(",")]
    for name in models:
        if name in EXTRA:
            prepare_extra(name, batches)
    threads_list = [int(t) for t in args.threads.split(",")]
    import onnxruntime
    sys.path.insert(0, BENCH_DIR)
    import isa_mask
    mask_note = isa_mask.apply_from_isa_env(os.path.dirname(os.path.abspath(args.inferloop)))
    log(mask_note)

    rows, raw = [], []
    with tempfile.TemporaryDirectory(prefix="bench_vs_ort_") as work:
        # Autotuning winners persist across the per-row processes, in a cache file of this run
        # (unless INFERLOOP_TUNING_CACHE names one): the priming process of each model and batch
        # tunes, the timed ones reuse the winners, as a restarted server would.
        os.environ.setdefault("INFERLOOP_TUNING_CACHE", os.path.join(work, "tuning_cache.tsv"))
        for name in models:
            model_dir = os.path.join(MODELS_DIR, name)
            model = os.path.join(model_dir, "model.onnx")
            if not os.path.exists(model):
                log(f"{name}: {model} missing; run /usr/bin/python3 bench/make_zoo.py")
                continue
            mwork = os.path.join(work, name)
            os.makedirs(mwork)
            before = count_nodes(model)
            after, why = optimized_node_count(args.inferloop, model, mwork, args.timeout)
            nodes = f"{before} → {after}" if after is not None else f"{before} → n/a"
            log(f"{name}: nodes {nodes}" + (f" ({why})" if why else ""))
            for b in batches:
                # Autotune this model's shapes once, untimed, into the tuning cache file, as a
                # deployed server's cache file would hold them: the timed processes then load the
                # winners instead of timing candidates (which also raises that process's peak RSS).
                prime = [args.inferloop, "bench", model, "--batch", str(b), "--warmup", "0", "--iterations", "1",
                         "--inputs", os.path.join(model_dir, f"inputs_b{b}")]
                log("  $ " + " ".join(shlex.quote(c) for c in prime) + "   (tuning cache)")
                _, prime_err = run_json(prime, args.timeout)
                if prime_err:
                    log(f"    tuning-cache run failed: {prime_err} (the timed runs will tune themselves)")
                for t in threads_list:
                    log(f"{name} batch {b} threads {t}")
                    s = bench_pair(args, model_dir, b, t, mwork)
                    il, ort = s["inferloop"], s["ort"]
                    ratio = f"{il['p50_ms'] / ort['p50_ms']:.2f}" if "error" not in il and "error" not in ort else "n/a"
                    p50 = lambda x: f"{x['p50_ms']:.2f}" if "error" not in x else "FAIL"  # noqa: E731
                    rss = lambda x: f"{x['peak_rss_mb']:.0f}" if "error" not in x else "-"  # noqa: E731
                    rows.append([name, b, t, p50(il), p50(ort), ratio, fmt_err(il), fmt_err(ort), rss(il), rss(ort), nodes])
                    raw.append({"model": name, "batch": b, "threads": t, "nodes_before": before, "nodes_after": after,
                                "inferloop": il, "ort": ort})
                    for engine, x in (("inferloop", il), ("ORT", ort)):
                        if "error" in x:
                            log(f"    {engine} error: {x['error']}")

    cmd = " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])
    print(f"`{cmd}` — {datetime.date.today()}, {cpu_name()}, {os.cpu_count()} CPUs, onnxruntime "
          f"{onnxruntime.__version__}, warmup {args.warmup}, iterations {args.iterations}, rounds {args.rounds}; "
          f"INFERLOOP_ISA={os.environ.get('INFERLOOP_ISA', 'default')}; {mask_note}\n")
    header = ["model", "batch", "threads", "inferloop p50 ms", "ORT p50 ms", "ratio", "err inferloop (abs / rel)",
              "err ORT (abs / rel)", "peak RSS inferloop MB", "peak RSS ORT MB", "nodes before → after"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    bases = {e: [x[e]["rss_base_mb"] for x in raw if "error" not in x[e]] for e in ("inferloop", "ort")}
    print("\nerr: abs = max |y - y_torch|; rel = max |y - y_torch| / max |y_torch| (per output, worst output). "
          "ratio = inferloop p50 / ORT p50. Peak RSS = VmHWM of each engine's own process; resident size before "
          f"session creation: inferloop ~{min(bases['inferloop'] or [0]):.0f} MB, ORT (Python + onnxruntime "
          f"imported) ~{min(bases['ort'] or [0]):.0f} MB. Node counts include Constant nodes.")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
