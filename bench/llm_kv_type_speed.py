#!/usr/bin/env python3
"""Decode speed with the KV cache in F16 and in Q8_0, inferloop and llama.cpp side by side in one
run, at a long context where attention is a large part of a token's work.

    .venv/bin/python bench/llm_kv_type_speed.py [--inferloop build/inferloop] [--threads 1] [--rounds 3]
                                                [--prompt-tokens 384] [--gen-tokens 96]

Model: the 'small' shape of scripts/make_llm_models.py (4 layers, hidden 256, 8 heads and 2 KV
heads of 32, context 512), Q8_0 weights, made in a temporary folder. Both engines get the same
prompt token ids and decode greedily. llama.cpp: F16 cache with its default attention, Q8_0 cache
with flash attention (which a quantized V cache requires; type_k = type_v = GGML_TYPE_Q8_0).
inferloop: `generate --kv-type f16|q8_0 --prompt-ids ... --ignore-eos`, its own generation timing.
Rounds alternate between engines and types; the table shows medians of decode tokens/s.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import llama_cpp_anchor  # noqa: E402

llama_cpp = llama_cpp_anchor.load()
if llama_cpp is None:
    sys.exit("llama_cpp is not installed: scripts/setup_llama_cpp.sh")


def inferloop_decode(inferloop, model, ids, n, threads, kv):
    err = subprocess.run([inferloop, "generate", model, "--prompt-ids", ",".join(map(str, ids)), "-n", str(n),
                          "--temp", "0", "--ignore-eos", "-t", str(threads), "--kv-type", kv],
                         check=True, capture_output=True).stderr.decode()
    m = re.search(r"generation: (\d+) tokens in ([0-9.]+) s", err)
    return int(m.group(1)) / float(m.group(2))


def llama_cpp_decode(llm, ids, n):
    llm.reset()
    llm.eval(ids)
    t0 = time.perf_counter()
    for _ in range(n):
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
        llm.eval([int(np.argmax(logits))])
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=384)
    ap.add_argument("--gen-tokens", type=int, default=96)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inferloop_kvspeed_")
    try:
        model = os.path.join(tmp, "small.gguf")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random", model, "--shape",
                        "small", "--type", "Q8_0"], check=True, stdout=subprocess.DEVNULL)
        rng = random.Random(1)
        ids = [1] + [rng.randrange(259, 4096) for _ in range(args.prompt_tokens - 1)]
        llms = {}
        for kv, t in (("f16", 1), ("q8_0", 8)):
            llms[kv] = llama_cpp.Llama(model_path=model, n_ctx=512, n_batch=512, n_threads=args.threads,
                                       n_threads_batch=args.threads, type_k=t, type_v=t, flash_attn=(kv == "q8_0"),
                                       verbose=False)
        res = {(e, kv): [] for e in ("inferloop", "llama.cpp") for kv in ("f16", "q8_0")}
        for _ in range(args.rounds):
            for kv in ("f16", "q8_0"):
                res[("llama.cpp", kv)].append(llama_cpp_decode(llms[kv], ids, args.gen_tokens))
                res[("inferloop", kv)].append(inferloop_decode(args.inferloop, model, ids, args.gen_tokens, args.threads, kv))
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"decode tokens/s after a {args.prompt_tokens}-token prompt, {args.gen_tokens} tokens, "
              f"{args.threads} thread(s), median of {args.rounds}")
        print("| KV cache | llama.cpp | inferloop | inferloop / llama.cpp |")
        print("|---|---|---|---|")
        for kv in ("f16", "q8_0"):
            a, b = med[("llama.cpp", kv)], med[("inferloop", kv)]
            print(f"| {kv} | {a:.0f} | {b:.0f} | {b / a:.2f}x |")
        print(f"q8_0 / f16: llama.cpp {med[('llama.cpp', 'q8_0')] / med[('llama.cpp', 'f16')]:.2f}x, "
              f"inferloop {med[('inferloop', 'q8_0')] / med[('inferloop', 'f16')]:.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
