"""Tests of the Python package's inferloop.LLM, inferloop.quantize and inferloop.compare (run with the
built package first on PYTHONPATH, as tests/python/build_and_test.py does).

LLM: tests/data/llm/stories260k.gguf against its reference token ids (stories260k.md: llama.cpp and
llama2.c agree), streaming against non-streamed text, early close, bad input. quantize/compare: the
models of tests/e2e/make_quantize_models.py and make_compare_models.py; quantized models are run with
inferloop.InferenceSession and onnxruntime and checked against the FP32 model.
"""
import ast
import os
import re
import sys
import tempfile
import threading
import unittest

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort

import inferloop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import make_compare_models  # noqa: E402
import int8_anchor  # noqa: E402  (ORT, or onnx.reference where ORT's int8 kernels saturate)
import make_quantize_models  # noqa: E402

STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")


def reference_ids():
    """(prompt ids, greedy ids) from stories260k.md, the reference's one home."""
    with open(os.path.join(ROOT, "tests", "data", "llm", "stories260k.md")) as f:
        md = f.read()
    prompt = [int(t) for t in re.search(r"tokenizes \(with BOS\) to ([0-9 ]+);", md).group(1).split()]
    greedy = [int(t) for t in re.search(r"gives the ids\n\n(.*?)\n\nwhich", md, re.S).group(1).split()]
    return prompt, greedy


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class TestLLM(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.llm = inferloop.LLM(STORIES)
        cls.prompt_ids, cls.greedy_ids = reference_ids()
        assert len(cls.prompt_ids) == 5 and len(cls.greedy_ids) == 64

    def test_tokenize_matches_reference(self):
        self.assertEqual(self.llm.tokenize("Once upon a time"), self.prompt_ids)
        self.assertEqual(self.llm.tokenize("Once upon a time", add_bos=False), self.prompt_ids[1:])
        self.assertEqual(self.llm.bos_token_id, self.prompt_ids[0])
        self.assertEqual(self.llm.vocab_size, 512)
        self.assertEqual(self.llm.context_length, 128)
        self.assertEqual(self.llm.detokenize(self.prompt_ids[1:]).strip(), "Once upon a time")

    def test_greedy_generation_matches_reference(self):
        text = self.llm.generate("Once upon a time", max_tokens=64, temperature=0, stream=False)
        self.assertEqual(text, self.llm.detokenize(self.greedy_ids))
        self.assertTrue(text.startswith(", there was a little girl named Lily. She loved to play outside"), text)
        self.assertTrue(text.endswith("it was too high.\nLily's mom said"), text)
        g = self.llm.generate("Once upon a time", max_tokens=64, temperature=0)
        self.assertIsNone(g.finish_reason)
        self.assertEqual("".join(g), text)
        self.assertEqual(g.token_ids, self.greedy_ids)
        self.assertEqual(g.prompt_token_ids, self.prompt_ids)
        self.assertEqual(g.finish_reason, "length")
        self.assertEqual(g.stats["prompt_tokens"], 5)
        self.assertEqual(g.stats["generated_tokens"], 64)
        # The prompt as token ids (no BOS added to ids) gives the same.
        g = self.llm.generate(self.prompt_ids, max_tokens=64, temperature=0)
        self.assertEqual("".join(g), text)
        self.assertEqual(g.token_ids, self.greedy_ids)

    def test_streaming_pieces_join_to_the_text(self):
        for kw in ({"temperature": 0.8, "seed": 7}, {"temperature": 1.0, "top_k": 0, "top_p": 0.9, "seed": 3},
                   {"temperature": 0, "stop": ["Lily"]}, {"temperature": 0, "stop": "red ball"}):
            text = self.llm.generate("Once upon a time", max_tokens=100, stream=False, **kw)
            g = self.llm.generate("Once upon a time", max_tokens=100, **kw)
            pieces = list(g)
            self.assertGreater(len(pieces), 1, kw)
            self.assertTrue(all(isinstance(p, str) and p for p in pieces), kw)
            self.assertEqual("".join(pieces), text, kw)
            if "stop" in kw:
                self.assertEqual(g.finish_reason, "stop", kw)
        # A stop string ends the text before it.
        self.assertEqual(self.llm.generate("Once upon a time", max_tokens=64, temperature=0, stop=["Lily"],
                                           stream=False), ", there was a little girl named ")
        # A seed reproduces a sampled generation; another seed gives another one.
        a = self.llm.generate("Once upon a time", max_tokens=60, seed=11, stream=False)
        self.assertEqual(a, self.llm.generate("Once upon a time", max_tokens=60, seed=11, stream=False))
        self.assertNotEqual(a, self.llm.generate("Once upon a time", max_tokens=60, seed=12, stream=False))

    def test_early_close_stops_the_generation(self):
        g = self.llm.generate("Once upon a time", max_tokens=120, temperature=0, ignore_eos=True)
        first = next(g)
        self.assertTrue(first)
        g.close()
        self.assertEqual(g.finish_reason, "cancelled")
        # The generation computes a few pieces ahead of the reader at most, then waits for it.
        print(f"closed after 1 piece: {len(g.token_ids)} of 120 tokens generated")
        self.assertLess(len(g.token_ids), 120)
        with self.assertRaises(StopIteration):
            next(g)
        g.close()  # twice is fine
        # Leaving a `with` block closes it; so does dropping the object (no hang).
        with self.llm.generate("Once upon a time", max_tokens=120, temperature=0, ignore_eos=True) as g2:
            for _ in g2:
                break
        self.assertEqual(g2.finish_reason, "cancelled")
        g3 = self.llm.generate("Once upon a time", max_tokens=120, temperature=0)
        next(g3)
        del g3
        # The model is shared: generations outlive the LLM object that made them.
        llm = inferloop.LLM(STORIES)
        g4 = llm.generate("Once upon a time", max_tokens=64, temperature=0)
        del llm
        "".join(g4)
        self.assertEqual(g4.token_ids, self.greedy_ids)

    def test_threads_generate_at_once(self):
        results = [None] * 4

        def work(i):
            results[i] = self.llm.generate("Once upon a time", max_tokens=64, seed=i, stream=False)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(4):
            self.assertEqual(results[i], self.llm.generate("Once upon a time", max_tokens=64, seed=i, stream=False))

    def test_sampling_penalties_and_logit_bias(self):
        gen = self.llm.generate
        greedy = gen("Once upon a time", max_tokens=64, temperature=0, stream=False)
        neutral = gen("Once upon a time", max_tokens=64, temperature=0, stream=False, min_p=0, presence_penalty=0,
                      frequency_penalty=0, repetition_penalty=1, logit_bias={})
        self.assertEqual(neutral, greedy)
        penalized = gen("Once upon a time", max_tokens=64, temperature=0, stream=False, frequency_penalty=2)
        self.assertNotEqual(penalized, greedy)
        repeat = gen("Once upon a time", max_tokens=64, temperature=0, stream=False, repetition_penalty=1.5)
        self.assertNotEqual(repeat, greedy)
        print(f"\n  frequency_penalty=2: {penalized!r}\n  repetition_penalty=1.5: {repeat!r}")
        # min_p=1 keeps only the most likely token: sampling at any temperature is greedy.
        self.assertEqual(gen("Once upon a time", max_tokens=64, temperature=1.5, top_k=0, top_p=1, seed=3,
                             stream=False, min_p=1), greedy)
        # +100 forces a token at temperature 0; -100 bans the greedy choice.
        with gen("Once upon a time", max_tokens=8, temperature=0, logit_bias={300: 100.0}) as g:
            "".join(g)
            self.assertEqual(g.token_ids, [300] * 8)
        with gen("Once upon a time", max_tokens=1, temperature=0, logit_bias={self.greedy_ids[0]: -100}) as g:
            "".join(g)
            self.assertNotEqual(g.token_ids, self.greedy_ids[:1])
        cases = [
            (dict(min_p=2), r"min_p must be in \[0, 1\], got 2"),
            (dict(presence_penalty=3), r"presence_penalty must be in \[-2, 2\], got 3"),
            (dict(frequency_penalty=-2.5), r"frequency_penalty must be in \[-2, 2\], got -2.5"),
            (dict(repetition_penalty=0), "repetition_penalty must be > 0, got 0"),
            (dict(repetition_penalty=float("nan")), "repetition_penalty must be > 0"),
            (dict(logit_bias={512: 1}), r"logit_bias token id 512 is not a token id of this model \(vocabulary size 512\)"),
            (dict(logit_bias={-1: 1}), "logit_bias token id -1 is not a token id"),
            (dict(logit_bias={3: 101}), r"logit_bias of token 3 must be in \[-100, 100\], got 101"),
        ]
        for kw, msg in cases:
            for stream in (True, False):
                with self.assertRaisesRegex(inferloop.InvalidArgument, msg, msg=str(kw)):
                    gen("Once upon a time", stream=stream, **kw)
        with self.assertRaises(TypeError):
            gen("x", logit_bias={"300": 1})
        with self.assertRaises(TypeError):
            gen("x", logit_bias=[(300, 1)])

    def test_bad_input_raises_clear_errors(self):
        with self.assertRaises(inferloop.NoSuchFile) as cm:
            inferloop.LLM("/nonexistent/model.gguf")
        self.assertIn("/nonexistent/model.gguf", str(cm.exception))
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(b"not a gguf file at all")
            f.flush()
            with self.assertRaises(inferloop.InferloopError) as cm:
                inferloop.LLM(f.name)
            self.assertIn(f.name, str(cm.exception))
        with self.assertRaisesRegex(inferloop.InvalidArgument, "q4"):
            inferloop.LLM(STORIES, kv_type="q4")
        with self.assertRaisesRegex(inferloop.InvalidArgument, "kv_type: .*head dim"):
            inferloop.LLM(STORIES, kv_type="q8_0")  # stories260k's head dim is 8
        with self.assertRaisesRegex(inferloop.InvalidArgument, "threads"):
            inferloop.LLM(STORIES, threads=-1)
        gen = self.llm.generate
        cases = [
            (dict(temperature=-1), "temperature"),
            (dict(top_p=0), "top_p"),
            (dict(top_k=-2), "top_k"),
            (dict(max_tokens=-1), "max_tokens"),
            (dict(max_tokens=500), "exceeds the model's context of 128 tokens"),
            (dict(stop=["ok", ""]), "empty stop string"),
        ]
        for kw, msg in cases:
            for stream in (True, False):
                with self.assertRaisesRegex(inferloop.InvalidArgument, msg, msg=str(kw)):
                    gen("Once upon a time", stream=stream, **kw)
        with self.assertRaisesRegex(inferloop.InvalidArgument, "no tokens"):
            gen([])
        with self.assertRaisesRegex(inferloop.InvalidArgument, r"9999\) is not a token id of this model \(0..511\)"):
            gen([1, 9999])
        with self.assertRaisesRegex(inferloop.InvalidArgument, "not a token id"):
            self.llm.detokenize([1, -5])
        with self.assertRaises(TypeError):
            gen(3.5)
        with self.assertRaises(TypeError):
            gen("x", stop=5)
        self.assertTrue(issubclass(inferloop.InvalidArgument, RuntimeError))


class TestQuantizeCompare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="inferloop_py_tools_")
        cls.q = os.path.join(cls.tmp.name, "q")
        cls.c = os.path.join(cls.tmp.name, "c")
        make_quantize_models.main(cls.q)
        make_compare_models.main(cls.c)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, *p):
        return os.path.join(self.q, *p)

    def run_both(self, model, x):
        """The first output of `model` on x from inferloop.InferenceSession and from onnxruntime."""
        il = inferloop.InferenceSession(model).run(None, {"x": x})[0]
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        return il, ref

    def test_static_quantization_runs_close_to_fp32(self):
        out = self.path("cnn_int8.onnx")
        r = inferloop.quantize(self.path("cnn.onnx"), out, self.path("calibration"), per_channel=True,
                               eval=self.path("eval"), timing_runs=2)
        self.assertEqual((r["mode"], r["method"], r["per_channel"]), ("static", "minmax", True))
        self.assertEqual(r["output"], out)
        self.assertGreater(r["quantized_nodes"], 0)
        self.assertGreater(r["qdq_tensors"], 0)
        self.assertEqual(r["output_bytes"], os.path.getsize(out))
        self.assertEqual(r["model_bytes"], os.path.getsize(self.path("cnn.onnx")))
        self.assertEqual(r["kept_fp32"], [])
        e = r["eval"]
        self.assertEqual((e["samples"], e["metric"], e["fp32"]), (200, "top-1 accuracy", 100.0))
        self.assertAlmostEqual(e["drop"], e["fp32"] - e["int8"])
        self.assertGreater(e["cosine"], 0.99)
        self.assertNotIn("within_bound", e)
        self.assertEqual(r["timing"]["runs"], 2)
        self.assertGreater(r["timing"]["fp32_ms"], 0)
        self.assertGreater(r["timing"]["int8_ms"], 0)
        print(f"static: {r['quantized_nodes']} nodes, INT8 {e['int8']}% (FP32 100%), timing {r['timing']}")
        self.assertIn("calibration: running the FP32 model over 64 samples", r["log"])
        x = np.load(self.path("eval", "x.npy"))
        fp32_il, fp32_ort = self.run_both(self.path("cnn.onnx"), x)
        int8_il = inferloop.InferenceSession(out).run(None, {"x": x})[0]
        int8_ort = list(int8_anchor.int8_anchor_run(out, {"x": x}).values())[0]
        self.assertGreater(cosine(int8_ort, fp32_ort), 0.995)
        self.assertGreater(cosine(int8_il, fp32_il), 0.995)
        # (A value on a rounding boundary could flip one quantization step: a small tolerance.)
        np.testing.assert_allclose(int8_il, int8_ort, atol=0.01 * np.abs(int8_ort).max())

    def test_reduce_range_writes_7_bit_weights(self):
        out = self.path("cnn_int8_7bit.onnx")
        r = inferloop.quantize(self.path("cnn.onnx"), out, self.path("calibration"), per_channel=True,
                               reduce_range=True, timing_runs=0)
        self.assertTrue(r["reduce_range"])
        self.assertIn("7-bit", r["log"])
        model = onnx.load(out)
        inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
        weights = [inits[n.input[0]] for n in model.graph.node
                   if n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].dtype == np.int8]
        self.assertGreater(len(weights), 0)
        for w in weights:
            self.assertEqual(int(np.abs(w.astype(np.int32)).max()), 64)  # every channel's max |w| at the top
        x = np.load(self.path("eval", "x.npy"))
        fp32_il, _ = self.run_both(self.path("cnn.onnx"), x)
        self.assertGreater(cosine(inferloop.InferenceSession(out).run(None, {"x": x})[0], fp32_il), 0.99)

    def test_dynamic_and_mixed_precision(self):
        out = self.path("mlp_dyn.onnx")
        r = inferloop.quantize(self.path("mlp.onnx"), out, dynamic=True, timing_runs=0)
        self.assertEqual((r["mode"], r["method"], r["quantized_nodes"]), ("dynamic", None, 3))
        self.assertIsNone(r["timing"])
        self.assertIsNone(r["eval"])
        x = np.load(self.path("mlp_eval", "x.npy"))[:8]
        fp32, _ = self.run_both(self.path("mlp.onnx"), x)
        il, ref = self.run_both(out, x)
        np.testing.assert_allclose(il, ref, rtol=1e-5, atol=1e-5)
        self.assertGreater(cosine(il, fp32), 0.999)
        # conv2 of cnn_outlier loses most of the accuracy in INT8: kept FP32 first.
        r = inferloop.quantize(self.path("cnn_outlier.onnx"), self.path("mixed.onnx"), self.path("calibration"),
                               eval=self.path("eval"), max_accuracy_drop=1, exclude="fc", timing_runs=0)
        self.assertEqual(r["kept_fp32"][0], "conv2")
        self.assertEqual(r["excluded"], ["fc"])
        self.assertTrue(r["eval"]["within_bound"])
        self.assertLessEqual(r["eval"]["drop"], 1)
        self.assertIn("mixed precision step 1: keep Conv 'conv2' FP32", r["log"])

    def test_quantize_bad_arguments(self):
        m, o = self.path("cnn.onnx"), self.path("bad.onnx")
        cal = self.path("calibration")
        cases = [
            ((m, o), {}, "static quantization needs --calibration"),
            ((m, o, cal), {"method": "median"}, "median"),
            ((m, o, cal), {"exclude": ["conv1", "nope"]}, "no node named 'nope'"),
            ((m, o, cal), {"percentile": 101}, "percentile"),
            ((m, o, cal), {"max_accuracy_drop": 1}, "needs --eval"),
            ((m, o, cal), {"timing_runs": -1}, "timing_runs"),
            ((m, o, self.path("empty")), {}, "calibration"),
        ]
        for args, kw, msg in cases:
            with self.assertRaisesRegex(inferloop.InvalidArgument, msg, msg=str(kw)):
                inferloop.quantize(*args, **kw)
        with self.assertRaises(inferloop.InferloopError) as cm:
            inferloop.quantize(self.path("missing.onnx"), o, cal)
        self.assertIn("missing.onnx", str(cm.exception))
        self.assertFalse(os.path.exists(o))

    def test_compare_report(self):
        c = lambda *p: os.path.join(self.c, *p)  # noqa: E731
        r = inferloop.compare(c("ref.onnx"), c("perturbed.onnx"), c("data"))
        self.assertEqual((r["model_a"], r["model_b"], r["samples"]), (c("ref.onnx"), c("perturbed.onnx"), 2))
        names = [t["name"] for t in r["tensors"]]
        self.assertEqual(names, ["conv1", "relu1", "conv2", "relu2", "pool", "flat", "logits", "probs"])
        self.assertEqual(r["first_divergence"], "conv2")
        by = {t["name"]: t for t in r["tensors"]}
        self.assertFalse(by["conv1"]["diverged"])
        self.assertAlmostEqual(by["conv1"]["cosine"], 1.0, places=6)
        self.assertTrue(by["conv2"]["diverged"])
        self.assertLess(by["conv2"]["cosine"], 0.99)
        self.assertTrue(by["probs"]["output"])
        self.assertEqual(by["probs"]["shape"], [1, 5])
        self.assertFalse(r["preprocessing_mismatch"])
        # Identical weights: no divergence. A subset of tensors; a shape change; calibration statistics.
        self.assertIsNone(inferloop.compare(c("ref.onnx"), c("same.onnx"), c("data"))["first_divergence"])
        r = inferloop.compare(c("ref.onnx"), c("perturbed.onnx"), c("data"), tensors="conv1,conv2")
        self.assertEqual([t["name"] for t in r["tensors"]][:2], ["conv1", "conv2"])
        self.assertNotIn("relu1", [t["name"] for t in r["tensors"]])
        r = inferloop.compare(c("ref.onnx"), c("wide.onnx"), c("data"))
        self.assertEqual({t["name"]: t["status"] for t in r["tensors"]}["conv2"], "shape_mismatch")
        r = inferloop.compare(c("ref.onnx"), c("same.onnx"), c("shifted"), calibration=c("calibration"))
        self.assertTrue(r["preprocessing_mismatch"])
        flagged = [k["channel"] for k in r["inputs"][0]["checks"] if k["flagged"]]
        self.assertEqual(flagged, [1])

    def test_sensitivity_and_compare_bad_arguments(self):
        s = inferloop.compare(self.path("cnn_outlier.onnx"), sensitivity=True, calibration=self.path("calibration"),
                              eval=self.path("eval"))
        self.assertEqual(s["layers"][0]["layer"], "conv2")
        self.assertEqual(s["fp32_metric"], 100)
        # 7-bit weights: the same ranking's head, other numbers (one bit less of weight precision).
        s7 = inferloop.compare(self.path("cnn_outlier.onnx"), sensitivity=True, calibration=self.path("calibration"),
                               eval=self.path("eval"), reduce_range=True)
        self.assertEqual(s7["layers"][0]["layer"], "conv2")
        cos = {x["layer"]: x["cosine"] for x in s["layers"]}
        self.assertTrue(any(x["cosine"] != cos[x["layer"]] for x in s7["layers"]), s7["layers"])
        c = lambda *p: os.path.join(self.c, *p)  # noqa: E731
        cases = [
            ((c("ref.onnx"), c("same.onnx")), {}, "needs model_a, model_b and data"),
            ((c("ref.onnx"), c("same.onnx"), c("data")), {"cosine_threshold": 2}, "cosine_threshold"),
            ((c("ref.onnx"), c("same.onnx"), c("wrong_name")), {}, "no data file matches an input of the model; it needs x"),
            ((c("ref.onnx"), c("same.onnx"), c("bad_shape")), {}, r"input 'x' expects shape float32\[1,3,8,8\]"),
            ((c("missing.onnx"), c("same.onnx"), c("data")), {}, "cannot open model file"),
            ((c("ref.onnx"), c("same.onnx")), {"sensitivity": True}, "takes one model"),
            ((self.path("cnn.onnx"),), {"sensitivity": True}, "needs --calibration DATA and --eval DATA"),
        ]
        for args, kw, msg in cases:
            with self.assertRaisesRegex(inferloop.InferloopError, msg, msg=str(args[-1:]) + str(kw)):
                inferloop.compare(*args, **kw)


