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
  run it (scripts/llama_cpp_anchor.py), built for the CPU each row stands for: the default row
  against the venv's native build (scripts/setup_llama_cpp.sh; on an AMX CPU its AMX kernels),
  the avx512 row against llama.cpp built as on a CPU with AVX-512 VNNI and no AMX, the avx2 row
  against llama.cpp built as on an AVX2-only CPU (both by scripts/setup_llama_cpp_isa.sh; the
  table names the build of each row). A row whose build is not installed is printed as "void",
  never measured against another build. Each llama.cpp build runs in its own child process
  (LLAMA_CPP_LIB_PATH), after a probe in another child; the buffers llama.cpp loaded the model
  into are printed (AMX, CPU_REPACK: repacked). Where llama.cpp cannot run a model at full
  strength (it crashed in the probe), it is measured with repacking off and every ratio against
  it is printed as "void".
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
  the mean position. The bandwidth is read by bench_membw next to every decode (right before
  inferloop's run, right after llama.cpp's), and each run is held against its own reading: on a
  shared machine it moves (a 2-CPU cloud VM read 36 GB/s and 60-69 GB/s in the same program
  seconds apart), so one reading at the start could put a whole table at 55% or at 97%.
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
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import llama_cpp_anchor  # noqa: E402
import isa_mask  # noqa: E402  (cpu_flags; bench/ is this script's folder)

if llama_cpp_anchor.load() is None:
    sys.exit("llama_cpp is not installed: scripts/setup_llama_cpp.sh")
ISA_ENV = {"default": None, "avx512": "avx512", "avx2": "avx2"}
# The llama.cpp build each inferloop path is compared with (llama_cpp_anchor.BUILDS).
ISA_LLAMA_BUILD = {"default": "native", "avx512": "avx512", "avx2": "avx2"}


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


def bandwidth_reader(args):
    """Reads the memory bandwidth now (bench_membw of the inferloop build, args.threads) and keeps
    every reading in .readings."""
    build = os.path.dirname(os.path.abspath(args.inferloop))

    def read():
        bw = membw(build, args.threads)
        read.readings.append(bw)
        return bw
    read.readings = []
    return read


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


