"""`inferloop perf` on the zoo, side by side with the anchors, in one run (docs/PERFORMANCE.md):

1. Sweeps with plots: ResNet-50 (bench/models/resnet50) and the DLRM-like recommender
   (bench/models/dlrm) served by `inferloop serve` with dynamic batching; `inferloop perf`
   sweeps concurrency and writes CSV, JSON and an SVG latency-vs-throughput plot per model.
2. Agreement with Triton's perf_analyzer (scripts/setup_perf_analyzer.sh): the same model,
   protocol and concurrency measured by both tools, alternating; throughput and latency ratios.
3. Generator overhead against wrk: req/s of `inferloop perf` and of wrk on the trivial `simple`
   model at 64 connections, alternating.

    /usr/bin/python3 bench/make_zoo.py            # once: bench/models (needs python3-torch)
    bash scripts/setup_perf_analyzer.sh          # once: .venv/perf_analyzer
    apt-get install wrk                          # bench only
    .venv/bin/python bench/perf_sweeps.py [--out docs/perf] [--rounds 3]

Every command it runs is printed before it runs.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from serve_harness import Server  # noqa: E402
import serve_bench  # noqa: E402

INFERLOOP = os.path.join(ROOT, "build", "inferloop")
PERF_ANALYZER = os.path.join(ROOT, ".venv", "perf_analyzer", "perf_analyzer")

CONFIGS = {
    "resnet50": 'name: "resnet50"\nmax_batch_size: 8\ndynamic_batching { }\ninstance_group [ { count: 1 } ]\n',
    "dlrm": 'name: "dlrm"\nmax_batch_size: 64\ndynamic_batching { }\ninstance_group [ { count: 2 } ]\n',
}


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def inferloop_perf(url, model, concurrency, duration, out_prefix=None, plot=False, extra=()):
    cmd = [INFERLOOP, "perf", "--url", url, "--model", model, "--concurrency-range", concurrency,
           "--duration", str(duration), "--max-windows", "6", *extra]
    if out_prefix:
        cmd += ["--csv", out_prefix + ".csv", "--json", out_prefix + ".json"]
        if plot:
            cmd += ["--plot", out_prefix + ".svg"]
    r = run(cmd, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"inferloop perf failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def perf_points(json_path):
    with open(json_path) as f:
        return json.load(f)["points"]


def perf_analyzer(url_hostport, protocol, model, concurrency, interval_ms, attempts=3):
    """perf_analyzer's figures for one point; it prints none when it found no stable windows
    (then it is run again, at most `attempts` times)."""
    for _ in range(attempts - 1):
        try:
            return perf_analyzer_once(url_hostport, protocol, model, concurrency, interval_ms)
        except LookupError as e:
            print(f"perf_analyzer: {e}; again", flush=True)
    return perf_analyzer_once(url_hostport, protocol, model, concurrency, interval_ms)


def perf_analyzer_once(url_hostport, protocol, model, concurrency, interval_ms):
    r = run([PERF_ANALYZER, "-m", model, "-u", url_hostport, "-i", protocol, "--concurrency-range", str(concurrency),
             "--measurement-interval", str(interval_ms), "--stability-percentage", "10", "--max-trials", "10",
             "--percentile", "99", "--input-data", "zero"], timeout=1800)
    out = r.stdout + r.stderr
    if r.returncode != 0 and "Failed to obtain stable measurement" not in out:
        raise RuntimeError(f"perf_analyzer failed ({r.returncode}):\n{out[-3000:]}")
    if not re.search(r"Throughput: ([0-9.]+) infer/sec", out):
        raise LookupError("no measurement in its output: " + out.strip().splitlines()[-1])
    thr = float(re.search(r"Throughput: ([0-9.]+) infer/sec", out).group(1))
    p50 = float(re.search(r"p50 latency: ([0-9]+) usec", out).group(1)) / 1000
    p99 = float(re.search(r"p99 latency: ([0-9]+) usec", out).group(1)) / 1000
    return {"throughput": thr, "p50_ms": p50, "p99_ms": p99, "stable": "Failed to obtain stable" not in out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "perf"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-sweeps", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="inferloop_perf_sweeps_")
    try:
        repo = os.path.join(work, "repo")
        for name, cfg in CONFIGS.items():
            src = os.path.join(ROOT, "bench", "models", name, "model.onnx")
            if not os.path.exists(src):
                sys.exit(f"missing {src}: run /usr/bin/python3 bench/make_zoo.py first")
            os.makedirs(os.path.join(repo, name, "1"))
            os.symlink(src, os.path.join(repo, name, "1", "model.onnx"))
            with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
                f.write(cfg)
        shutil.copytree(os.path.join(ROOT, "examples", "model_repository", "simple"), os.path.join(repo, "simple"))
        print(f"$ {INFERLOOP} serve --model-repository {repo} --threads 1 (ports: free ones)", flush=True)
        srv = Server(INFERLOOP, repo, timeout=600)
        http = f"http://127.0.0.1:{srv.http_port}"
        results = {}

        # 1. Sweeps with plots.
        if not a.skip_sweeps:
            for model, conc, dur in (("resnet50", "1:4:1", 3), ("dlrm", "8:64:8", 2)):
                prefix = os.path.join(a.out, f"sweep_{model}")
                print(inferloop_perf(http, model, conc, dur, prefix, plot=True, extra=["--binary"]), flush=True)
                results[f"sweep_{model}"] = perf_points(prefix + ".json")

        # 2. perf_analyzer agreement: same points, alternating tools.
        agree = []
        # Low concurrency: on this 2-CPU machine client and server share the CPUs, and
        # perf_analyzer's client (a thread per request in flight, libcurl) takes more of them
        # than inferloop perf's, so under saturation the two measure different servers.
        for model, conc, proto in (("dlrm", 1, "http"), ("dlrm", 4, "http"), ("resnet50", 1, "http"),
                                   ("dlrm", 4, "grpc")):
            url = f"grpc://127.0.0.1:{srv.grpc_port}" if proto == "grpc" else http
            hostport = f"127.0.0.1:{srv.grpc_port if proto == 'grpc' else srv.http_port}"
            ours, theirs = [], []
            for _ in range(a.rounds):
                j = os.path.join(work, "pt.json")
                # Both tools send zeros (perf_analyzer's random int64 data are not valid table
                # indices) as binary tensor data (perf_analyzer's REST default).
                inferloop_perf(url, model, str(conc), 2, os.path.join(work, "pt"),
                               extra=["--input-data", "zero"] + (["--binary"] if proto == "http" else []))
                p = perf_points(j)[0]
                ours.append({"throughput": p["throughput_infer_per_s"], "p50_ms": p["latency_p50_us"] / 1000,
                             "p99_ms": p["latency_p99_us"] / 1000})
                theirs.append(perf_analyzer(hostport, proto, model, conc, 2000))
            row = {"model": model, "protocol": proto, "concurrency": conc}
            for k in ("throughput", "p50_ms", "p99_ms"):
                row["inferloop_" + k] = statistics.median(x[k] for x in ours)
                row["perf_analyzer_" + k] = statistics.median(x[k] for x in theirs)
            agree.append(row)
            print("agreement:", json.dumps(row), flush=True)
        results["perf_analyzer_agreement"] = agree

        # 3. wrk vs inferloop perf on simple, 64 connections.
        lua = os.path.join(work, "simple.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = '
                    + json.dumps(serve_bench.simple_body()) + "\n")
        wrk_rps, perf_rps = [], []
        for _ in range(a.rounds):
            r = run(["wrk", "-t2", "-c64", "-d6s", "-s", lua, f"{http}/v2/models/simple/infer"], timeout=120)
            wrk_rps.append(float(re.search(r"Requests/sec:\s+([\d.]+)", r.stdout).group(1)))
            inferloop_perf(http, "simple", "64", 2, os.path.join(work, "w"))
            perf_rps.append(perf_points(os.path.join(work, "w.json"))[0]["throughput_infer_per_s"])
        results["wrk"] = {"wrk_rps": statistics.median(wrk_rps), "inferloop_perf_rps": statistics.median(perf_rps)}
        rc = srv.terminate()
        srv.__exit__()

        print("\n## perf_analyzer agreement (medians of", a.rounds, "alternating rounds)\n")
        print("| model | protocol | concurrency | infer/s inferloop perf | infer/s perf_analyzer | ratio | p50 ms (ours / PA) | p99 ms (ours / PA) |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for r in agree:
            print(f"| {r['model']} | {r['protocol']} | {r['concurrency']} | {r['inferloop_throughput']:.0f} | "
                  f"{r['perf_analyzer_throughput']:.0f} | {r['inferloop_throughput'] / r['perf_analyzer_throughput']:.2f} | "
                  f"{r['inferloop_p50_ms']:.2f} / {r['perf_analyzer_p50_ms']:.2f} | {r['inferloop_p99_ms']:.2f} / {r['perf_analyzer_p99_ms']:.2f} |")
        w = results["wrk"]
        print(f"\n## generator overhead: simple, 64 connections: wrk {w['wrk_rps']:.0f} req/s, inferloop perf "
              f"{w['inferloop_perf_rps']:.0f} infer/s, ratio {w['inferloop_perf_rps'] / w['wrk_rps']:.2f}")
        with open(os.path.join(a.out, "perf_sweeps_summary.json"), "w") as f:
            json.dump(results, f, indent=1)
        print(f"server exit code {rc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
