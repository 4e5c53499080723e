#!/usr/bin/env python3
"""End-to-end tests of POST /v1/embeddings of `inferloop serve` with the OpenAI Python SDK, on the
real stories260k model (tests/data/llm), and copies of it whose GGUF metadata says
llama.pooling_type 2 (cls), 3 (last) and 0 (none).

Covers: every input form (a string, strings, token ids, lists of token ids) in both encodings
("float" and "base64", decoded by the SDK) giving the same unit vectors in input order; usage
counts; dimensions (truncate and renormalise; more than the model's refused); the vectors against
llama.cpp (llama-cpp-python, the same pooling set explicitly on both sides) with cosine similarity
>= 0.999 for several inputs and each pooling; a batch equal to its inputs sent alone while a
generation runs; bad input (empty list, empty string, ids out of the vocabulary, an input longer
than the context, unknown model, an ONNX model, pooling none) a clear 400/404 each, the server
serving normally afterwards; the metrics.

Usage: test_openai_embeddings.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure, 77 skipped (stories260k absent, or llama_cpp not installed for
the comparison: scripts/setup_llama_cpp.sh).
"""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402
import make_test_repository  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import llama_cpp_anchor  # noqa: E402
from make_llm_models import field_value  # noqa: E402

import gguf  # noqa: E402
import openai  # noqa: E402

llama_cpp = llama_cpp_anchor.load()
INFERLOOP = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
VOCAB = 512  # stories260k.md
CONTEXT = 128
N_EMBD = 64
INPUTS = ["Once upon a time", "Lily and Ben went to the park.", "The cat sat", "One day, a little boy saw a big red ball"]
POOLINGS = {"stories": 1, "stories_cls": 2, "stories_last": 3}  # model -> llama.cpp pooling type


