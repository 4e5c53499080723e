#!/usr/bin/env python3
"""inferloop against llama.cpp (PyPI llama-cpp-python) on the same GGUF files: token ids of a set
of strings (Unicode, whitespace, special tokens) and greedy generations token for token.

Models: the real stories260k (tests/data/llm; SentencePiece vocab) in F32 and requantized to Q8_0
and Q4_0, and small random-weight models made by scripts/make_llm_models.py: llama with a 'gpt2'
BPE vocab (Llama 3 pre-tokenizer) and Llama 3.1 RoPE frequency factors, qwen2 (attention biases, NeoX RoPE) with a Qwen2 BPE vocab.
With a Q8_0 KV cache on both sides (llama.cpp: type_k = type_v = Q8_0, flash attention): greedy
generations on random head-dim-32 models (shape tiny-hd32); stories260k (head dim 8) is refused by both.
Random models use weights of std 0.5 so that greedy choices are not near-ties. The K-quant model
('llama-q4km': Q4_K for most matrices, Q6_K for output, ffn_down and attn_v of the last layer) is
llama.cpp's own Q4_K_M quantization (llama_model_quantize) of a random F32 'tiny256' model (rows of
256 and 512 values, as K-quants need), with weights of std 0.25: at that width std 0.5 makes a
model so sensitive that one activation rounded to the other int8 neighbour (a last-bit float
difference) changes a later greedy choice.

Greedy ids must be equal token for token, except that they may part at a near-tie (llama.cpp's
logits for the two choices at most NEAR_TIE apart), which the engines' different roundings may
decide either way (assertGreedyMatches); such a parting is printed.

Usage: test_llama_cpp.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure, 77 skipped (llama_cpp not installed: scripts/setup_llama_cpp.sh,
or stories260k absent).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
INFERLOOP = None
sys.path.insert(0, HERE)
import serve_harness  # noqa: E402  (run_tests)

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import llama_cpp_anchor  # noqa: E402

try:
    import numpy as np
    llama_cpp = llama_cpp_anchor.load()
except ImportError:  # reported as a skip below
    llama_cpp = None

STRINGS = [
    "Once upon a time", "Hello world", " leading space", "trailing space ", "  two  spaces", "tabs\tand\nnew\nlines",
    "\n\nblank lines\n\n", "I'm sure you're right, we'll see", "UPPER CASE AND lower", "2024-11-30 12:34:56.789",
    "x = [i ** 2 for i in range(10)]", "Caf\u00e9 na\u00efve r\u00e9sum\u00e9", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440", "emoji \U0001F600\U0001F680!", "mixed 123abc!!! ???", "\u00a0nbsp\u3000ideographic",
]
SPECIAL_STRINGS = ["<s>hello</s>", "a<|eot_id|>b", "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
                   "<|im_start|>user\nhi<|im_end|>"]


# llama.cpp's top two logits at most this far apart: a near-tie that rounding may decide either way
# (the closest calls in these tests' sequences, where both engines agree, are 0.005-0.08 apart).
NEAR_TIE = 0.01


class Greedy(list):
    """Greedy token ids and, in .logits, the logits each was chosen from."""

    def __init__(self):
        super().__init__()
        self.logits = []


def make(args, out):
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py")] + args, check=True,
                   stdout=subprocess.DEVNULL)
    return out


def quantize_q4_k_m(src, out):
    """llama.cpp's quantizer (the one behind llama-quantize) to Q4_K_M; returns out."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = 1
    rc = llama_cpp.llama_model_quantize(src.encode(), out.encode(), params)
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src}) failed: {rc}")
    return out


