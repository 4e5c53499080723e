#!/usr/bin/env python3
"""inferloop against llama.cpp (PyPI llama-cpp-python) on the same GGUF files, side by side in one
run: single-stream prefill and decode tokens/s on each of inferloop's ISA paths, decode against
the measured memory bandwidth, and aggregate tokens/s of 16 concurrent streams.

    .venv/bin/python bench/llm_bench.py [--inferloop build/inferloop] [--threads 2] [--rounds 3]
                                        [--models bench/models/llm/tinyllama-random-Q4_0.gguf ...]
                                        [--isa default avx512 avx2] [--also-repack-off]

Models default to TinyLlama-1.1B-shaped random-weight files in Q4_0, Q8_0 (made with
scripts/make_llm_models.py when missing) and Q4_K_M (made by llama.cpp's quantizer from a random
F16 file). Both engines use --threads threads and greedy decoding of the same prompt token ids.

- The machine: CPU model and features (AMX, AVX-512 VNNI, AVX2 from /proc/cpuinfo), memory read
  bandwidth (bench_membw, bench/membw.cc, same threads).
- llama.cpp at full strength: its default parameters, weight-repacking buffers on, as its users
  run it (scripts/llama_cpp_anchor.py, built by scripts/setup_llama_cpp.sh). Each model is first
  probed in a child process; the buffers llama.cpp loaded it into are printed (AMX, CPU_REPACK:
  repacked). Where llama.cpp cannot run a model at full strength (it crashed in the probe), it
  is measured with repacking off and every ratio against it is printed as "void".
- inferloop single stream, once per --isa path (default: what it picks; avx512, avx2:
  INFERLOOP_ISA, which also turns AMX off): `inferloop generate MODEL --prompt-ids ... -n N
  --ignore-eos`, its own prompt and generation timings, and the kernels it reports using.
- llama.cpp single stream: Llama(...).eval(prompt) timed for prefill, then N greedy steps (eval
  of one token, argmax of its logits) timed for decode.
- Rounds alternate inferloop and llama.cpp for each path; the table shows medians.
- 16 streams (default path): `inferloop generate --parallel 16` (the server's continuous-batching
  engine) and llama.cpp's low-level API with 16 sequences in one llama_batch per step (what
  llama-server's 16 slots do): all prompts prefilled, then one token per sequence per step.
  Generated tokens per second over the whole run.
- Decode as a fraction of bandwidth: decode tok/s x bytes per token / bandwidth. Bytes per token:
  every weight matrix once (the embedding table contributes one row), plus the KV cache read at
  the mean position.
- --also-repack-off: llama.cpp once more with repacking off per model, to show what it is worth.
"""
import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import llama_cpp_anchor  # noqa: E402

if llama_cpp_anchor.load() is None:
    sys.exit("llama_cpp is not installed: scripts/setup_llama_cpp.sh")
ISA_ENV = {"default": None, "avx512": "avx512", "avx2": "avx2"}


class _Done:
    def __init__(self, p):
        self.stdout = p.stdout.decode("utf-8", "replace")
        self.stderr = p.stderr.decode("utf-8", "replace")


def run(cmd, **kw):
    return _Done(subprocess.run(cmd, check=True, capture_output=True, **kw))


def ensure_models(paths):
    for p in paths:
        if os.path.exists(p):
            continue
        m = re.search(r"tinyllama-random-(\w+)\.gguf$", p)
        if not m:
            sys.exit(f"missing model {p}")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        print(f"making {p} ...", file=sys.stderr)
        if m.group(1) == "Q4_K_M":
            # llama.cpp's own quantizer (llama_model_quantize) from a random F16 file made first.
            import llama_cpp
            f16 = p + ".f16.tmp"
            run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random", f16, "--shape",
                 "tinyllama", "--type", "F16"])
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
            rc = llama_cpp.llama_model_quantize(f16.encode(), p.encode(), params)
            os.remove(f16)
            if rc != 0:
                sys.exit(f"llama_model_quantize failed for {p}: {rc}")
            continue
        run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random", p, "--shape", "tinyllama",
             "--type", m.group(1)])