def with_pooling(src, out, pooling):
    """A copy of GGUF `src` with llama.pooling_type = `pooling` added to its metadata."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(out, arch=field_value(r.fields["general.architecture"]))
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(name, field_value(f))
        else:
            w.add_key_value(name, field_value(f), f.types[0])
    w.add_uint32("llama.pooling_type", pooling)
    for t in r.tensors:
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        w.add_tensor(t.name, np.asarray(t.data).reshape(shape), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tokenize(text):
    args = [INFERLOOP, "tokenize", STORIES, text, "--ids-only"]
    return [int(x) for x in subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()]


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


class EmbeddingsBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(STORIES):
            raise unittest.SkipTest(f"test model not present: {STORIES} (see shared/models/README.md)")
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_openai_embeddings_")
        repo = os.path.join(cls.tmp, "repo")
        cls.files = {}
        for model, pooling in list(POOLINGS.items()) + [("stories_none", 0)]:
            path = os.path.join(repo, model, "1", "model.gguf")
            os.makedirs(os.path.dirname(path))
            if model == "stories":
                shutil.copy(STORIES, path)
            else:
                with_pooling(STORIES, path, pooling)
            cls.files[model] = path
        make_test_repository.save(make_test_repository.simple_model(), os.path.join(repo, "simple", "1", "model.onnx"))
        make_test_repository.write(os.path.join(repo, "simple", "config.pbtxt"), make_test_repository.SIMPLE_CONFIG)
        cls.server = h.Server(INFERLOOP, repo)
        cls.client = openai.OpenAI(base_url=f"http://127.0.0.1:{cls.server.http_port}/v1", api_key="unused",
                                   max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
        if hasattr(cls, "tmp"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def embed(self, inp, model="stories", **kw):
        return self.client.embeddings.create(model=model, input=inp, **kw)

    def vectors(self, inp, encoding_format=None, **kw):
        """The vectors, in the given encoding (None: the SDK's default, base64 that it decodes;
        "base64" asked explicitly: the SDK returns the strings, decoded here)."""
        if encoding_format is not None:
            kw["encoding_format"] = encoding_format
        r = self.embed(inp, **kw)
        self.assertEqual([d.index for d in r.data], list(range(len(r.data))))
        if encoding_format == "base64":
            return [np.frombuffer(base64.b64decode(d.embedding), dtype="<f4").astype(np.float64) for d in r.data]
        return [np.asarray(d.embedding, dtype=np.float64) for d in r.data]


class TestEmbeddings(EmbeddingsBase):
    def test_input_forms_and_encodings_agree(self):
        ids = [tokenize(t) for t in INPUTS]
        alone = [self.vectors(t)[0] for t in INPUTS]
        for v in alone:
            self.assertEqual(v.shape, (N_EMBD,))
            self.assertAlmostEqual(float(np.linalg.norm(v)), 1.0, places=5)
        self.assertLess(float(alone[0] @ alone[1]), 0.999)  # distinct inputs, distinct vectors
        for fmt in (None, "float", "base64"):
            with self.subTest(encoding_format=fmt):
                forms = {"strings": INPUTS, "token lists": ids}
                for name, inp in forms.items():
                    got = self.vectors(inp, encoding_format=fmt)
                    self.assertEqual(len(got), len(INPUTS), name)
                    for a, b in zip(got, alone):
                        np.testing.assert_allclose(a, b, atol=2e-6, err_msg=f"{name} {fmt}")
                np.testing.assert_allclose(self.vectors(ids[0], encoding_format=fmt)[0], alone[0], atol=2e-6)
                np.testing.assert_allclose(self.vectors(INPUTS[2], encoding_format=fmt)[0], alone[2], atol=2e-6)

    def test_base64_is_little_endian_float32(self):
        status, _, body = h.post_json(self.server.http_port, "/v1/embeddings",
                                      {"model": "stories", "input": INPUTS[0], "encoding_format": "base64"})
        self.assertEqual(status, 200, body)
        raw = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
        status, _, body = h.post_json(self.server.http_port, "/v1/embeddings", {"model": "stories", "input": INPUTS[0]})
        self.assertEqual(status, 200, body)
        np.testing.assert_array_equal(raw, np.asarray(body["data"][0]["embedding"], dtype=np.float32))
        self.assertEqual(body["object"], "list")
        self.assertEqual(body["data"][0]["object"], "embedding")
        self.assertEqual(body["model"], "stories")

    def test_usage_counts_every_input_token(self):
        r = self.embed(INPUTS)
        n = sum(len(tokenize(t)) for t in INPUTS)
        self.assertEqual(r.usage.prompt_tokens, n)
        self.assertEqual(r.usage.total_tokens, n)
        r = self.embed([[1, 5, 6], [7]])
        self.assertEqual(r.usage.prompt_tokens, 4)

    def test_dimensions_truncates_and_renormalises(self):
        full = self.vectors(INPUTS[0])[0]
        v = self.vectors(INPUTS[0], dimensions=16)[0]
        self.assertEqual(v.shape, (16,))
        np.testing.assert_allclose(v, unit(full[:16]), atol=2e-6)
        np.testing.assert_allclose(self.vectors(INPUTS[0], dimensions=N_EMBD)[0], full, atol=2e-6)

    def test_poolings_follow_the_metadata(self):
        means = self.vectors(INPUTS[:2])
        cls = self.vectors(INPUTS[:2], model="stories_cls")
        last = self.vectors(INPUTS[:2], model="stories_last")
        # cls: the BOS token's state, whatever follows it (causal attention).
        np.testing.assert_allclose(cls[0], cls[1], atol=2e-6)
        self.assertLess(float(last[0] @ last[1]), 0.999)
        self.assertLess(float(means[0] @ last[0]), 0.999)

    def test_batch_equals_alone_while_generating(self):
        alone = [self.vectors(t)[0] for t in INPUTS]
        done = {}

        def generate():
            done["text"] = self.client.completions.create(model="stories", prompt="Once", max_tokens=100,
                                                          temperature=0).choices[0].text

        t = threading.Thread(target=generate)
        t.start()
        got = self.vectors(INPUTS * 4)
        t.join()
        self.assertTrue(done["text"])
        for i, v in enumerate(got):
            np.testing.assert_allclose(v, alone[i % len(INPUTS)], atol=2e-5)

    def test_metrics(self):
        before = h.metrics(self.server.http_port)
        inputs0 = h.metric_value(before, "inferloop_llm_embedding_inputs_total", model="stories") or 0
        prompt0 = h.metric_value(before, "inferloop_llm_prompt_tokens_total", model="stories") or 0
        self.embed(INPUTS[:3])
        after = h.metrics(self.server.http_port)
        self.assertEqual(h.metric_value(after, "inferloop_llm_embedding_inputs_total", model="stories") - inputs0, 3)
        self.assertEqual(h.metric_value(after, "inferloop_llm_prompt_tokens_total", model="stories") - prompt0,
                         sum(len(tokenize(t)) for t in INPUTS[:3]))

    def bad(self, body, status, param, words):
        got, _, resp = h.post_json(self.server.http_port, "/v1/embeddings", body)
        self.assertEqual(got, status, resp)
        err = resp["error"]
        self.assertEqual(err["param"], param, err)
        for w in words:
            self.assertIn(w, err["message"])
        return err

    def test_bad_input(self):
        m = "stories"
        self.bad({"model": m, "input": []}, 400, "input", ["empty list"])
        self.bad({"model": m, "input": ""}, 400, "input", ["empty string"])
        self.bad({"model": m, "input": ["a", ""]}, 400, "input", ["input[1]", "empty string"])
        self.bad({"model": m, "input": [[1, 2], []]}, 400, "input", ["input[1]", "empty list"])
        self.bad({"model": m, "input": [1, VOCAB]}, 400, "input", [str(VOCAB), "vocabulary"])
        self.bad({"model": m, "input": [[1], [2, -1]]}, 400, "input", ["input[1][1]"])
        self.bad({"model": m, "input": list(range(1, CONTEXT + 2))}, 400, "input",
                 [str(CONTEXT + 1) + " tokens", "allows " + str(CONTEXT)])
        self.bad({"model": m, "input": "x", "encoding_format": "int8"}, 400, "encoding_format", ["base64"])
        self.bad({"model": m, "input": "x", "dimensions": N_EMBD + 1}, 400, "dimensions", [str(N_EMBD)])
        self.bad({"model": m, "input": "x", "dimensions": 0}, 400, "dimensions", [">= 1"])
        self.bad({"model": m, "input": "x", "temperature": 1}, 400, "temperature", ["not a supported field"])
        self.bad({"input": "x"}, 400, "model", ["required"])
        self.bad({"model": "nope", "input": "x"}, 404, "model", ["does not exist"])
        self.bad({"model": "simple", "input": "x"}, 400, "model", ["computes no embeddings"])
        self.bad({"model": "stories_none", "input": "x"}, 400, "model", ["pooling type none"])
        with self.assertRaises(openai.BadRequestError):
            self.embed([], model=m)
        # The server is unaffected: it embeds and generates as before.
        self.assertEqual(len(self.vectors(INPUTS)), len(INPUTS))
        self.assertTrue(self.client.completions.create(model=m, prompt="Once", max_tokens=4).choices[0].text)
        got, _, _ = h.request(self.server.http_port, "GET", "/v1/embeddings")
        self.assertEqual(got, 405)


class TestAgainstLlamaCpp(EmbeddingsBase):
    @classmethod
    def setUpClass(cls):
        if llama_cpp is None:
            raise unittest.SkipTest("llama_cpp (PyPI llama-cpp-python) is not installed: scripts/setup_llama_cpp.sh")
        super().setUpClass()

    def test_cosine_to_llama_cpp(self):
        # stories260k has no pooling_type: llama.cpp's default there is none (per token), so the
        # pooling is set explicitly on llama.cpp's side to what inferloop uses for each model.
        for model, pooling in POOLINGS.items():
            ref = llama_cpp.Llama(model_path=self.files[model], embedding=True, pooling_type=pooling, n_ctx=CONTEXT,
                                  verbose=False)
            got = self.vectors(INPUTS, model=model)
            for text, v in zip(INPUTS, got):
                want = unit(ref.embed(text, normalize=False))
                cos = float(unit(v) @ want)
                print(f"{model} pooling {pooling} {text!r}: cosine {cos:.7f}")
                self.assertGreaterEqual(cos, 0.999, (model, text))
            del ref


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
