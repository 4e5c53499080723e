#!/usr/bin/env python3
"""Writes GGUF llama-family models for tests and benchmarks with PyPI `gguf` (pinned in
scripts/requirements-dev.txt). Run with the project's venv: .venv/bin/python scripts/make_llm_models.py

  random OUT.gguf --shape tinyllama|small|tiny|tiny-hd32|tiny256|ctx4k --type Q4_0|Q8_0|F16|F32 [--arch llama|qwen2] [--seed N]
                 [--vocab spm|bpe-llama3|bpe-qwen2] [--std S] [--rope-freqs]
      A model with random weights (normal, std 0.02 or --std; norms 1) and a synthetic vocab: 'spm' (the
      default) is a 'llama' (SentencePiece style) vocab: <unk> <s> </s>, the 256 byte tokens, then
      made-up pieces; 'bpe-*' is a 'gpt2' byte-level BPE vocab whose merges are trained on a small
      built-in text (English, accents, CJK, emoji, digits, code), with Llama 3 style special tokens
      and tokenizer.ggml.pre "llama-bpe" or "qwen2". `tinyllama` has
      TinyLlama-1.1B's shape (hidden 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000,
      context 2048); `small`, `tiny`, `tiny-hd32` (head dim 32, as a Q8_0 KV cache needs) and
      `tiny256` (rows of 256 values, for K-quants) are small shapes for tests; `ctx4k` (hidden 512,
      8 layers, 8 heads, 4 KV heads, FFN 1536, vocab 32000, context 4096: about 58M parameters)
      is for benchmarks over long prompts.
  requantize IN.gguf OUT.gguf --type Q4_0|Q8_0|F16
      Copies IN (a real model, e.g. tests/data/llm/stories260k.gguf) with every 2-D weight whose row
      length is a multiple of 32 quantized to --type (other tensors keep their type).
"""
import argparse
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT
from gguf import quants

SHAPES = {
    # hidden, layers, heads, kv heads, ffn, vocab, context
    "tinyllama": (2048, 22, 32, 4, 5632, 32000, 2048),
    "small": (256, 4, 8, 2, 768, 4096, 512),
    "tiny": (64, 2, 4, 2, 128, 512, 256),
    "tiny-hd32": (128, 2, 4, 2, 256, 512, 256),  # head dim 32: fits a Q8_0 KV cache
    # Rows of 256 and 512 values: what K-quants (Q4_K, Q6_K; llama_model_quantize) need.
    "tiny256": (256, 2, 4, 2, 512, 512, 256),
    # About 58M parameters with a 4096 context (bench/llm_prefix_cache.py: long shared prefixes).
    "ctx4k": (512, 8, 8, 4, 1536, 32000, 4096),
}
TYPES = {"Q4_0": QT.Q4_0, "Q8_0": QT.Q8_0, "F16": QT.F16, "F32": QT.F32}
# general.file_type values (llama.cpp's llama_ftype) for the whole-file type.
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7}


def synthetic_vocab(n):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(tokens) < n:
        # "▁a", "▁b", ..., "a", "b", ..., then two- and three-letter pieces with and without ▁
        k, word = i, ""
        while True:
            word = letters[k % 26] + word
            k = k // 26 - 1
            if k < 0:
                break
        for piece in ("\u2581" + word, word):
            if len(tokens) < n:
                tokens.append(piece)
                types.append(1)
        i += 1
    scores = [0.0] * 259 + [-float(j) for j in range(n - 259)]
    return tokens, scores, types


BPE_CORPUS = """Once upon a time, there was a little girl named Lily. She loved to play outside in the park.
One day, she saw a big, red ball. "Can I play?" she asked. Her mom said: 'Yes, you can!'
The year 2024 had 366 days; 3.14159 is pi, and 1,000,000 is a million. Numbers like 12345678 split.
Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe se\u00f1or \u00e0 la carte. \u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440.
\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002 \u4e2d\u6587\u5b57\u7b26\u3002 \U0001F600 \U0001F680 emoji!
def main(argv):\n    return [x ** 2 for x in range(10) if x % 2 == 0]\n
    tabs\tand   spaces   and\n\nnew lines\r\n done. I'm sure you're right, we'll see, they've gone, he'd say.
"""