def gguf_info(path):
    import gguf
    r = gguf.GGUFReader(path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()

    def u(key):
        f = r.fields[f"{arch}.{key}"]
        return int(f.parts[-1][0])

    weights = 0
    for t in r.tensors:
        if t.name == "token_embd.weight":
            weights += int(t.n_bytes) // int(t.shape[1])  # one row
        else:
            weights += int(t.n_bytes)
    E, L, H = u("embedding_length"), u("block_count"), u("attention.head_count")
    KV = u("attention.head_count_kv")
    return {"weight_bytes_per_token": weights, "kv_bytes_per_position": L * 2 * KV * (E // H) * 2,
            "n_vocab": len(r.fields["tokenizer.ggml.tokens"].data)}


def membw(inferloop_build, threads):
    exe = os.path.join(inferloop_build, "bench_membw")
    if not os.path.exists(exe):
        run(["cmake", "--build", inferloop_build, "--target", "bench_membw"])
    return json.loads(run([exe, "--threads", str(threads)]).stdout)["read_gb_per_s"]


def isa_env(isa):
    env = dict(os.environ)
    env.pop("INFERLOOP_ISA", None)
    if ISA_ENV[isa]:
        env["INFERLOOP_ISA"] = ISA_ENV[isa]
    return env


def inferloop_single(exe, model, ids, n, threads, isa="default"):
    out = run([exe, "generate", model, "--prompt-ids", ",".join(map(str, ids)), "-n", str(n), "--temp", "0",
               "--ignore-eos", "-t", str(threads), "--print-token-ids"], env=isa_env(isa)).stderr
    m = re.search(r"prompt: (\d+) tokens in ([\d.]+) s .*generation: (\d+) tokens in ([\d.]+) s", out)
    gen_ids = [int(x) for x in re.search(r"generated ids:([\d ]*)", out).group(1).split()]
    k = re.search(r"^kernels: (.*)$", out, re.M)
    return {"prefill_tps": int(m.group(1)) / float(m.group(2)), "decode_tps": int(m.group(3)) / float(m.group(4)),
            "ids": gen_ids, "kernels": k.group(1) if k else "?"}


def inferloop_parallel(exe, model, ids, n, threads, streams):
    out = run([exe, "generate", model, "--prompt-ids", ",".join(map(str, ids)), "-n", str(n), "--temp", "0",
               "--ignore-eos", "-t", str(threads), "--parallel", str(streams)]).stderr
    m = re.search(r"and (\d+) generated tokens in ([\d.]+) s", out)
    return int(m.group(1)) / float(m.group(2))


class LlamaCpp:
    def __init__(self, model, threads, full_strength=True, n_ctx=2048):
        """full_strength: llama.cpp's default parameters (repacking on); else repacking off."""
        import llama_cpp
        self.L = llama_cpp
        llama_cpp_anchor.reset_buffers()
        with contextlib.ExitStack() as stack:
            if not full_strength:
                stack.enter_context(llama_cpp_anchor.repack_off())
            self.llm = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=threads,
                                       n_threads_batch=threads, verbose=False)
        self.buffers = llama_cpp_anchor.model_buffers()
        self.n_vocab = self.llm.n_vocab()
        self.model, self.threads, self.full_strength = model, threads, full_strength

    def close(self):
        self.llm.close()

    def logits_last(self):
        ptr = self.L.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def single(self, ids, n):
        self.llm.reset()
        self.llm._ctx.kv_cache_clear() if hasattr(self.llm._ctx, "kv_cache_clear") else None
        t0 = time.perf_counter()
        self.llm.eval(ids)
        t1 = time.perf_counter()
        out = []
        for _ in range(n):
            tok = int(np.argmax(self.logits_last()))
            out.append(tok)
            self.llm.eval([tok])
        t2 = time.perf_counter()
        return {"prefill_tps": len(ids) / (t1 - t0), "decode_tps": n / (t2 - t1), "ids": out}

    def parallel(self, ids, n, streams):
        """16 sequences in one llama_batch per step, as llama-server's slots are scheduled."""
        L = self.L
        mp = L.llama_model_default_params()
        mp.use_extra_bufts = self.full_strength  # the default (True) unless this anchor is the weakened one
        model = L.llama_model_load_from_file(self.model.encode(), mp)
        cp = L.llama_context_default_params()
        cp.n_ctx = streams * 256  # a multiple of n_seq_max; 256 positions per sequence
        cp.n_batch = 512
        cp.n_ubatch = 512
        cp.n_seq_max = streams
        cp.n_threads = self.threads
        cp.n_threads_batch = self.threads
        ctx = L.llama_init_from_model(model, cp)
        vocab = L.llama_model_get_vocab(model)
        n_vocab = L.llama_vocab_n_tokens(vocab)
        batch = L.llama_batch_init(512, 0, streams)

        def submit(entries):  # (token, pos, seq, logits)
            batch.n_tokens = len(entries)
            for i, (tok, pos, seq, want) in enumerate(entries):
                batch.token[i] = tok
                batch.pos[i] = pos
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
                batch.logits[i] = 1 if want else 0
            if L.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

        t0 = time.perf_counter()
        pending = [(tok, p, s, p == len(ids) - 1) for s in range(streams) for p, tok in enumerate(ids)]
        last_index = {}
        for start in range(0, len(pending), 512):
            chunk = pending[start:start + 512]
            submit(chunk)
            for i, e in enumerate(chunk):
                if e[3]:
                    last_index[e[2]] = i
        # Logits of each sequence's last prompt token are in the last decode call only if it was
        # in that chunk; re-read per sequence from where it was computed.
        nxt = {}
        for s in range(streams):
            nxt[s] = None
        # The prompt chunks may end in different calls: recompute the last prompt token per
        # sequence in one batch to read all their logits (costs one extra token per sequence).
        mem = L.llama_get_memory(ctx)
        for s in range(streams):
            L.llama_memory_seq_rm(mem, s, len(ids) - 1, -1)
        submit([(ids[-1], len(ids) - 1, s, True) for s in range(streams)])
        for s in range(streams):
            nxt[s] = int(np.argmax(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, s), shape=(n_vocab,))))
        generated = streams
        for step in range(1, n):
            submit([(nxt[s], len(ids) + step - 1, s, True) for s in range(streams)])
            for s in range(streams):
                nxt[s] = int(np.argmax(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, s), shape=(n_vocab,))))
            generated += streams
        elapsed = time.perf_counter() - t0
        L.llama_batch_free(batch)
        L.llama_free(ctx)
        L.llama_model_free(model)
        return generated / elapsed


