#!/usr/bin/env python3
"""Time to first token for a long shared prompt prefix, by where its KV blocks come from: computed
(cold prefill), the prefix cache in memory, its disk tier (--llm-prefix-cache-dir), and the disk
tier of a restarted server. With the model's prefill and decode tokens/s for context.

    .venv/bin/python bench/llm_prefix_cache.py [--inferloop build/inferloop] [--threads 2] [--rounds 3]
                                               [--prefix-tokens 2000] [--model FILE]

Model: the 'ctx4k' shape of scripts/make_llm_models.py (about 58M parameters, context 4096, Q8_0
weights, random), made in a temporary folder unless --model is given. One `inferloop serve` with
--llm-prefix-cache-dir in a temporary folder and --llm-prefix-cache-mb sized to keep one prefix's
idle blocks in memory. Each round, with fresh random prefixes P and Q of --prefix-tokens tokens
(text of made-up words; the exact count is the server's usage.prompt_tokens):
  cold    P asked for the first time: every block computed;
  memory  P again: its whole blocks from the in-memory prefix cache;
          Q asked (cold too, a second cold sample): P's idle blocks are evicted to the disk tier;
  disk    P again once the writer is idle: its blocks read back from disk (when the engine judges
          reading cheaper than prefill: the table says how many prompt tokens came from disk).
Then the server stops (SIGTERM: its cached blocks are written) and a new one starts on the same
folder: `restart` is each round's P asked once more. Every request: max_tokens 1, greedy, timed
from send to the complete response (= time to first token). The disk files are in the OS page
cache (nothing drops it), as they are on a server that just wrote them. Prefill and decode tokens/s:
`inferloop generate` on the same model (2000-token prompt, 64 tokens). The table shows medians.
"""
import argparse
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, HERE)
import adaptive_bench  # noqa: E402  (cpu_line)
import isa_mask  # noqa: E402  (cpu_flags)
import serve_harness as h  # noqa: E402

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def make_model(path):
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random", path,
                    "--shape", "ctx4k", "--type", "Q8_0", "--seed", "1"], check=True, stdout=subprocess.DEVNULL)


def words(rng, n):
    return " ".join("".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 3))) for _ in range(n))


def ask(server, prompt):
    t0 = time.perf_counter()
    status, _, body = h.post_json(server.http_port, "/v1/completions",
                                  {"model": "m", "prompt": prompt, "max_tokens": 1, "temperature": 0}, timeout=600)
    dt = time.perf_counter() - t0
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {body}")
    return dt, body["usage"]


def disk_hits(server):
    return h.metric_sum(h.metrics(server.http_port), "inferloop_llm_prefix_cache_hit_tokens_total", model="m",
                        tier="disk")


def wait_writer_idle(server, timeout=60):
    """Until inferloop_llm_prefix_cache_disk_bytes stops moving (the writer is done)."""
    last, end = None, time.time() + timeout
    while time.time() < end:
        now = h.metric_sum(h.metrics(server.http_port), "inferloop_llm_prefix_cache_disk_bytes", model="m")
        if now == last and now > 0:
            return
        last = now
        time.sleep(0.5)


def calibrate(server, rng, want):
    """Words per token of this vocab (asked once with a throwaway prompt)."""
    _, usage = ask(server, words(rng, 400))
    return 400 * want / usage["prompt_tokens"]


def generate_speed(inferloop, model, threads, prompt_tokens):
    rng = random.Random(7)
    ids = ",".join(str(rng.randint(300, 31999)) for _ in range(prompt_tokens))
    err = subprocess.run([inferloop, "generate", model, "--prompt-ids", ids, "-n", "64", "--temp", "0", "--ignore-eos",
                          "-t", str(threads)], check=True, capture_output=True, text=True).stderr
    m = re.search(r"prompt: (\d+) tokens in ([0-9.]+) s .*generation: (\d+) tokens in ([0-9.]+) s", err)
    return int(m.group(1)) / float(m.group(2)), int(m.group(3)) / float(m.group(4))