def train_bpe(n_merges):
    """Merges learned on BPE_CORPUS (plain pair-count BPE over byte-level characters)."""
    import re
    b2u = bytes_to_unicode()
    words = re.findall(r"\s?\w+|\s?[^\w\s]+|\s+", BPE_CORPUS * 3)
    seqs = [[b2u[b] for b in wd.encode("utf-8")] for wd in words]
    merges = []
    for _ in range(n_merges):
        counts = {}
        for s in seqs:
            for a, b in zip(s, s[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if counts[best] < 2:
            break
        merges.append(best)
        joined = best[0] + best[1]
        for k, s in enumerate(seqs):
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == best[0] and s[i + 1] == best[1]:
                    out.append(joined)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[k] = out
    return merges


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def bpe_vocab(n):
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    merges = train_bpe(max(0, n - 256 - 8))
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    types = [1] * len(tokens)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                "<|im_start|>", "<|im_end|>", "<|endoftext|>"]
    while len(tokens) + len(specials) < n:
        tokens.append(f"<|reserved_{len(tokens)}|>")
        types.append(3)
    tokens += specials
    types += [3] * len(specials)
    return tokens, types, [f"{a} {b}" for a, b in merges]


def add_tensor(w, name, data, qtype):
    data = np.ascontiguousarray(data, dtype=np.float32)
    if qtype == QT.F32 or data.ndim == 1 or data.shape[-1] % 32 != 0:
        w.add_tensor(name, data)
    elif qtype == QT.F16:
        w.add_tensor(name, data.astype(np.float16))
    else:
        w.add_tensor(name, quants.quantize(data, qtype), raw_dtype=qtype)


def write_random(out, shape, type_name, arch, seed, vocab="spm", std=0.02, rope_freqs=False):
    E, L, H, KV, F, V, C = SHAPES[shape]
    qtype = TYPES[type_name]
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(out, arch=arch)
    w.add_name(f"random-{shape}-{type_name}")
    w.add_context_length(C)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_rope_dimension_count(E // H)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(FILE_TYPES[type_name])
    if vocab == "spm":
        tokens, scores, types = synthetic_vocab(V)
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
    else:
        tokens, types, merges = bpe_vocab(V)
        V = len(tokens)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("llama-bpe" if vocab == "bpe-llama3" else "qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(tokens.index("<|begin_of_text|>"))
        w.add_eos_token_id(tokens.index("<|end_of_text|>"))
        w.add_add_bos_token(vocab == "bpe-llama3")

    def rnd(*s):
        return (rng.standard_normal(s, dtype=np.float32) * std).astype(np.float32)

    hd = E // H
    add_tensor(w, "token_embd.weight", rnd(V, E), qtype)
    for i in range(L):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(E, np.float32))
        add_tensor(w, p + "attn_q.weight", rnd(H * hd, E), qtype)
        add_tensor(w, p + "attn_k.weight", rnd(KV * hd, E), qtype)
        add_tensor(w, p + "attn_v.weight", rnd(KV * hd, E), qtype)
        if arch == "qwen2":
            w.add_tensor(p + "attn_q.bias", rnd(H * hd) * 10)
            w.add_tensor(p + "attn_k.bias", rnd(KV * hd) * 10)
            w.add_tensor(p + "attn_v.bias", rnd(KV * hd) * 10)
        add_tensor(w, p + "attn_output.weight", rnd(E, H * hd), qtype)
        w.add_tensor(p + "ffn_norm.weight", np.ones(E, np.float32))
        add_tensor(w, p + "ffn_gate.weight", rnd(F, E), qtype)
        add_tensor(w, p + "ffn_up.weight", rnd(F, E), qtype)
        add_tensor(w, p + "ffn_down.weight", rnd(E, F), qtype)
    if rope_freqs:  # Llama 3.1-style per-pair RoPE frequency factors
        w.add_tensor("rope_freqs.weight", np.linspace(1.0, 8.0, hd // 2, dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(E, np.float32))
    add_tensor(w, "output.weight", rnd(V, E), qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def field_value(f):
    t = f.types[0]
    if t == gguf.GGUFValueType.ARRAY:
        et = f.types[1]
        if et == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8", errors="surrogateescape") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]
    if t == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]].tolist()[0]


def requantize(src, out, type_name, chat_template=None):
    """A copy of `src` with its tensors in `type_name`; with `chat_template` (a file), that text as
    its tokenizer.chat_template."""
    qtype = TYPES[type_name]
    r = gguf.GGUFReader(src)
    arch = field_value(r.fields["general.architecture"])
    w = gguf.GGUFWriter(out, arch=arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name == "general.file_type" or (chat_template and name == "tokenizer.chat_template"):
            continue
        t = f.types[0]
        v = field_value(f)
        if t == gguf.GGUFValueType.ARRAY:
            w.add_array(name, v) if f.types[1] != gguf.GGUFValueType.FLOAT32 else w.add_array(name, [float(x) for x in v])
        else:
            w.add_key_value(name, v, t)
    w.add_file_type(FILE_TYPES[type_name])
    if chat_template:
        with open(chat_template, encoding="utf-8") as f:
            w.add_chat_template(f.read())
    for t in r.tensors:
        if t.tensor_type != QT.F32:
            sys.exit(f"requantize: {src} tensor {t.name} is {t.tensor_type.name}; only F32 sources are supported")
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))  # numpy order: rows, cols
        data = np.asarray(t.data, dtype=np.float32).reshape(shape)
        add_tensor(w, t.name, data, qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("random")
    a.add_argument("out")
    a.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    a.add_argument("--type", choices=sorted(TYPES), default="Q8_0")
    a.add_argument("--arch", choices=["llama", "qwen2"], default="llama")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--vocab", choices=["spm", "bpe-llama3", "bpe-qwen2"], default="spm")
    a.add_argument("--std", type=float, default=0.02, help="standard deviation of the random weights")
    a.add_argument("--rope-freqs", action="store_true", help="add Llama 3.1-style rope_freqs.weight factors")
    b = sub.add_parser("requantize")
    b.add_argument("src")
    b.add_argument("out")
    b.add_argument("--type", choices=["Q4_0", "Q8_0", "F16", "F32"], required=True)
    b.add_argument("--chat-template", help="a Jinja file: the copy's tokenizer.chat_template")
    args = ap.parse_args()
    if args.cmd == "random":
        write_random(args.out, args.shape, args.type, args.arch, args.seed, args.vocab, args.std, args.rope_freqs)
    else:
        requantize(args.src, args.out, args.type, args.chat_template)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
