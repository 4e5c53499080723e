"""Response cache bench (issue 21), side by side in one run, on the zoo's ResNet-50.

One `inferloop serve`, one repository holding the same model file twice: `resnet50` (no cache)
and `resnet50_cached` (`response_cache { enable: true }`). Both have max_batch_size 8 and no
dynamic batching (no queue delay), one instance.

1. Repeated request: one fixed image (batch 1) sent again and again by `inferloop perf`
   (REST binary, concurrency 1) to each model, alternating rounds; p50 and p90 of each, the
   medians over the rounds. The cached model answers all but its first request from the cache.
2. Zipf mix: N distinct images (an input set, DIR/<sample>/image.npy) replayed by
   `inferloop perf --input-distribution zipf:S` against each model. For resnet50_cached the
   hit rate measured by the server (statistics extension: cache_hit / (cache_hit + cache_miss)
   over the run) is printed next to the hit rate the draws imply: with a cache that holds every
   sample (N x 4 KB of logits here), every request of a sample after its first is a hit, so
   expected = sum over samples of (requests - 1) / all requests, from perf's per-sample counts
   (`requests_per_sample` in its JSON). The Zipf pmf's expectation for the same number of
   requests, 1 - sum_i (1 - (1 - p_i)^R) / R, is printed too.

The server needs the response cache (issue 21's serve piece: `--response-cache-bytes` and
`response_cache { enable: true }`). Without it the bench still runs: resnet50_cached is served
without the cache block, the table says "server has no response cache", and the hit rate is
only the expected one.

    /usr/bin/python3 bench/make_zoo.py --models resnet50   # once: bench/models/resnet50
    .venv/bin/python bench/response_cache_bench.py [--zoo bench/models] [--samples 64] [--zipf 1.0]
        [--rounds 3] [--duration 2] [--concurrency 1] [--json results.json]

Every command it runs is printed before it runs.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from serve_harness import Server, get_json  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
import adaptive_bench  # noqa: E402  (cpu_line)

MODELS = ("resnet50", "resnet50_cached")
NO_CACHE = "server has no response cache"


def model_config(name, cached):
    cfg = (f'name: "{name}"\nmax_batch_size: 8\ninstance_group [ {{ count: 1 }} ]\n'
           'input [ { name: "image" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]\n'
           'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]\n')
    return cfg + ("response_cache { enable: true }\n" if cached else "")


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def server_has_response_cache(inferloop):
    """The serve piece adds --response-cache-bytes to `inferloop serve`."""
    r = subprocess.run([inferloop, "serve", "--help"], capture_output=True, text=True, timeout=60)
    return "--response-cache-bytes" in r.stdout + r.stderr


def make_repository(repo, model_onnx, cache):
    for name in MODELS:
        os.makedirs(os.path.join(repo, name, "1"))
        os.symlink(model_onnx, os.path.join(repo, name, "1", "model.onnx"))
        with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
            f.write(model_config(name, cache and name == "resnet50_cached"))


def make_inputs(work, samples, seed):
    """One fixed image (flat DIR/image.npy) and an input set of `samples` distinct images."""
    rng = np.random.default_rng(seed)
    one = os.path.join(work, "one")
    os.makedirs(one)
    np.save(os.path.join(one, "image.npy"), rng.random((3, 224, 224), dtype=np.float32))
    mix = os.path.join(work, "mix")
    for i in range(samples):
        os.makedirs(os.path.join(mix, f"s{i:04d}"))
        np.save(os.path.join(mix, f"s{i:04d}", "image.npy"), rng.random((3, 224, 224), dtype=np.float32))
    return one, mix


def perf(a, url, model, input_data, json_path, extra=()):
    cmd = [a.inferloop, "perf", "--url", url, "--model", model, "--binary", "--input-data", input_data,
           "--concurrency-range", str(a.concurrency), "--duration", str(a.duration), "--max-windows",
           str(a.max_windows), "--json", json_path, *extra]
    r = run(cmd, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"inferloop perf failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    print(r.stdout, end="", flush=True)
    with open(json_path) as f:
        return json.load(f)


def cache_counts(port, model):
    """(cache_hit.count, cache_miss.count) of the statistics extension."""
    status, doc = get_json(port, f"/v2/models/{model}/stats")
    if status != 200:
        raise RuntimeError(f"stats of {model}: HTTP {status}: {doc}")
    s = doc["model_stats"][0]["inference_stats"]
    return s["cache_hit"]["count"], s["cache_miss"]["count"]


def expected_hit_rates(per_sample, zipf_s):
    """(from the draws, from the pmf for as many requests) for a cache holding every sample."""
    total = sum(per_sample)
    if total == 0:
        return None, None
    draws = sum(c - 1 for c in per_sample if c > 0) / total
    ranks = np.arange(1, len(per_sample) + 1, dtype=np.float64)
    p = ranks ** -zipf_s
    p /= p.sum()
    distinct = np.sum(1 - (1 - p) ** total)
    return draws, 1 - distinct / total


def repeated_request(a, url, one, work):
    rows = {m: [] for m in MODELS}
    for r in range(a.rounds):
        for m in (MODELS if r % 2 == 0 else MODELS[::-1]):
            doc = perf(a, url, m, one, os.path.join(work, "rep.json"))
            p = doc["points"][0]
            rows[m].append((p["latency_p50_us"] / 1000, p["latency_p90_us"] / 1000, p["throughput_infer_per_s"]))
    return {m: {"p50_ms": statistics.median(x[0] for x in v), "p90_ms": statistics.median(x[1] for x in v),
                "infer_per_s": statistics.median(x[2] for x in v), "rounds": len(v)} for m, v in rows.items()}


def zipf_mix(a, srv, url, mix, work, cache):
    out = {}
    dist = f"zipf:{a.zipf:g}"
    for m in MODELS:
        before = cache_counts(srv.http_port, m)
        doc = perf(a, url, m, mix, os.path.join(work, "mix.json"),
                   extra=["--input-distribution", dist, "--seed", str(a.seed)])
        after = cache_counts(srv.http_port, m)
        if doc["input_samples"] != a.samples or doc["input_distribution"] != dist:
            raise RuntimeError(f"perf reports {doc['input_samples']} samples, {doc['input_distribution']}")
        per_sample = [sum(col) for col in zip(*(p["requests_per_sample"] for p in doc["points"]))]
        p = doc["points"][0]
        hits, misses = after[0] - before[0], after[1] - before[1]
        row = {"requests": sum(per_sample), "distinct_samples": sum(1 for c in per_sample if c), "p50_ms":
               p["latency_p50_us"] / 1000, "infer_per_s": p["throughput_infer_per_s"], "cache_hits": hits,
               "cache_misses": misses, "measured_hit_rate": hits / (hits + misses) if hits + misses else None}
        row["expected_hit_rate_draws"], row["expected_hit_rate_pmf"] = expected_hit_rates(per_sample, a.zipf)
        if m == "resnet50_cached" and cache and hits + misses == 0:
            row["note"] = NO_CACHE + " (cache_hit and cache_miss did not move)"
        out[m] = row
    return out


def print_tables(a, rep, mix, cache):
    print("\n" + adaptive_bench.cpu_line() + "; server --threads 1")
    print(f"\n## Repeated request: ResNet-50, batch 1, concurrency {a.concurrency}, REST binary "
          f"(medians of {a.rounds} alternating rounds)\n")
    print("| model | p50 ms | p90 ms | infer/s |")
    print("|---|---:|---:|---:|")
    for m in MODELS:
        r = rep[m]
        print(f"| {m} | {r['p50_ms']:.3f} | {r['p90_ms']:.3f} | {r['infer_per_s']:.1f} |")
    print(f"\np50 without / with the cache: {rep['resnet50']['p50_ms'] / rep['resnet50_cached']['p50_ms']:.1f}x"
          + ("" if cache else f" ({NO_CACHE}: both uncached, the ratio is noise)"))
    print(f"\n## Zipf mix: {a.samples} images, zipf:{a.zipf:g}, seed {a.seed}, concurrency {a.concurrency}\n")
    print("| model | requests | distinct samples | infer/s | p50 ms | hit rate measured | expected (draws) "
          "| expected (pmf) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in MODELS:
        r = mix[m]
        measured = "-" if m == "resnet50" else (
            f"{r['measured_hit_rate']:.3f}" if r["measured_hit_rate"] is not None else "n/a")
        expected = ("-", "-") if m == "resnet50" or r["requests"] == 0 else (
            f"{r['expected_hit_rate_draws']:.3f}", f"{r['expected_hit_rate_pmf']:.3f}")
        print(f"| {m} | {r['requests']} | {r['distinct_samples']} | {r['infer_per_s']:.1f} | {r['p50_ms']:.3f} | "
              f"{measured} | {expected[0]} | {expected[1]} |")
    note = mix["resnet50_cached"].get("note")
    if not cache:
        print(f"\n{NO_CACHE}: `inferloop serve` has no --response-cache-bytes (issue 21's serve piece); "
              "resnet50_cached was served without `response_cache { enable: true }`, so both rows are uncached "
              "and only the expected hit rate is shown.")
    elif note:
        print(f"\n{note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--zoo", default=os.path.join(ROOT, "bench", "models"), help="make_zoo.py's output folder")
    ap.add_argument("--samples", type=int, default=64, help="distinct images in the Zipf mix")
    ap.add_argument("--zipf", type=float, default=1.0, help="the Zipf exponent S")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per perf window")
    ap.add_argument("--max-windows", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if a.samples < 1 or a.zipf <= 0 or a.rounds < 1 or a.concurrency < 1:
        sys.exit("--samples, --rounds and --concurrency must be >= 1 and --zipf > 0")
    model_onnx = os.path.abspath(os.path.join(a.zoo, "resnet50", "model.onnx"))
    if not os.path.exists(model_onnx):
        sys.exit(f"missing {model_onnx}: run /usr/bin/python3 bench/make_zoo.py --models resnet50 first")
    cache = server_has_response_cache(a.inferloop)
    if not cache:
        print(f"note: {NO_CACHE} (`{a.inferloop} serve --help` lists no --response-cache-bytes); "
              "running uncached", flush=True)
    work = tempfile.mkdtemp(prefix="inferloop_response_cache_bench_")
    try:
        repo = os.path.join(work, "repo")
        make_repository(repo, model_onnx, cache)
        one, mix = make_inputs(work, a.samples, a.seed)
        print(f"$ {a.inferloop} serve --model-repository {repo} --threads 1 (ports: free ones)", flush=True)
        srv = Server(a.inferloop, repo, timeout=600)
        url = f"http://127.0.0.1:{srv.http_port}"
        try:
            rep = repeated_request(a, url, one, work)
            mixed = zipf_mix(a, srv, url, mix, work, cache)
        finally:
            srv.terminate()
            srv.__exit__()
        print_tables(a, rep, mixed, cache)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"response_cache": cache, "samples": a.samples, "zipf": a.zipf, "seed": a.seed,
                           "concurrency": a.concurrency, "repeated_request": rep, "zipf_mix": mixed}, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
