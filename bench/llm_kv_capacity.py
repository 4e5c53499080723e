#!/usr/bin/env python3
"""How many concurrent sequences the paged KV cache admits, against a cache that reserves the
whole context per sequence, with the same KV memory.

Starts `inferloop serve` on a repository holding a small random model (scripts/make_llm_models.py,
context 512), with --llm-kv-cache-mb sized so that a full-context reservation would hold exactly
--reserve-slots sequences, sends --requests concurrent streaming completions of mixed prompt and
output lengths, and samples the server's inferloop_llm_running_sequences gauge. The reserving
cache's capacity is computed (KV memory / (context x bytes per token)): it admits that many no
matter how short the sequences are.

With --kv-type q8_0 the server stores keys and values in Q8_0 (--llm-kv-type q8_0) in the same KV
memory (sized from the F16 reservation), and the reserving cache is computed for Q8_0 too.

Usage: .venv/bin/python bench/llm_kv_capacity.py [--inferloop build/inferloop] [--reserve-slots 8] [--kv-type f16|q8_0]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import serve_harness as h  # noqa: E402

# The 'small' shape of make_llm_models.py: 4 layers, 2 KV heads of 32 -> K and V per token.
LAYERS, KV_DIM, CONTEXT = 4, 2 * 32, 512
ROW_BYTES = {"f16": KV_DIM * 2, "q8_0": KV_DIM // 32 * 34}  # Q8_0: blocks of 32 int8 + an F16 scale
F16_BYTES_PER_TOKEN = LAYERS * 2 * ROW_BYTES["f16"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--reserve-slots", type=int, default=8, help="sequences a full-context reservation would hold")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kv-type", choices=sorted(ROW_BYTES), default="f16", help="KV cache element type (default f16)")
    args = ap.parse_args()

    BYTES_PER_TOKEN = LAYERS * 2 * ROW_BYTES[args.kv_type]
    kv_bytes = args.reserve_slots * CONTEXT * F16_BYTES_PER_TOKEN
    reserve_slots = kv_bytes // (CONTEXT * BYTES_PER_TOKEN)
    kv_mb = kv_bytes / (1 << 20)
    assert kv_mb == int(kv_mb), "choose --reserve-slots so the KV memory is whole MiB"
    tmp = tempfile.mkdtemp(prefix="inferloop_kvcap_")
    try:
        os.makedirs(os.path.join(tmp, "small", "1"))
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random",
                        os.path.join(tmp, "small", "1", "model.gguf"), "--shape", "small", "--type", "Q8_0"],
                       check=True, stdout=subprocess.DEVNULL)
        server = h.Server(args.inferloop, tmp, "--llm-kv-cache-mb", str(int(kv_mb)), "--llm-max-sequences", "256",
                          "--llm-max-token-backlog", str(1 << 30), "--llm-kv-type", args.kv_type)
        pool_blocks = int(h.metric_value(h.metrics(server.http_port), "inferloop_llm_kv_blocks_free", model="small"))
        rng = random.Random(args.seed)
        # Mixed lengths: prompts of 8..200 words, outputs of 16..300 tokens (all fit the context).
        jobs = []
        for _ in range(args.requests):
            words = rng.randint(8, 200)
            prompt = " ".join(rng.choice(["a", "b", "c", "d", "e", "f", "g", "h"]) for _ in range(words))
            jobs.append((prompt, rng.randint(16, 300)))
        peak = [0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                m = h.metrics(server.http_port)
                peak[0] = max(peak[0], int(h.metric_value(m, "inferloop_llm_running_sequences", model="small") or 0))
                time.sleep(0.002)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        results = []

        def run(prompt, n):
            status, _, body = h.post_json(server.http_port, "/v1/completions",
                                          {"model": "small", "prompt": prompt, "max_tokens": n, "temperature": 0,
                                           "stop": []}, timeout=600)
            results.append((status, body))

        t0 = time.time()
        threads = [threading.Thread(target=run, args=j) for j in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - t0
        stop.set()
        sampler.join()
        m = h.metrics(server.http_port)
        server.terminate()
        ok = sum(1 for s, _ in results if s == 200)
        tokens = [b["usage"]["prompt_tokens"] + b["usage"]["completion_tokens"] for s, b in results if s == 200]
        print(f"KV memory {kv_mb:.0f} MiB in {args.kv_type} = {kv_bytes // BYTES_PER_TOKEN} token positions "
              f"({BYTES_PER_TOKEN} bytes per token, context {CONTEXT}); the server's pool: {pool_blocks} blocks of 16 "
              f"= {pool_blocks * 16} positions")
        print(f"requests: {args.requests}, answered 200: {ok}, sequence length min/mean/max "
              f"{min(tokens)}/{sum(tokens) / len(tokens):.0f}/{max(tokens)} tokens, {elapsed:.1f} s")
        print("| cache | concurrent sequences |")
        print("|---|---|")
        print(f"| reserve the full context per sequence, {args.kv_type} (computed) | {reserve_slots} |")
        print(f"| inferloop paged, 16-token blocks, {args.kv_type} (peak measured) | {peak[0]} |")
        print(f"ratio: {peak[0] / reserve_slots:.2f}x")
        preempt = h.metric_value(m, "inferloop_llm_requests_total", model="small", finish_reason="length")
        print(json.dumps({"kv_type": args.kv_type, "kv_mb": kv_mb, "pool_positions": pool_blocks * 16,
                          "reserve_slots": reserve_slots, "paged_peak": peak[0], "ratio": peak[0] / reserve_slots,
                          "answered": ok, "finished_length": preempt}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