def cpu_description():
    """CPU model name and the features the LLM paths use, from /proc/cpuinfo."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown CPU", {}
    name = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = set(re.search(r"^flags\s*:\s*(.*)$", text, re.M).group(1).split())
    feats = {"AMX-INT8": "amx_int8" in flags, "AVX-512 VNNI": "avx512_vnni" in flags, "AVX-512F": "avx512f" in flags,
             "AVX-VNNI": "avx_vnni" in flags, "AVX2": "avx2" in flags}
    return (name.group(1).strip() if name else "unknown CPU"), feats


def ratio(a, b, valid):
    return f"{a / b:.2f}x" if valid else "void"


def measure_model(args, model, bw, lc):
    """Alternating rounds of inferloop (each --isa path) and llama.cpp; medians per path."""
    info = gguf_info(model)
    rng = np.random.default_rng(0)
    ids = [1] + [int(x) for x in rng.integers(300, info["n_vocab"] - 16, args.prompt_tokens - 1)]
    bytes_tok = info["weight_bytes_per_token"] + info["kv_bytes_per_position"] * (args.prompt_tokens + args.gen_tokens // 2)
    paths = {}
    for isa in args.isa:
        res = {"inferloop": [], "llama.cpp": []}
        for _ in range(args.rounds):
            res["inferloop"].append(inferloop_single(args.inferloop, model, ids, args.gen_tokens, args.threads, isa))
            res["llama.cpp"].append(lc.single(ids, args.gen_tokens))
        med = {e: {k: statistics.median(r[k] for r in rs) for k in ("prefill_tps", "decode_tps")} for e, rs in res.items()}
        for e in med:
            med[e]["decode_of_bandwidth"] = med[e]["decode_tps"] * bytes_tok / (bw * 1e9)
        paths[isa] = {"median": med, "kernels": res["inferloop"][0]["kernels"],
                      "same_greedy_ids": res["inferloop"][0]["ids"] == res["llama.cpp"][0]["ids"]}
        print(json.dumps({"model": os.path.basename(model), "isa": isa, **paths[isa]}), flush=True)
    par = {}
    if not args.skip_parallel:
        runs = {"inferloop": [], "llama.cpp": []}
        for _ in range(max(1, args.rounds - 1)):
            runs["inferloop"].append(inferloop_parallel(args.inferloop, model, ids[:32], args.parallel_gen_tokens,
                                                        args.threads, args.streams))
            runs["llama.cpp"].append(lc.parallel(ids[:32], args.parallel_gen_tokens, args.streams))
        par = {e: statistics.median(v) for e, v in runs.items()}
    return {"model": os.path.basename(model), "bytes_per_token": bytes_tok, "paths": paths, "parallel": par}


def repack_off_row(args, model):
    lc = LlamaCpp(model, args.threads, full_strength=False)
    info = gguf_info(model)
    rng = np.random.default_rng(0)
    ids = [1] + [int(x) for x in rng.integers(300, info["n_vocab"] - 16, args.prompt_tokens - 1)]
    rs = [lc.single(ids, args.gen_tokens) for _ in range(args.rounds)]
    lc.close()
    return {k: statistics.median(r[k] for r in rs) for k in ("prefill_tps", "decode_tps")}


def print_tables(args, rows, bw):
    print(f"\nllama.cpp {rows[0]['llama_cpp_version']}; {args.threads} threads; prompt {args.prompt_tokens} tokens, "
          f"decode {args.gen_tokens} tokens; medians of {args.rounds} alternating rounds; "
          f"memory read bandwidth {bw:.2f} GB/s\n")
    print("| model | inferloop path (kernels) | llama.cpp | prefill tok/s inferloop | llama.cpp | ratio "
          "| decode tok/s inferloop | llama.cpp | ratio | decode / bandwidth inferloop | llama.cpp | greedy ids equal |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        full = r["llama_cpp_full_strength"]
        strength = ("full: " + ("+".join(r["llama_cpp_repacked"]) or "no repacking for this type")) if full \
            else "repacking off (void)"
        for isa, p in r["paths"].items():
            # inferloop on AMX against a llama.cpp built without its AMX kernels: not its full strength there.
            valid = full and not ("amx" in p["kernels"] and not r["llama_cpp_amx"])
            label = strength if valid or not full else strength + "; no AMX build (void on the AMX path)"
            mi, ml = p["median"]["inferloop"], p["median"]["llama.cpp"]
            print(f"| {r['model']} | {isa} ({p['kernels']}) | {label} | {mi['prefill_tps']:.1f} | "
                  f"{ml['prefill_tps']:.1f} | {ratio(mi['prefill_tps'], ml['prefill_tps'], valid)} | "
                  f"{mi['decode_tps']:.2f} | {ml['decode_tps']:.2f} | {ratio(mi['decode_tps'], ml['decode_tps'], valid)} | "
                  f"{mi['decode_of_bandwidth']:.0%} | {ml['decode_of_bandwidth']:.0%} | {p['same_greedy_ids']} |")
    if any(r["parallel"] for r in rows):
        print(f"\n| model | {args.streams} streams tok/s inferloop (default path) | llama.cpp | ratio |")
        print("|---|---:|---:|---:|")
        for r in rows:
            if r["parallel"]:
                pi, pl = r["parallel"]["inferloop"], r["parallel"]["llama.cpp"]
                valid = r["llama_cpp_full_strength"] and not ("amx" in r["paths"].get("default", {}).get("kernels", "")
                                                              and not r["llama_cpp_amx"])
                print(f"| {r['model']} | {pi:.1f} | {pl:.1f} | {ratio(pi, pl, valid)} |")
    off = [r for r in rows if r.get("repack_off")]
    if off:
        print("\nllama.cpp with repacking on (its default) and off, what repacking is worth:\n")
        print("| model | prefill tok/s on | off | decode tok/s on | off |")
        print("|---|---:|---:|---:|---:|")
        for r in off:
            on = list(r["paths"].values())[0]["median"]["llama.cpp"]
            print(f"| {r['model']} | {on['prefill_tps']:.1f} | {r['repack_off']['prefill_tps']:.1f} | "
                  f"{on['decode_tps']:.2f} | {r['repack_off']['decode_tps']:.2f} |")
    per_token = ", ".join("%s %.1f MB" % (r["model"], r["bytes_per_token"] / 1e6) for r in rows)
    print(f"\nbytes per token: {per_token}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inferloop", default=os.path.join(ROOT, "build", "inferloop"))
    ap.add_argument("--models", nargs="*", default=[os.path.join(ROOT, "bench", "models", "llm", f"tinyllama-random-{t}.gguf")
                                                    for t in ("Q4_0", "Q8_0", "Q4_K_M")])
    ap.add_argument("--isa", nargs="*", default=["default", "avx512", "avx2"], choices=sorted(ISA_ENV),
                    help="inferloop paths to measure, each next to llama.cpp (avx512, avx2: INFERLOOP_ISA)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--parallel-gen-tokens", type=int, default=32)
    ap.add_argument("--skip-parallel", action="store_true")
    ap.add_argument("--also-repack-off", action="store_true",
                    help="also measure llama.cpp with its weight repacking off (what repacking is worth)")
    args = ap.parse_args()
    if not os.path.exists(args.inferloop):
        sys.exit(f"no inferloop binary at {args.inferloop}")
    ensure_models(args.models)
    import llama_cpp
    name, feats = cpu_description()
    print(f"CPU: {name}; " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in feats.items()))
    system_info = llama_cpp.llama_print_system_info().decode()
    llama_amx = "AMX_INT8 = 1" in system_info  # ggml's AMX kernels compiled in
    print(f"llama.cpp {llama_cpp.__version__} system info: {system_info.strip()}")
    if feats.get("AMX-INT8") and not llama_amx:
        print("llama.cpp is built without its AMX kernels: ratios on inferloop's AMX path are void")
    bw = membw(os.path.dirname(os.path.abspath(args.inferloop)), args.threads)
    print(f"memory read bandwidth ({args.threads} threads, bench_membw): {bw:.2f} GB/s")
    rows = []
    for model in args.models:
        probe = llama_cpp_anchor.probe(model, args.threads)
        if probe["ok"]:
            print(f"llama.cpp at full strength on {os.path.basename(model)}: model buffers "
                  + ", ".join(f"{n} {mib:.0f} MiB" for n, mib in probe["buffers"]), flush=True)
        else:
            print(f"llama.cpp cannot run {os.path.basename(model)} at full strength ({probe['error']}): "
                  "measured with repacking off, ratios void", flush=True)
        lc = LlamaCpp(model, args.threads, full_strength=probe["ok"])
        row = measure_model(args, model, bw, lc)
        lc.close()
        row.update({"llama_cpp_version": llama_cpp.__version__, "llama_cpp_full_strength": probe["ok"],
                    "llama_cpp_amx": llama_amx,
                    "llama_cpp_buffers": lc.buffers, "llama_cpp_repacked": llama_cpp_anchor.repacked(lc.buffers)})
        if args.also_repack_off and probe["ok"]:
            row["repack_off"] = repack_off_row(args, model)
        row["bandwidth_gbps"] = bw
        rows.append(row)
        print(json.dumps(row), flush=True)
    print_tables(args, rows, bw)


if __name__ == "__main__":
    main()
