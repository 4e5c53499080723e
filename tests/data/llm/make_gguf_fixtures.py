#!/usr/bin/env python3
"""Writes the tiny GGUF fixtures of llm_unit_tests (tests/unit/llm) with PyPI `gguf`.

Outputs (committed; regenerate with
`/work/main/.venv/bin/python tests/data/llm/make_gguf_fixtures.py`):
  metadata.gguf      one key of every GGUF value type (scalars, string, arrays of numbers, strings,
                     bools and nested arrays) and no tensors.
  tensors.gguf       one tensor per supported ggml type (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K) of
                     known values, plus general.alignment 64.
  bpe_llama3_vocab.gguf, bpe_qwen2_vocab.gguf  a 'gpt2' BPE tokenizer only (pre "llama-bpe" / "qwen2").
  tensors_expected.bin  for each tensor of tensors.gguf in order: its values as gguf's own Python
                     dequantize gives them, float32 little-endian, concatenated.
The quantized tensors are made by gguf.quants.quantize where gguf implements it (Q8_0, Q4_0, BF16);
for Q4_K and Q6_K (no Python quantizer) the blocks are random bytes with finite fp16 scales, and the
reference values come from gguf.quants.dequantize all the same.
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

HERE = os.path.dirname(os.path.abspath(__file__))


def write_metadata(path):
    w = gguf.GGUFWriter(path, arch="testarch")  # adds general.architecture = "testarch"
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 1.5)
    w.add_uint64("t.u64", 18000000000000000000)
    w.add_int64("t.i64", -9000000000000000000)
    w.add_float64("t.f64", -2.25)
    w.add_bool("t.bool_true", True)
    w.add_bool("t.bool_false", False)
    w.add_string("t.str", "héllo ✓")
    w.add_string("t.empty_str", "")
    w.add_array("t.arr_str", ["a", "", "ünï", "<s>"])
    w.add_key_value("t.arr_i32", [1, -2, 3], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)
    w.add_key_value("t.arr_u32", [7, 8], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT32)
    w.add_key_value("t.arr_f32", [0.5, -1.0, 3.25], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.FLOAT32)
    w.add_key_value("t.arr_u8", [1, 2, 255], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT8)
    w.add_key_value("t.arr_bool", [True, False, True], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.BOOL)
    w.add_array("t.arr_nested", [[1, 2], [3]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_cases(rng):
    """(name, ggml type, shape as numpy (rows, cols), raw bytes array, expected float32 values)."""
    cases = []
    x = (rng.standard_normal((2, 256)) * 0.7).astype(np.float32)
    cases.append(("w.f32", T.F32, x, x))
    x16 = x.astype(np.float16)
    cases.append(("w.f16", T.F16, x16, x16.astype(np.float32)))
    for name, qt in (("w.bf16", T.BF16), ("w.q8_0", T.Q8_0), ("w.q4_0", T.Q4_0)):
        q = quants.quantize(x, qt)
        cases.append((name, qt, q, quants.dequantize(q, qt).astype(np.float32)))
    for name, qt in (("w.q4_k", T.Q4_K), ("w.q6_k", T.Q6_K)):
        block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qt]
        raw = rng.integers(0, 256, size=(2, 512 // block_elems * block_bytes), dtype=np.uint8)
        # Replace the fp16 scales with small finite values (random bits could be inf/nan).
        for r in range(raw.shape[0]):
            for b in range(512 // block_elems):
                base = b * block_bytes
                offs = (0, 2) if qt == T.Q4_K else (208,)
                for o in offs:
                    raw[r, base + o: base + o + 2] = np.frombuffer(
                        np.float16(rng.uniform(0.001, 0.05)).tobytes(), dtype=np.uint8)
        cases.append((name, qt, raw, quants.dequantize(raw, qt).astype(np.float32)))
    return cases


def write_tensors(path, expected_path):
    rng = np.random.default_rng(7)
    cases = tensor_cases(rng)
    w = gguf.GGUFWriter(path, arch="testarch")
    w.add_custom_alignment(64)  # writes general.alignment and pads the data to it
    for name, qt, data, _ in cases:
        if qt in (T.F32, T.F16):
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(expected_path, "wb") as f:
        for _, _, _, expected in cases:
            f.write(np.ascontiguousarray(expected, dtype="<f4").tobytes())


def write_bpe_vocab(path, pre):
    """A 'gpt2' byte-level BPE tokenizer (no tensors): the vocab and merges that
    scripts/make_llm_models.py trains for its random BPE models."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts"))
    import make_llm_models
    tokens, types, merges = make_llm_models.bpe_vocab(512)
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index("<|begin_of_text|>"))
    w.add_eos_token_id(tokens.index("<|end_of_text|>"))
    w.add_add_bos_token(pre == "llama-bpe")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    write_metadata(os.path.join(out, "metadata.gguf"))
    write_tensors(os.path.join(out, "tensors.gguf"), os.path.join(out, "tensors_expected.bin"))
    write_bpe_vocab(os.path.join(out, "bpe_llama3_vocab.gguf"), "llama-bpe")
    write_bpe_vocab(os.path.join(out, "bpe_qwen2_vocab.gguf"), "qwen2")
    for n in ("metadata.gguf", "tensors.gguf", "tensors_expected.bin", "bpe_llama3_vocab.gguf", "bpe_qwen2_vocab.gguf"):
        print(n, os.path.getsize(os.path.join(out, n)))


if __name__ == "__main__":
    main()