def isa_line():
    """The CPU features and which LLM kernels they select (docs/LLM.md, Kernels)."""
    flags = isa_mask.cpu_flags()
    isa = os.environ.get("INFERLOOP_ISA", "")
    path = isa or ("AMX for prefill steps, AVX-512 VNNI for decode" if "amx_int8" in flags else
                   "AVX-512 VNNI" if "avx512_vnni" in flags else "AVX2" if "avx2" in flags else "scalar")
    return f"{adaptive_bench.cpu_line()}; LLM kernels: {path}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prefix-tokens", type=int, default=2000)
    ap.add_argument("--model", help="a GGUF file with a context over --prefix-tokens (default: made)")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="inferloop_prefix_bench_")
    try:
        repo, kv = os.path.join(tmp, "repo"), os.path.join(tmp, "kv")
        os.makedirs(os.path.join(repo, "m", "1"))
        model = os.path.join(repo, "m", "1", "model.gguf")
        if a.model:
            shutil.copy(a.model, model)
        else:
            make_model(model)
        prefill_tps, decode_tps = generate_speed(a.inferloop, model, a.threads, a.prefix_tokens)
        # ctx4k: 8 layers x 2 x 256 values x 2 bytes = 8 KiB per token; the in-memory prefix cache
        # keeps a little over one prefix's idle blocks, so asking Q evicts most of P to disk.
        cache_mb = math.ceil(a.prefix_tokens * 8 * 1.05 / 1024)
        flags = ["--threads", str(a.threads), "--llm-kv-cache-mb", "256", "--llm-prefix-cache-mb", str(cache_mb),
                 "--llm-prefix-cache-dir", kv]
        rng = random.Random(11)
        times = {k: [] for k in ("cold", "memory", "disk", "restart")}
        tokens = {"disk": [], "restart": []}
        prompts = []
        with h.Server(a.inferloop, repo, *flags) as s:
            per_token = calibrate(s, rng, 1.0)
            n_words = int(a.prefix_tokens * per_token)
            for r in range(a.rounds):
                p, q = words(rng, n_words), words(rng, n_words)
                prompts.append(p)
                dt, usage = ask(s, p)
                times["cold"].append(dt)
                times["memory"].append(ask(s, p)[0])
                times["cold"].append(ask(s, q)[0])
                wait_writer_idle(s)
                before = disk_hits(s)
                times["disk"].append(ask(s, p)[0])
                tokens["disk"].append(disk_hits(s) - before)
                print(f"round {r + 1}: prompt {usage['prompt_tokens']} tokens, cold {times['cold'][-2]:.3f} s, "
                      f"memory {times['memory'][-1]:.3f} s, disk {times['disk'][-1]:.3f} s "
                      f"({tokens['disk'][-1]:.0f} tokens from disk)", file=sys.stderr)
            prompt_tokens = usage["prompt_tokens"]
            s.terminate(timeout=600)
        with h.Server(a.inferloop, repo, *flags) as s:
            for p in prompts:
                before = disk_hits(s)
                times["restart"].append(ask(s, p)[0])
                tokens["restart"].append(disk_hits(s) - before)
            s.terminate(timeout=600)

        print(f"\nTime to first token, {prompt_tokens}-token prompt sharing its whole blocks with an earlier one "
              f"(max_tokens 1, --threads {a.threads}, {a.rounds} rounds, medians)")
        print(f"model: ctx4k random Q8_0 (~58M parameters, context 4096): prefill {prefill_tps:.0f} tokens/s, "
              f"decode {decode_tps:.1f} tokens/s (inferloop generate, {a.prefix_tokens}-token prompt)")
        print(isa_line())
        print(f"\n| {'source of the prefix blocks':<28} | {'TTFT (s)':>9} | {'vs cold':>8} | {'tokens from disk':>16} |")
        print(f"|{'-' * 30}|{'-' * 11}|{'-' * 10}|{'-' * 18}|")
        cold = statistics.median(times["cold"])
        for k, label in (("cold", "none (cold prefill)"), ("memory", "memory"), ("disk", "disk tier"),
                         ("restart", "disk tier after a restart")):
            t = statistics.median(times[k])
            hits = f"{statistics.median(tokens[k]):.0f}" if k in tokens else "-"
            print(f"| {label:<28} | {t:>9.3f} | {cold / t:>7.1f}x | {hits:>16} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
