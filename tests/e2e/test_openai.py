#!/usr/bin/env python3
"""End-to-end tests of the OpenAI-compatible API of `inferloop serve` with the OpenAI Python SDK.

A temporary model repository holds the real stories260k model (tests/data/llm) as
stories/1/model.gguf, and a small random model (scripts/make_llm_models.py) for the timing-
dependent checks. Greedy text is checked against the llama.cpp reference decode of
tests/data/llm/stories260k.md; streamed text against non-streamed text.

Usage: test_openai.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure, 77 skipped (stories260k not present).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

import openai  # noqa: E402

INFERLOOP = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
# The reference greedy continuation of "Once upon a time" (shared/models/README.md: llama.cpp and
# llama2.c agree), as text.
REFERENCE_64 = (", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
                "red ball. She wanted to play with it, but it was too high.\nLily's mom said")


def make_repository(root):
    os.makedirs(os.path.join(root, "stories", "1"))
    shutil.copy(STORIES, os.path.join(root, "stories", "1", "model.gguf"))
    for t in ("Q4_0", "Q8_0"):
        os.makedirs(os.path.join(root, f"stories_{t.lower()}", "1"))
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "requantize", STORIES,
                        os.path.join(root, f"stories_{t.lower()}", "1", "model.gguf"), "--type", t],
                       check=True, stdout=subprocess.DEVNULL)
    os.makedirs(os.path.join(root, "small", "1"))
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random",
                    os.path.join(root, "small", "1", "model.gguf"), "--shape", "small", "--type", "Q8_0"],
                   check=True, stdout=subprocess.DEVNULL)


class OpenAiTestBase(unittest.TestCase):
    extra = ()

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(STORIES):
            raise unittest.SkipTest(f"test model not present: {STORIES} (see shared/models/README.md)")
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_openai_")
        make_repository(cls.tmp)
        cls.server = h.Server(INFERLOOP, cls.tmp, *cls.extra)
        cls.client = openai.OpenAI(base_url=f"http://127.0.0.1:{cls.server.http_port}/v1", api_key="unused",
                                   max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
        if hasattr(cls, "tmp"):
            shutil.rmtree(cls.tmp, ignore_errors=True)


class TestOpenAiSdk(OpenAiTestBase):
    def test_models(self):
        ids = sorted(m.id for m in self.client.models.list().data)
        self.assertEqual(ids, ["small", "stories", "stories_q4_0", "stories_q8_0"])
        self.assertEqual(self.client.models.retrieve("stories").id, "stories")
        with self.assertRaises(openai.NotFoundError):
            self.client.models.retrieve("nope")
        # One model lifecycle: the repository index lists the GGUF models too, and KServe inference
        # on one is refused with a message pointing at /v1.
        status, index = h.post_json(self.server.http_port, "/v2/repository/index", {})[0:3:2]
        self.assertEqual(status, 200)
        self.assertEqual(sorted((e["name"], e["state"]) for e in index),
                         [(n, "READY") for n in ["small", "stories", "stories_q4_0", "stories_q8_0"]])
        status, _, body = h.post_json(self.server.http_port, "/v2/models/stories/infer",
                                      {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]})
        self.assertEqual(status, 400, body)
        self.assertIn("/v1/completions", body["error"])

    def test_greedy_completion_matches_llama_cpp_reference(self):
        r = self.client.completions.create(model="stories", prompt="Once upon a time", max_tokens=64, temperature=0)
        self.assertEqual(r.choices[0].text, REFERENCE_64)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.prompt_tokens, 5)
        self.assertEqual(r.usage.completion_tokens, 64)
        self.assertEqual(r.usage.total_tokens, 69)
        self.assertEqual(r.object, "text_completion")

    def test_streamed_completion_equals_non_streamed(self):
        for kwargs in ({"temperature": 0}, {"temperature": 0.9, "top_p": 0.9, "top_k": 40, "seed": 11},
                       {"temperature": 0, "stop": [" ball", "\n"]}):
            extra = {"top_k": kwargs.pop("top_k")} if "top_k" in kwargs else {}
            full = self.client.completions.create(model="stories", prompt="Lily and Ben", max_tokens=48, extra_body=extra,
                                                  **kwargs)
            pieces, finish = [], None
            for chunk in self.client.completions.create(model="stories", prompt="Lily and Ben", max_tokens=48,
                                                        stream=True, extra_body=extra, **kwargs):
                pieces.append(chunk.choices[0].text)
                finish = chunk.choices[0].finish_reason or finish
            self.assertEqual("".join(pieces), full.choices[0].text, kwargs)
            self.assertEqual(finish, full.choices[0].finish_reason)
            for s in kwargs.get("stop", []):
                self.assertNotIn(s, "".join(pieces))
                self.assertTrue(all(s not in p for p in pieces))

    def test_stop_string_is_not_leaked_while_streaming(self):
        # " girl" appears at tokens " g" "ir" "l": the streamed pieces must never show " g" first.
        pieces = [c.choices[0].text for c in self.client.completions.create(
            model="stories", prompt="Once upon a time", max_tokens=30, temperature=0, stop=[" girl"], stream=True)]
        text = "".join(pieces)
        self.assertEqual(text, ", there was a little")
        self.assertFalse(any(p.endswith(" g") or p.endswith(" gi") for p in pieces), pieces)

    def test_chat_streaming_and_not(self):
        msgs = [{"role": "user", "content": "Once upon a time"}]
        full = self.client.chat.completions.create(model="stories", messages=msgs, max_tokens=40, temperature=0)
        self.assertEqual(full.choices[0].message.role, "assistant")
        # stories260k has no chat template: the plain format is the message's text, so the answer
        # is the reference continuation.
        self.assertEqual(full.choices[0].message.content, REFERENCE_64[:len(full.choices[0].message.content)])
        chunks = list(self.client.chat.completions.create(model="stories", messages=msgs, max_tokens=40, temperature=0,
                                                          stream=True, stream_options={"include_usage": True}))
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, full.choices[0].message.content)
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, 40)
        self.assertEqual(chunks[-1].usage.prompt_tokens, full.usage.prompt_tokens)

    def test_n_and_logprobs_shapes(self):
        r = self.client.chat.completions.create(model="stories", messages=[{"role": "user", "content": "The dog"}],
                                                max_tokens=8, temperature=0, n=2, logprobs=True, top_logprobs=3)
        self.assertEqual(len(r.choices), 2)
        self.assertEqual(r.choices[0].message.content, r.choices[1].message.content)  # greedy
        lp = r.choices[0].logprobs.content
        self.assertEqual(len(lp), 8)
        for t in lp:
            self.assertLessEqual(t.logprob, 0)
            self.assertEqual(len(t.top_logprobs), 3)
            self.assertEqual(t.top_logprobs[0].token, t.token)
            self.assertEqual(bytes(t.bytes).decode("utf-8", "replace"), t.token)
        self.assertEqual("".join(t.token for t in lp), r.choices[0].message.content)
        c = self.client.completions.create(model="stories", prompt="The dog", max_tokens=6, temperature=0, logprobs=2)
        lp = c.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 6)
        self.assertEqual(len(lp.token_logprobs), 6)
        self.assertEqual(len(lp.top_logprobs[0]), 2)
        self.assertEqual(lp.text_offset[0], 0)
        self.assertEqual("".join(lp.tokens), c.choices[0].text)

    def test_batched_equals_alone(self):
        # 16 concurrent greedy requests (batched into the same steps) give what each gives alone,
        # with float and with int8 (Q8_0, Q4_0) weights.
        import concurrent.futures
        prompts = ["Once upon a time", "The dog", "Lily and Ben", "One day", "A big red ball", "Tom was sad",
                   "The sun", "She saw a bird", "They went to the park", "Mom said", "The little cat",
                   "He wanted to", "There was a tree", "Sue had a toy", "It was dark", "The end"]
        for model in ("stories", "stories_q8_0", "stories_q4_0"):
            def run(p):
                return self.client.completions.create(model=model, prompt=p, max_tokens=40, temperature=0).choices[0].text
            alone = [run(p) for p in prompts]
            with concurrent.futures.ThreadPoolExecutor(16) as ex:
                together = list(ex.map(run, prompts))
            self.assertEqual(together, alone, model)

    def test_seed_reproduces(self):
        a = self.client.completions.create(model="stories", prompt="The sun", max_tokens=30, temperature=1.0, seed=5)
        b = self.client.completions.create(model="stories", prompt="The sun", max_tokens=30, temperature=1.0, seed=5)
        self.assertEqual(a.choices[0].text, b.choices[0].text)

    def test_prefix_cache_reports_cached_tokens(self):
        prompt = "Once upon a time there was a big dog named Max. Max liked to run in the park with his friends"
        a = self.client.completions.create(model="stories", prompt=prompt, max_tokens=4, temperature=0)
        b = self.client.completions.create(model="stories", prompt=prompt, max_tokens=4, temperature=0)
        self.assertEqual(b.choices[0].text, a.choices[0].text)
        self.assertGreaterEqual(b.usage.prompt_tokens_details.cached_tokens, 16)
        m = h.metrics(self.server.http_port)
        self.assertGreaterEqual(h.metric_value(m, "inferloop_llm_prefix_cache_hit_tokens_total", model="stories",
                                              tier="memory"), 16)


class TestOpenAiErrors(OpenAiTestBase):
    def test_unsupported_fields_are_400_naming_them(self):
        cases = [({"presence_penalty": 2.5}, "presence_penalty"), ({"logit_bias": {"1": 500}}, "logit_bias"),
                 ({"echo": True, "logprobs": 1}, "echo"), ({"bogus_field": 1}, "bogus_field"), ({"n": 3, "best_of": 2}, "best_of"),
                 ({"temperature": 5}, "temperature"), ({"n": 0}, "n"), ({"stop": [1]}, "stop")]
        for body, field in cases:
            with self.assertRaises(openai.BadRequestError) as cm:
                self.client.completions.create(model="stories", prompt="x", max_tokens=2, extra_body=body)
            err = cm.exception.body
            self.assertEqual(err.get("param"), field, err)
            self.assertIn(field, err.get("message"))
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.chat.completions.create(model="stories", messages=[{"role": "user", "content": "x"}],
                                                extra_body={"functions": [{"name": "f"}]})  # (legacy: use tools)
        self.assertEqual(cm.exception.body.get("param"), "functions")
        # Neutral values are accepted.
        r = self.client.completions.create(model="stories", prompt="x", max_tokens=2, presence_penalty=0,
                                           frequency_penalty=0, user="someone")
        self.assertEqual(len(r.choices), 1)

    def test_unknown_model_and_context_overflow(self):
        with self.assertRaises(openai.NotFoundError) as cm:
            self.client.completions.create(model="nope", prompt="x")
        self.assertEqual(cm.exception.body.get("code"), "model_not_found")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model="stories", prompt="x", max_tokens=1000)
        self.assertIn("context", cm.exception.body.get("message"))
        self.assertEqual(cm.exception.body.get("param"), "max_tokens")

    def test_broken_json_and_wrong_method(self):
        port = self.server.http_port
        status, headers, body = h.request(port, "POST", "/v1/completions", b'{"model": "stories", "prompt": ',
                                          {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        self.assertIn("malformed JSON", json.loads(body)["error"]["message"])
        status, headers, _ = h.request(port, "GET", "/v1/completions")
        self.assertEqual(status, 405)
        self.assertEqual(headers.get("allow"), "POST")
        status, _, _ = h.request(port, "POST", "/v1/audio/speech", b"{}")
        self.assertEqual(status, 404)
        # The server still answers.
        r = self.client.completions.create(model="stories", prompt="x", max_tokens=2)
        self.assertEqual(r.usage.completion_tokens, 2)


class TestOpenAiLoad(OpenAiTestBase):
    # One sequence at a time and a backlog bound of one token: a request queued behind a running
    # one makes the next get 429.
    extra = ("--llm-max-sequences", "1", "--llm-max-token-backlog", "1")

    def _stream_socket(self, model, max_tokens):
        body = json.dumps({"model": model, "prompt": "a b c", "max_tokens": max_tokens, "temperature": 0,
                           "stream": True}).encode()
        s = socket.create_connection(("127.0.0.1", self.server.http_port), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                  str(len(body)).encode() + b"\r\n\r\n" + body)
        data = b""
        while b"data: " not in data:
            chunk = s.recv(4096)
            self.assertTrue(chunk, "connection closed before the first event")
            data += chunk
        return s

    def test_token_backlog_gives_429_with_retry_after(self):
        first = self._stream_socket("small", 500)  # running
        try:
            import threading
            results = {}

            def queued():
                try:
                    results["second"] = self.client.completions.create(model="small", prompt="d e f", max_tokens=2)
                except Exception as e:  # noqa: BLE001
                    results["second"] = e

            t = threading.Thread(target=queued)
            t.start()
            deadline = time.time() + 30
            while time.time() < deadline:
                m = h.metrics(self.server.http_port)
                if (h.metric_value(m, "inferloop_llm_waiting_sequences", model="small") or 0) >= 1:
                    break
                time.sleep(0.005)
            status, headers, body = h.post_json(self.server.http_port, "/v1/completions",
                                                {"model": "small", "prompt": "g h i", "max_tokens": 2})
            self.assertEqual(status, 429, body)
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertEqual(body["error"]["type"], "rate_limit_error")
        finally:
            first.close()
        t.join(60)
        self.assertNotIsInstance(results.get("second"), Exception)

    def test_disconnect_cancels_and_frees_blocks(self):
        s = self._stream_socket("small", 500)
        s.close()
        deadline = time.time() + 30
        cancelled = 0
        while time.time() < deadline:
            m = h.metrics(self.server.http_port)
            cancelled = h.metric_value(m, "inferloop_llm_requests_total", model="small", finish_reason="cancelled") or 0
            if cancelled >= 1 and (h.metric_value(m, "inferloop_llm_running_sequences", model="small") or 0) == 0:
                break
            time.sleep(0.01)
        self.assertGreaterEqual(cancelled, 1)
        m = h.metrics(self.server.http_port)
        used = h.metric_value(m, "inferloop_llm_kv_blocks_used", model="small")
        idle = h.metric_value(m, "inferloop_llm_kv_blocks_cached_idle", model="small")
        self.assertEqual(used, idle)  # only the prefix cache holds blocks


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