class LlamaCppChild:
    """A LlamaCpp in a child process on llama.cpp build `build` (one process holds one build:
    llama-cpp-python loads its library when imported). Same single() and parallel()."""

    def __init__(self, model, threads, build, full_strength=True):
        env = llama_cpp_anchor.build_env(build)
        if env is None:
            raise RuntimeError(llama_cpp_anchor.build_description(build))
        cmd = [sys.executable, os.path.abspath(__file__), "--llama-child", model, "--threads", str(threads)]
        if not full_strength:
            cmd.append("--llama-child-repack-off")
        self.build = build
        self.err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     env=env, text=True)
        hello = self._read()
        self.buffers = [tuple(b) for b in hello["buffers"]]
        self.system_info, self.version = hello["system_info"], hello["version"]
        self.full_strength = full_strength

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            self.err.seek(0)
            tail = " | ".join(self.err.read().strip().splitlines()[-3:])
            raise RuntimeError(f"llama.cpp child ({self.build} build) ended (exit status {rc}): {tail}")
        return json.loads(line)

    def _call(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def single(self, ids, n):
        return self._call(op="single", ids=ids, n=n)

    def parallel(self, ids, n, streams):
        return self._call(op="parallel", ids=ids, n=n, streams=streams)["tps"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()
        self.err.close()


def llama_child_main(model, threads, full_strength):
    """The child side of LlamaCppChild: requests on stdin, one JSON line each on stdout. llama.cpp's
    own output goes to stderr (stdout's descriptor is pointed there; replies use a copy)."""
    import llama_cpp
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    lc = LlamaCpp(model, threads, full_strength=full_strength)
    reply.write(json.dumps({"buffers": lc.buffers, "version": llama_cpp.__version__,
                            "system_info": llama_cpp.llama_print_system_info().decode().strip()}) + "\n")
    reply.flush()
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "single":
            out = lc.single(req["ids"], req["n"])
        else:
            out = {"tps": lc.parallel(req["ids"], req["n"], req["streams"])}
        reply.write(json.dumps(out) + "\n")
        reply.flush()
    lc.close()


def cpu_description():
    """CPU model name and the features the LLM paths use, from /proc/cpuinfo."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown CPU", {}
    name = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = isa_mask.cpu_flags()
    feats = {"AMX-INT8": "amx_int8" in flags, "AVX-512 VNNI": "avx512_vnni" in flags, "AVX-512F": "avx512f" in flags,
             "AVX-VNNI": "avx_vnni" in flags, "AVX2": "avx2" in flags}
    return (name.group(1).strip() if name else "unknown CPU"), feats


def ratio(a, b, valid):
    return f"{a / b:.2f}x" if valid else "void"


def prompt_ids(model, n):
    info = gguf_info(model)
    rng = np.random.default_rng(0)
    return info, [1] + [int(x) for x in rng.integers(300, info["n_vocab"] - 16, n - 1)]


def open_anchor(model, threads, build):
    """llama.cpp build `build` on `model` in a child process, at full strength where its probe
    ran; (LlamaCppChild or None when the build is not installed, description of the anchor)."""
    probe = llama_cpp_anchor.probe(model, threads, build=build)
    if llama_cpp_anchor.build_env(build) is None:
        return None, {"build": build, "installed": False, "full_strength": False, "repacked": [], "amx": False,
                      "system_info": "", "description": llama_cpp_anchor.build_description(build)}
    name = os.path.basename(model)
    if probe["ok"]:
        print(f"llama.cpp {build} build at full strength on {name}: model buffers "
              + ", ".join(f"{n} {mib:.0f} MiB" for n, mib in probe["buffers"]), flush=True)
    else:
        print(f"llama.cpp {build} build cannot run {name} at full strength ({probe['error']}): "
              "measured with repacking off, ratios void", flush=True)
    lc = LlamaCppChild(model, threads, build, full_strength=probe["ok"])
    return lc, {"build": build, "installed": True, "full_strength": probe["ok"], "version": lc.version,
                "buffers": lc.buffers, "repacked": llama_cpp_anchor.repacked(lc.buffers),
                "amx": "AMX_INT8 = 1" in lc.system_info, "system_info": lc.system_info,
                "description": llama_cpp_anchor.build_description(build)}


def measure_model(args, model, bw):
    """Per --isa path: alternating rounds of inferloop on that path and llama.cpp built for the
    CPU the path stands for (ISA_LLAMA_BUILD); medians per path. bw() reads the bandwidth: before
    inferloop's run and after llama.cpp's in every round, each run held against its reading."""
    info, ids = prompt_ids(model, args.prompt_tokens)
    bytes_tok = info["weight_bytes_per_token"] + info["kv_bytes_per_position"] * (args.prompt_tokens + args.gen_tokens // 2)
    paths = {}
    for isa in args.isa:
        lc, anchor = open_anchor(model, args.threads, ISA_LLAMA_BUILD[isa])
        res = {"inferloop": [], "llama.cpp": []}
        for _ in range(args.rounds):
            before = bw()
            res["inferloop"].append({**inferloop_single(args.inferloop, model, ids, args.gen_tokens, args.threads, isa),
                                     "bandwidth_gbps": before})
            if lc:
                res["llama.cpp"].append({**lc.single(ids, args.gen_tokens), "bandwidth_gbps": 0.0})
                res["llama.cpp"][-1]["bandwidth_gbps"] = bw()
        if lc:
            lc.close()
        med = {e: {k: statistics.median(r[k] for r in rs) for k in ("prefill_tps", "decode_tps", "bandwidth_gbps")}
               for e, rs in res.items() if rs}
        for e, rs in res.items():
            if rs:
                med[e]["decode_of_bandwidth"] = statistics.median(
                    r["decode_tps"] * bytes_tok / (r["bandwidth_gbps"] * 1e9) for r in rs)
        paths[isa] = {"median": med, "kernels": res["inferloop"][0]["kernels"], "llama_cpp": anchor,
                      "same_greedy_ids": bool(lc) and res["inferloop"][0]["ids"] == res["llama.cpp"][0]["ids"]}
        print(json.dumps({"model": os.path.basename(model), "isa": isa, **paths[isa]}), flush=True)
    par = {}
    if not args.skip_parallel:
        lc, anchor = open_anchor(model, args.threads, "native")
        runs = {"inferloop": [], "llama.cpp": []}
        for _ in range(max(1, args.rounds - 1)):
            runs["inferloop"].append(inferloop_parallel(args.inferloop, model, ids[:32], args.parallel_gen_tokens,
                                                        args.threads, args.streams))
            if lc:
                runs["llama.cpp"].append(lc.parallel(ids[:32], args.parallel_gen_tokens, args.streams))
        if lc:
            lc.close()
        par = {e: statistics.median(v) for e, v in runs.items() if v}
        par["llama_cpp"] = anchor
    return {"model": os.path.basename(model), "bytes_per_token": bytes_tok, "paths": paths, "parallel": par}


def repack_off_row(args, model):
    _, ids = prompt_ids(model, args.prompt_tokens)
    lc = LlamaCppChild(model, args.threads, "native", full_strength=False)
    rs = [lc.single(ids, args.gen_tokens) for _ in range(args.rounds)]
    lc.close()
    return {k: statistics.median(r[k] for r in rs) for k in ("prefill_tps", "decode_tps")}


def anchor_label(anchor):
    """Which llama.cpp a row is against, and whether its ratios count."""
    if not anchor["installed"]:
        return f"{anchor['build']} build not installed (void)"
    if not anchor["full_strength"]:
        return f"{anchor['build']} build, repacking off (void)"
    return f"{anchor['build']} build, full: " + ("+".join(anchor["repacked"]) or "no repacking for this type")


def anchor_valid(anchor, kernels):
    # inferloop on AMX against a llama.cpp built without its AMX kernels: not its full strength there.
    return anchor["installed"] and anchor["full_strength"] and not ("amx" in kernels and not anchor["amx"])


def print_tables(args, rows, readings):
    print(f"\n{args.threads} threads; prompt {args.prompt_tokens} tokens, "
          f"decode {args.gen_tokens} tokens; medians of {args.rounds} alternating rounds; "
          f"memory read bandwidth {min(readings):.2f}-{max(readings):.2f} GB/s over {len(readings)} readings "
          f"(median {statistics.median(readings):.2f}), each decode held against the reading next to it; "
          f"llama.cpp builds:")
    builds = {}
    for r in rows:
        for p in r["paths"].values():
            builds.setdefault(p["llama_cpp"]["build"], p["llama_cpp"])
    for b, a in builds.items():
        info = f"; llama_print_system_info: {a['system_info']}" if a["system_info"] else ""
        print(f"- {a['description']}{info}")
    print("\n| model | inferloop path (kernels) | llama.cpp | prefill tok/s inferloop | llama.cpp | ratio "
          "| decode tok/s inferloop | llama.cpp | ratio | decode / bandwidth inferloop | llama.cpp | greedy ids equal |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        for isa, p in r["paths"].items():
            a = p["llama_cpp"]
            valid = anchor_valid(a, p["kernels"])
            label = anchor_label(a)
            if a["installed"] and a["full_strength"] and not valid:
                label += "; no AMX kernels (void on the AMX path)"
            mi = p["median"]["inferloop"]
            ml = p["median"].get("llama.cpp")
            if ml is None:
                print(f"| {r['model']} | {isa} ({p['kernels']}) | {label} | {mi['prefill_tps']:.1f} | - | void | "
                      f"{mi['decode_tps']:.2f} | - | void | {mi['decode_of_bandwidth']:.0%} | - | - |")
                continue
            print(f"| {r['model']} | {isa} ({p['kernels']}) | {label} | {mi['prefill_tps']:.1f} | "
                  f"{ml['prefill_tps']:.1f} | {ratio(mi['prefill_tps'], ml['prefill_tps'], valid)} | "
                  f"{mi['decode_tps']:.2f} | {ml['decode_tps']:.2f} | {ratio(mi['decode_tps'], ml['decode_tps'], valid)} | "
                  f"{mi['decode_of_bandwidth']:.0%} | {ml['decode_of_bandwidth']:.0%} | {p['same_greedy_ids']} |")
    if any(r["parallel"] for r in rows):
        print(f"\n| model | {args.streams} streams tok/s inferloop (default path) | llama.cpp (native build) | ratio |")
        print("|---|---:|---:|---:|")
        for r in rows:
            par = r["parallel"]
            if par and "llama.cpp" in par:
                kernels = r["paths"].get("default", {}).get("kernels", "")
                valid = anchor_valid(par["llama_cpp"], kernels)
                print(f"| {r['model']} | {par['inferloop']:.1f} | {par['llama.cpp']:.1f} | "
                      f"{ratio(par['inferloop'], par['llama.cpp'], valid)} |")
            elif par:
                print(f"| {r['model']} | {par['inferloop']:.1f} | - | void |")
    off = [r for r in rows if r.get("repack_off")]
    if off:
        print("\nllama.cpp (native build) with repacking on (its default) and off, what repacking is worth:\n")
        print("| model | prefill tok/s on | off | decode tok/s on | off |")
        print("|---|---:|---:|---:|---:|")
        for r in off:
            on = r["paths"]["default"]["median"]["llama.cpp"]
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
    name, feats = cpu_description()
    print(f"CPU: {name}; " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in feats.items()))
    for isa in args.isa:
        print(f"inferloop {isa} path against llama.cpp {llama_cpp_anchor.build_description(ISA_LLAMA_BUILD[isa])}")
    bw = bandwidth_reader(args)
    print(f"memory read bandwidth ({args.threads} threads, bench_membw) at the start: {bw():.2f} GB/s; read again "
          "next to every decode")
    rows = []
    for model in args.models:
        row = measure_model(args, model, bw)
        native = row["paths"].get("default", {}).get("llama_cpp", {})
        if args.also_repack_off and native.get("full_strength"):
            row["repack_off"] = repack_off_row(args, model)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print_tables(args, rows, bw.readings)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--llama-child":  # LlamaCppChild's child process
        child = argparse.ArgumentParser()
        child.add_argument("--llama-child", required=True, metavar="MODEL")
        child.add_argument("--threads", type=int, required=True)
        child.add_argument("--llama-child-repack-off", action="store_true")
        c = child.parse_args()
        llama_child_main(c.llama_child, c.threads, not c.llama_child_repack_off)
    else:
        main()