class TestAgainstLlamaCpp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if llama_cpp is None:
            raise unittest.SkipTest("llama_cpp (PyPI llama-cpp-python) is not installed: scripts/setup_llama_cpp.sh")
        if not os.path.exists(STORIES):
            raise unittest.SkipTest(f"test model not present: {STORIES}")
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_llamacpp_")
        t = cls.tmp
        cls.models = {"stories": STORIES}
        for q in ("Q8_0", "Q4_0"):
            p = os.path.join(t, f"stories-{q}.gguf")
            make(["requantize", STORIES, p, "--type", q], p)
            cls.models[f"stories-{q}"] = p
        for name, extra in (("llama-bpe", ["--arch", "llama", "--vocab", "bpe-llama3", "--type", "Q8_0", "--rope-freqs"]),
                            ("qwen2-bpe", ["--arch", "qwen2", "--vocab", "bpe-qwen2", "--type", "F16"]),
                            ("llama-spm-q4", ["--arch", "llama", "--vocab", "spm", "--type", "Q4_0"])):
            p = os.path.join(t, f"{name}.gguf")
            make(["random", p, "--shape", "tiny", "--std", "0.5", "--seed", "3"] + extra, p)
            cls.models[name] = p
        # Head dim 32 (tiny-hd32), so that it fits a Q8_0 KV cache (llama.cpp refuses stories260k's 8).
        for seed in (3, 4):
            p = os.path.join(t, f"llama-hd32-{seed}.gguf")
            make(["random", p, "--shape", "tiny-hd32", "--type", "Q8_0", "--std", "0.5", "--seed", str(seed)], p)
            cls.models[f"llama-hd32-{seed}"] = p
        p32 = make(["random", os.path.join(t, "llama-256-f32.gguf"), "--shape", "tiny256", "--type", "F32", "--std", "0.25",
                    "--seed", "3"], os.path.join(t, "llama-256-f32.gguf"))
        cls.models["llama-q4km"] = quantize_q4_k_m(p32, os.path.join(t, "llama-q4km.gguf"))
        cls.llms = {}

    @classmethod
    def tearDownClass(cls):
        cls.llms = {}
        if hasattr(cls, "tmp"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def llm(self, name, kv_type="f16"):
        key = (name, kv_type)
        if key not in self.llms:
            # A quantized V cache needs flash attention in llama.cpp (GGML_TYPE_Q8_0 = 8).
            kv = {} if kv_type == "f16" else {"type_k": 8, "type_v": 8, "flash_attn": True}
            self.llms[key] = llama_cpp.Llama(model_path=self.models[name], n_ctx=256, n_batch=256, n_threads=1,
                                             n_threads_batch=1, verbose=False, **kv)
        return self.llms[key]

    def inferloop_ids(self, name, text, special):
        cmd = [INFERLOOP, "tokenize", self.models[name], "--stdin", "--ids-only"] + (["--parse-special"] if special else [])
        out = subprocess.run(cmd, input=text.encode(), check=True, capture_output=True).stdout.decode().split()
        return [int(x) for x in out]

    def test_token_ids_match(self):
        for name in ("stories", "llama-bpe", "qwen2-bpe"):
            llm = self.llm(name)
            for s in STRINGS:
                with self.subTest(model=name, text=s):
                    self.assertEqual(self.inferloop_ids(name, s, False), llm.tokenize(s.encode(), add_bos=True, special=False))
            for s in SPECIAL_STRINGS:
                with self.subTest(model=name, text=s, special=True):
                    self.assertEqual(self.inferloop_ids(name, s, True), llm.tokenize(s.encode(), add_bos=True, special=True))

    def greedy_llama_cpp(self, name, ids, n, kv_type="f16", prompt_one_by_one=False):
        """llama.cpp's greedy ids, with the logits it chose each one from (a Greedy)."""
        llm = self.llm(name, kv_type)
        llm.reset()
        if prompt_one_by_one:
            for t in ids:
                llm.eval([t])
        else:
            llm.eval(ids)
        out = Greedy()
        for _ in range(n):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
            tok = int(np.argmax(logits))
            out.append(tok)
            out.logits.append(logits.copy())
            llm.eval([tok])
        return out

    def assertGreedyMatches(self, got, want, what=""):
        """inferloop's greedy ids `got` equal llama.cpp's (`want`, a Greedy) token for token, except
        that they may part at a near-tie: a step where llama.cpp's logits for its token and for
        inferloop's differ by at most NEAR_TIE. The two engines round differently (inferloop's
        packed K-quant products sum each sub-block before its scale; llama.cpp's kernels depend on
        the CPU it was built for), so such a step may go either way; after it the sequences are not
        comparable. A wrong kernel parts at a clear choice and fails."""
        self.assertEqual(len(got), len(want), what)
        for i, (g, w) in enumerate(zip(got, want)):
            if g == w:
                continue
            gap = float(want.logits[i][w] - want.logits[i][g])
            self.assertLessEqual(gap, NEAR_TIE, f"{what}: step {i}: inferloop chose {g}, llama.cpp {w}, whose logits "
                                 f"for them differ by {gap:.4g} (ids so far equal: {got[:i]})")
            print(f"{what}: a near-tie at step {i} (logits {gap:.3g} apart) went the other way; equal before it",
                  file=sys.stderr)
            return

    def greedy_inferloop(self, name, ids, n, isa=None, kv_type="f16"):
        env = dict(os.environ)
        if isa:
            env["INFERLOOP_ISA"] = isa
        err = subprocess.run([INFERLOOP, "generate", self.models[name], "--prompt-ids", ",".join(map(str, ids)), "-n",
                              str(n), "--temp", "0", "--ignore-eos", "-t", "1", "--print-token-ids", "--kv-type", kv_type],
                             check=True, capture_output=True, env=env).stderr.decode("utf-8", "replace")
        line = [l for l in err.splitlines() if l.startswith("generated ids:")][0]
        return [int(x) for x in line.split(":")[1].split()]

    def test_greedy_generation_matches(self):
        prompts = ["Once upon a time", "The little dog", "Lily and Ben went to the park. They"]
        for name in ("stories", "stories-Q8_0", "stories-Q4_0", "llama-bpe", "qwen2-bpe", "llama-spm-q4", "llama-q4km"):
            llm = self.llm(name)
            for p in prompts:
                ids = llm.tokenize(p.encode(), add_bos=True, special=False)
                with self.subTest(model=name, prompt=p):
                    self.assertGreedyMatches(self.greedy_inferloop(name, ids, 48), self.greedy_llama_cpp(name, ids, 48),
                                             f"{name} {p!r}")

    def test_greedy_generation_matches_on_every_isa(self):
        for name in ("stories-Q4_0", "llama-q4km"):
            ids = self.llm(name).tokenize(b"Once upon a time", add_bos=True, special=False)
            want = self.greedy_llama_cpp(name, ids, 32)
            for isa in ("avx512", "avx2", "scalar"):
                with self.subTest(model=name, isa=isa):
                    self.assertGreedyMatches(self.greedy_inferloop(name, ids, 32, isa), want, f"{name} {isa}")

    def test_q4_k_m_prompt_one_token_at_a_time_on_every_isa(self):
        # inferloop's per-row Q4_K/Q6_K dots equal llama.cpp's bit for bit (the scalar path;
        # llm_unit_tests LlamaCppKQuant; the AVX2 and AVX-512 paths' packed products sum each
        # sub-block before its scale, within rounding: llm_kernels.h gemm_g16_q4_k), and its
        # logits on this model mostly do too when llama.cpp also computes the prompt one token
        # at a time: llama.cpp's
        # several-token prompt path rounds differently from its own one-token path, while
        # inferloop's numbers are the same either way. (Some other operation still differs in
        # the last bit now and then: not located yet.)
        for p in ["Once upon a time", "The little dog", "Lily and Ben went to the park. They"]:
            ids = self.llm("llama-q4km").tokenize(p.encode(), add_bos=True, special=False)
            want = self.greedy_llama_cpp("llama-q4km", ids, 48, prompt_one_by_one=True)
            for isa in (None, "avx2", "scalar"):
                with self.subTest(prompt=p, isa=isa or "best"):
                    self.assertGreedyMatches(self.greedy_inferloop("llama-q4km", ids, 48, isa), want,
                                             f"llama-q4km {p!r} {isa or 'best'}")

    def test_q4_k_m_fixture_holds_both_k_quants(self):
        # The greedy tests above cover the Q4_K and Q6_K kernels only if the quantizer used both.
        import gguf
        types = {t.tensor_type.name for t in gguf.GGUFReader(self.models["llama-q4km"]).tensors}
        self.assertIn("Q4_K", types)
        self.assertIn("Q6_K", types)
        self.assertLessEqual(types, {"Q4_K", "Q6_K", "F32"})

    def test_greedy_generation_matches_with_q8_0_kv_cache(self):
        # KV cache in Q8_0 on both sides (llama.cpp: type_k = type_v = Q8_0 with flash attention).
        # Random models amplify rounding differences, so which seeds give equality is partly
        # luck: on the two seeds used here all prompts match for 48 tokens (with the F16 cache
        # too). The Q8_0 ids differ from the F16 ids, so the cache type really is in effect.
        prompts = ["Once upon a time", "The little dog", "Lily and Ben went to the park. They"]
        for name in ("llama-hd32-3", "llama-hd32-4"):
            for p in prompts:
                ids = self.llm(name).tokenize(p.encode(), add_bos=True, special=False)
                want = self.greedy_llama_cpp(name, ids, 48, kv_type="q8_0")
                with self.subTest(model=name, prompt=p):
                    self.assertGreedyMatches(self.greedy_inferloop(name, ids, 48, kv_type="q8_0"), want,
                                             f"{name} {p!r} q8_0 cache")
        ids = self.llm("llama-hd32-3").tokenize(b"The little dog", add_bos=True, special=False)
        self.assertNotEqual(self.greedy_inferloop("llama-hd32-3", ids, 48, kv_type="q8_0"),
                            self.greedy_inferloop("llama-hd32-3", ids, 48, kv_type="f16"))
        for isa in ("avx2", "scalar"):
            with self.subTest(isa=isa):
                self.assertGreedyMatches(self.greedy_inferloop("llama-hd32-3", ids, 48, isa, kv_type="q8_0"),
                                         self.greedy_llama_cpp("llama-hd32-3", ids, 48, kv_type="q8_0"),
                                         f"llama-hd32-3 {isa} q8_0 cache")

    def test_q8_0_kv_cache_refused_for_head_dim_8(self):
        # stories260k's heads have 8 values: a Q8_0 block (32) does not fit; both refuse.
        with self.assertRaises(ValueError):
            self.llm("stories", "q8_0")
        r = subprocess.run([INFERLOOP, "generate", self.models["stories"], "-p", "Once", "-n", "4", "--kv-type", "q8_0"],
                           capture_output=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, b"")
        self.assertIn(b"head dim is 8", r.stderr)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    serve_harness.run_tests(set_inferloop)