def runtime_params(fn):
    """[(name, default or NO_DEFAULT, keyword-only)] of a nanobind function, from its signature (a type's
    [...] may hold commas: Mapping[int, float])."""
    sig, _, defaults = fn.__nb_signature__[0]
    params, kw_only = [], False
    for part in re.findall(r"[(,]\s*(\*|\w+)(?=\s*[:,)=])(?:(?:\[[^\]]*\]|[^,=)\[])*= \\(\d+))?", sig.split(" -> ")[0]):
        name, default = part
        if name == "*":
            kw_only = True
        elif name != "self":
            params.append((name, defaults[int(default)] if default else NO_DEFAULT, kw_only))
    return params


NO_DEFAULT = object()


def stub_params(node):
    """The same list for a function of a .pyi file."""
    a = node.args
    pos = [x for x in a.posonlyargs + a.args if x.arg != "self"]
    pos_defaults = [NO_DEFAULT] * (len(pos) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    out = [(x.arg, d, False) for x, d in zip(pos, pos_defaults)]
    out += [(x.arg, NO_DEFAULT if d is None else ast.literal_eval(d), True) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    return out


class TestStubs(unittest.TestCase):
    def test_stubs_match_the_module(self):
        """llm.pyi and tools.pyi name every parameter, default and keyword-only marker as the module does."""
        stubs = os.path.join(ROOT, "python", "inferloop")
        checked = 0
        for stub, owner in (("llm.pyi", None), ("tools.pyi", inferloop)):
            with open(os.path.join(stubs, stub)) as f:
                tree = ast.parse(f.read())
            for node in tree.body:
                targets = []
                if isinstance(node, ast.FunctionDef):
                    targets = [(getattr(owner, node.name), node)]
                elif isinstance(node, ast.ClassDef):
                    cls = getattr(inferloop, node.name)
                    targets = [(getattr(cls, f.name), f) for f in node.body
                               if isinstance(f, ast.FunctionDef) and hasattr(getattr(cls, f.name), "__nb_signature__")]
                for fn, f in targets:
                    with self.subTest(stub=stub, function=f.name):
                        want, got = stub_params(f), runtime_params(fn)
                        if any(isinstance(d, ast.Name) and d.id == "overload" for d in f.decorator_list):
                            # An overload may require what has a default (stream: Literal[False]).
                            want = [(n, g[1] if d is NO_DEFAULT else d, k) for (n, d, k), g in zip(want, got)]
                        self.assertEqual(want, got)
                        checked += 1
        self.assertGreaterEqual(checked, 9)  # quantize, compare; LLM __init__/tokenize/detokenize/generate x2; Generation


if __name__ == "__main__":
    unittest.main(verbosity=2)
