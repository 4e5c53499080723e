#!/usr/bin/env python3
"""Constrained decoding (response_format json_schema) cost per generated token: inferloop serve
against llama.cpp's grammar sampling (PyPI llama-cpp-python, LlamaGrammar.from_json_schema) on
the same schema, the same GGUF file, the same prompts and the same token counts, greedy, one
thread each.

    .venv/bin/python bench/grammar_bench.py [--inferloop build/inferloop] [--model tests/data/llm/stories260k.gguf]
                                            [--rounds 5]

For each prompt, each engine generates the schema's answer (its length in tokens is whatever the
grammar lets the greedy choice write) and then, unconstrained, the same number of tokens; the
time per token of each, and the difference (the grammar's cost per token), are the medians over
the rounds and prompts. inferloop is timed per HTTP request (/v1/completions on loopback; its
fixed cost is in both columns), llama.cpp per create_completion call in this process (its Python
loop is in both columns). inferloop "cold": the schema changed every request (a "description"
that differs), so the grammar is compiled and every token mask computed afresh; "warm": the same
schema again, masks from the per-state cache. A tiny model (stories260k: ~0.1 ms of compute per
token) makes the grammar's share of a token as large as it gets.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import shutil
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import llama_cpp_anchor  # noqa: E402
import serve_harness as h  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "mood": {"enum": ["happy", "sad", "angry"]},
        "pet": {"type": "object",
                "properties": {"kind": {"enum": ["cat", "dog"]}, "legs": {"type": "integer", "minimum": 0, "maximum": 8}},
                "required": ["kind", "legs"], "additionalProperties": False},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
    },
    "required": ["name", "age", "mood", "pet", "tags"],
    "additionalProperties": False,
}
PROMPTS = ["Once upon a time", "Lily and Ben", "The cat sat", "One day, a little boy"]


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    dt = time.perf_counter() - t0
    if r.status != 200:
        raise RuntimeError(data)
    return data, dt


def inferloop_rows(args):
    tmp = tempfile.mkdtemp(prefix="grammar_bench_")
    os.makedirs(os.path.join(tmp, "m", "1"))
    shutil.copy(args.model, os.path.join(tmp, "m", "1", "model.gguf"))
    rows = {"cold": [], "warm": [], "free": []}
    counts = {}
    try:
        with h.Server(args.inferloop, tmp, "--threads", "1") as s:
            n = 0
            for rnd in range(args.rounds):
                for p in PROMPTS:
                    base = {"model": "m", "prompt": p, "temperature": 0, "max_tokens": args.max_tokens}
                    n += 1
                    cold = dict(SCHEMA, description=f"cold {n}")
                    rf = lambda sch: {"type": "json_schema", "json_schema": {"name": "p", "schema": sch, "strict": True}}
                    d, t = post(s.http_port, dict(base, response_format=rf(cold)))
                    k = d["usage"]["completion_tokens"]
                    rows["cold"].append(t / k)
                    d, t = post(s.http_port, dict(base, response_format=rf(SCHEMA)))
                    assert d["usage"]["completion_tokens"] == k
                    rows["warm"].append(t / k)
                    counts[p] = (k, d["choices"][0]["text"])
                    d, t = post(s.http_port, dict(base, max_tokens=k))
                    rows["free"].append(t / d["usage"]["completion_tokens"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows, counts


def llama_rows(args, counts):
    llama_cpp = llama_cpp_anchor.load()
    if llama_cpp is None:
        return None
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=128, n_threads=1, n_threads_batch=1, verbose=False)
    grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    eos = llm.token_eos()
    rows = {"schema": [], "free": []}
    texts = {}
    for rnd in range(args.rounds):
        for p in PROMPTS:
            t0 = time.perf_counter()
            out = llm.create_completion(p, max_tokens=args.max_tokens, temperature=0, grammar=grammar)
            t = time.perf_counter() - t0
            k = out["usage"]["completion_tokens"]
            texts[p] = (k, out["choices"][0]["text"])
            rows["schema"].append(t / k)
            t0 = time.perf_counter()
            out = llm.create_completion(p, max_tokens=k, temperature=0, logit_bias={eos: -1e9})
            t = time.perf_counter() - t0
            rows["free"].append(t / out["usage"]["completion_tokens"])
    return rows, texts


def valid(answers):
    import jsonschema
    n = 0
    for _, text in answers.values():
        try:
            jsonschema.validate(json.loads(text), SCHEMA)
            n += 1
        except (ValueError, jsonschema.ValidationError):
            pass
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--model", default=os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=110)
    args = ap.parse_args()
    il, il_counts = inferloop_rows(args)
    ll = llama_rows(args, il_counts)
    med = lambda xs: statistics.median(xs) * 1e3
    print("answers (tokens, text) per prompt:")
    for p in PROMPTS:
        print(f"  inferloop {il_counts[p][0]:4d} {il_counts[p][1]!r}")
        if ll:
            print(f"  llama.cpp {ll[1][p][0]:4d} {ll[1][p][1]!r}")
    print()
    print("answers that parse and validate against the schema (jsonschema):")
    print(f"  inferloop {valid(il_counts)}/{len(PROMPTS)}")
    if ll:
        print(f"  llama.cpp {valid(ll[1])}/{len(PROMPTS)}")
    print()
    print(f"{'engine':<24}{'free ms/token':>15}{'schema ms/token':>17}{'grammar ms/token':>18}")
    print(f"{'inferloop (warm cache)':<24}{med(il['free']):15.3f}{med(il['warm']):17.3f}{med(il['warm']) - med(il['free']):18.3f}")
    print(f"{'inferloop (cold)':<24}{med(il['free']):15.3f}{med(il['cold']):17.3f}{med(il['cold']) - med(il['free']):18.3f}")
    if ll:
        r = ll[0]
        print(f"{'llama.cpp 0.3.36':<24}{med(r['free']):15.3f}{med(r['schema']):17.3f}{med(r['schema']) - med(r['free']):18.3f}")
    else:
        print("llama.cpp: not installed (scripts/setup_llama_cpp.sh)")


if __name__ == "__main__":
    main()
