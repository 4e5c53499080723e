#!/usr/bin/env python3
"""Speculative decoding by prompt lookup (`--speculative-ngram N`) against plain decoding, same
binary, same model, same prompt, greedy, rounds alternating; medians of the decode tokens/s
(generated tokens after the first one, per second after the first one: no prefill).

Two tasks:
- repetitive: the prompt holds a passage and asks for it again (as when editing a given code
  block: most of the answer is already in the prompt), so drafts from the prompt are often right;
- free: a prompt with nothing to copy from (drafts come only from what the model repeats itself).

For each it checks that the generated ids are identical with and without drafts (the speed-up
must not change the output) and prints the drafted and accepted token counts.

    .venv/bin/python bench/llm_speculative.py [--inferloop build/inferloop] [--model FILE.gguf]
        [--draft 8] [--tokens 96] [--rounds 5] [--threads 2]

The default model is tests/data/llm/stories260k.gguf (a tiny trained model: its steps cost
little besides the engine's own overhead); pass a larger GGUF (e.g. one made by
scripts/make_llm_models.py) to see the effect where decoding is bound by memory bandwidth.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TASKS = {
    "repetitive": ("Once upon a time, there was a little girl named Lily. She loved to play outside in the sun "
                   "with her dog. Once upon a time, there was a little girl named Lily. She loved to play"),
    "free": "One day, a boy went to",
}


def run(a, prompt, draft):
    cmd = [a.inferloop, "generate", a.model, "-p", prompt, "-n", str(a.tokens), "--temp", "0", "--ignore-eos",
           "--parallel", "1", "--print-token-ids", "-t", str(a.threads)]
    if draft:
        cmd += ["--speculative-ngram", str(draft)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    ids = re.search(r"generated ids:([\d ]*)", p.stderr).group(1).split()
    m = re.search(r"tokens/s overall, ([\d.]+) after the first token", p.stderr)
    spec = re.search(r"speculative: (\d+) tokens drafted, (\d+) accepted", p.stderr)
    steps = int(re.search(r"; (\d+) steps\)", p.stderr).group(1))
    return {"ids": ids, "tps": float(m.group(1)), "steps": steps,
            "drafted": int(spec.group(1)) if spec else 0, "accepted": int(spec.group(2)) if spec else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--model", default=os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf"))
    ap.add_argument("--draft", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    print(f"{os.path.basename(a.model)}, {a.tokens} tokens greedy, --threads {a.threads}, draft {a.draft}, "
          f"{a.rounds} alternating rounds, medians; {cpu}; INFERLOOP_ISA={os.environ.get('INFERLOOP_ISA', 'default')}")
    print("\n| task | plain tok/s | speculative tok/s | speed-up | steps plain / spec | drafted | accepted | same ids |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for task, prompt in TASKS.items():
        plain, spec = [], []
        for _ in range(a.rounds):
            plain.append(run(a, prompt, 0))
            spec.append(run(a, prompt, a.draft))
        same = all(s["ids"] == plain[0]["ids"] for s in plain + spec)
        p_tps = statistics.median(x["tps"] for x in plain)
        s_tps = statistics.median(x["tps"] for x in spec)
        print(f"| {task} | {p_tps:.1f} | {s_tps:.1f} | {s_tps / p_tps:.2f}x | {plain[0]['steps']} / {spec[0]['steps']} | "
              f"{spec[0]['drafted']} | {spec[0]['accepted']} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
