#!/usr/bin/env python3
"""End-to-end tests of /v1/completions prompt forms and the sampling parameters of `inferloop
serve`, with the OpenAI Python SDK, on the real stories260k model (tests/data/llm).

Covers: batches of prompts (strings, token ids, lists of token-id lists) with choice index =
prompt index * n + k, streamed and not; echo; suffix refused; presence / frequency / repetition
penalties (the greedy choice at each step checked against the documented formula on the reported
raw logprobs), logit_bias, min_p, top_k, max_completion_tokens; every bad value a 400 naming its
parameter, with the server serving normally afterwards.

Usage: test_openai_sampling.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure, 77 skipped (stories260k not present).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

import openai  # noqa: E402

INFERLOOP = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
VOCAB = 512  # stories260k.md
PROMPTS = ["Once upon a time", "Lily and Ben", "The cat sat", "One day, a little boy"]


class SamplingTestBase(h.StoriesOpenAiTest):
    def complete(self, prompt, **kw):
        kw.setdefault("max_tokens", 12)
        kw.setdefault("temperature", 0)
        extra = {k: kw.pop(k) for k in ("top_k", "min_p", "repetition_penalty") if k in kw}
        return self.client.completions.create(model="stories", prompt=prompt, extra_body=extra or None, **kw)

    def text(self, prompt, **kw):
        return self.complete(prompt, **kw).choices[0].text


def tokenize(text, bos=True):
    args = [INFERLOOP, "tokenize", STORIES, text, "--ids-only"] + ([] if bos else ["--no-bos"])
    return [int(x) for x in subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()]


def repeats(tokens):
    return len(tokens) - len(set(tokens))


class TestPromptForms(SamplingTestBase):
    def test_batch_of_prompts_gets_indexed_choices(self):
        single = [self.text(p) for p in PROMPTS]
        self.assertEqual(len(set(single)), len(PROMPTS), single)  # distinct, so a mix-up shows
        r = self.complete(PROMPTS)
        self.assertEqual(sorted(c.index for c in r.choices), [0, 1, 2, 3])
        for c in r.choices:
            self.assertEqual(c.text, single[c.index])
        self.assertEqual(r.usage.prompt_tokens, sum(len(tokenize(p)) for p in PROMPTS))
        self.assertEqual(r.usage.completion_tokens, 4 * 12)
        # n = 2: index = prompt index * n + k.
        r2 = self.complete(PROMPTS, n=2)
        self.assertEqual(sorted(c.index for c in r2.choices), list(range(8)))
        for c in r2.choices:
            self.assertEqual(c.text, single[c.index // 2], c.index)
        # Sampled with n = 2: the two choices of a prompt differ somewhere, each continues its own prompt.
        r3 = self.complete(PROMPTS, n=2, temperature=1.0, seed=3, max_tokens=24)
        self.assertEqual(sorted(c.index for c in r3.choices), list(range(8)))
        # Streamed: the same texts and finish reasons per index.
        texts, finish = {}, {}
        for chunk in self.complete(PROMPTS, n=2, stream=True):
            for c in chunk.choices:
                texts[c.index] = texts.get(c.index, "") + c.text
                if c.finish_reason:
                    finish[c.index] = c.finish_reason
        self.assertEqual(texts, {c.index: c.text for c in r2.choices})
        self.assertEqual(finish, {i: "length" for i in range(8)})

    def test_token_id_prompts_equal_string_prompts(self):
        ids = [tokenize(p) for p in PROMPTS[:2]]
        self.assertEqual(self.text(ids[0]), self.text(PROMPTS[0]))
        r = self.complete(ids)
        self.assertEqual([c.text for c in sorted(r.choices, key=lambda c: c.index)],
                         [self.text(PROMPTS[0]), self.text(PROMPTS[1])])
        self.assertEqual(r.usage.prompt_tokens, len(ids[0]) + len(ids[1]))

    def test_echo(self):
        plain = self.text(PROMPTS[0])
        self.assertEqual(self.text(PROMPTS[0], echo=True), PROMPTS[0] + plain)
        streamed = "".join(c.choices[0].text for c in self.complete(PROMPTS[0], echo=True, stream=True))
        self.assertEqual(streamed, PROMPTS[0] + plain)
        r = self.complete(PROMPTS[:2], echo=True, n=2)
        for c in r.choices:
            self.assertTrue(c.text.startswith(PROMPTS[c.index // 2]), c.text)
        # Token ids are echoed as their text, without the space SentencePiece's space prefix put
        # before the first word (as llama.cpp's and Hugging Face's decoding give it).
        self.assertEqual(self.text(tokenize(PROMPTS[0]), echo=True), PROMPTS[0] + plain)

    def test_max_completion_tokens(self):
        r = self.client.chat.completions.create(model="stories", messages=[{"role": "user", "content": "Once"}],
                                                max_completion_tokens=5, temperature=0)
        self.assertEqual(r.usage.completion_tokens, 5)
        self.assertEqual(r.choices[0].finish_reason, "length")


class TestSamplingParameters(SamplingTestBase):
    def check_formula(self, r, presence, frequency):
        """At temperature 0 each chosen token maximises raw logprob - presence * (count > 0) -
        frequency * count over the reported alternatives (counts: tokens generated before it)."""
        lp = r.choices[0].logprobs
        counts = {}
        for tok, alts in zip(lp.tokens, lp.top_logprobs):
            adj = {a: v - presence * (counts.get(a, 0) > 0) - frequency * counts.get(a, 0) for a, v in alts.items()}
            if tok in adj:
                self.assertGreaterEqual(adj[tok] + 1e-4, max(adj.values()), (tok, adj))
            counts[tok] = counts.get(tok, 0) + 1

    def test_seed_reproduces_across_batch_compositions(self):
        """A seeded request gives the same text alone, as the first prompt of a batch, and while other
        requests run next to it in the engine's batches."""
        import concurrent.futures
        kw = dict(max_tokens=40, temperature=1.0, top_p=0.95, seed=21, presence_penalty=0.5)
        alone = self.text(PROMPTS[1], **kw)
        batched = self.complete([PROMPTS[1], PROMPTS[0], PROMPTS[3]], **kw)
        self.assertEqual(sorted(batched.choices, key=lambda c: c.index)[0].text, alone)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            others = [pool.submit(self.text, PROMPTS[i % 4], max_tokens=60, temperature=0.8, seed=100 + i)
                      for i in range(6)]
            crowded = [pool.submit(self.text, PROMPTS[1], **kw) for _ in range(2)]
            self.assertEqual([f.result() for f in crowded], [alone, alone])
            for f in others:
                f.result()

    def test_penalties_reduce_repeats_as_documented(self):
        kw = dict(max_tokens=64, logprobs=5)
        plain = self.complete(PROMPTS[0], **kw).choices[0]
        base = repeats(plain.logprobs.tokens)
        self.assertGreater(base, 10)  # the greedy story repeats words
        freq = self.complete(PROMPTS[0], frequency_penalty=2, **kw)
        pres = self.complete(PROMPTS[0], presence_penalty=2, **kw)
        rep = self.complete(PROMPTS[0], repetition_penalty=2.0, **kw)
        print(f"repeated tokens in 64: none {base}, frequency 2: {repeats(freq.choices[0].logprobs.tokens)}, "
              f"presence 2: {repeats(pres.choices[0].logprobs.tokens)}, "
              f"repetition 2: {repeats(rep.choices[0].logprobs.tokens)}")
        for r in (freq, pres, rep):
            self.assertLess(repeats(r.choices[0].logprobs.tokens), base)
        self.check_formula(freq, 0, 2)
        self.check_formula(pres, 2, 0)
        mixed = self.complete(PROMPTS[0], presence_penalty=0.7, frequency_penalty=0.4, **kw)
        self.check_formula(mixed, 0.7, 0.4)
        # Negative values encourage repeats.
        neg = self.complete(PROMPTS[0], frequency_penalty=-2, **kw)
        self.assertGreater(repeats(neg.choices[0].logprobs.tokens), base)
        self.check_formula(neg, 0, -2)

    def test_neutral_values_change_nothing(self):
        for kw in (dict(temperature=0, max_tokens=48), dict(temperature=1.0, seed=9, max_tokens=48)):
            plain = self.text(PROMPTS[1], **kw)
            self.assertEqual(self.text(PROMPTS[1], presence_penalty=0, frequency_penalty=0, repetition_penalty=1,
                                       min_p=0, top_k=0, logit_bias={}, **kw), plain)
            self.assertEqual(self.text(PROMPTS[1], top_k=-1, **kw), plain)

    def test_logit_bias(self):
        target = tokenize(PROMPTS[0])[2]  # ' upon' (ids: tokenize prints them)
        plain = self.complete(PROMPTS[0], max_tokens=6, logprobs=0).choices[0]
        piece = self.complete(PROMPTS[0], max_tokens=1, logit_bias={str(target): 100}, logprobs=0).choices[0]
        self.assertNotIn(piece.text, plain.logprobs.tokens)  # not generated without the bias
        r = self.complete(PROMPTS[0], max_tokens=6, logit_bias={str(target): 100}, logprobs=0).choices[0]
        self.assertEqual(r.logprobs.tokens, [piece.text] * 6)
        self.assertEqual(r.text, piece.text * 6)
        # -100 on the greedy first token: another token comes first, the rest of the vocab is unchanged.
        prompt_ids = tokenize(PROMPTS[0])
        first = tokenize(PROMPTS[0] + plain.text)[len(prompt_ids)]  # ','
        self.assertEqual(tokenize(PROMPTS[0] + plain.text)[:len(prompt_ids)], prompt_ids)
        banned = self.complete(PROMPTS[0], max_tokens=1, logit_bias={str(first): -100}, logprobs=5).choices[0]
        self.assertNotEqual(banned.logprobs.tokens[0], plain.logprobs.tokens[0])
        alternatives = banned.logprobs.top_logprobs[0]
        runner_up = max((v, k) for k, v in alternatives.items() if k != plain.logprobs.tokens[0])[1]
        self.assertEqual(banned.logprobs.tokens[0], runner_up)

    def test_top_k_and_min_p(self):
        greedy = self.text(PROMPTS[2], max_tokens=32)
        self.assertEqual(self.text(PROMPTS[2], max_tokens=32, temperature=1.0, seed=4, top_k=1), greedy)
        self.assertEqual(self.text(PROMPTS[2], max_tokens=32, temperature=1.0, seed=4, min_p=1.0), greedy)
        self.assertNotEqual(self.text(PROMPTS[2], max_tokens=32, temperature=1.5, seed=4), greedy)


class TestBadInput(SamplingTestBase):
    def test_each_bad_value_is_a_400_naming_it(self):
        cases = [
            (dict(presence_penalty=2.5), "presence_penalty", "-2"),
            (dict(frequency_penalty=-3), "frequency_penalty", "-2"),
            (dict(extra_body={"repetition_penalty": 0}), "repetition_penalty", "greater than 0"),
            (dict(extra_body={"min_p": 1.5}), "min_p", "1"),
            (dict(extra_body={"top_k": -2}), "top_k", "-1"),
            (dict(logit_bias={"1": 101}), "logit_bias", "100"),
            (dict(logit_bias={"x": 1}), "logit_bias", "token id"),
            (dict(logit_bias={str(VOCAB): 1}), "logit_bias", str(VOCAB)),
            (dict(prompt=[]), "prompt", "empty"),
            (dict(prompt=[1, 2, VOCAB + 7]), "prompt", str(VOCAB)),
            (dict(prompt=[[1, 2], []]), "prompt", "empty"),
            (dict(prompt=["a", [1]]), "prompt", "prompt[1]"),
            (dict(suffix="and they lived happily"), "suffix", "suffix"),
            (dict(max_tokens=200), "max_tokens", "128"),
            (dict(echo=True, logprobs=1), "echo", "logprobs"),
        ]
        for kw, param, words in cases:
            kw = dict(kw)
            prompt = kw.pop("prompt", "x")
            with self.assertRaises(openai.BadRequestError, msg=str(kw)) as cm:
                self.client.completions.create(model="stories", prompt=prompt, max_tokens=kw.pop("max_tokens", 4), **kw)
            err = cm.exception.body
            self.assertEqual(err.get("param"), param, err)
            self.assertEqual(err.get("type"), "invalid_request_error", err)
            self.assertIn(words, err.get("message"), err)
            print(f"{param}: {err.get('message')}")
        # The token id and the vocabulary size are both named.
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model="stories", prompt=[1, 2, VOCAB + 7], max_tokens=4)
        self.assertIn(str(VOCAB + 7), cm.exception.body["message"])
        # Context: the counts asked for and allowed.
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.chat.completions.create(model="stories", messages=[{"role": "user", "content": "Once"}],
                                                max_completion_tokens=500)
        self.assertEqual(cm.exception.body.get("param"), "max_tokens")
        self.assertIn("asks for", cm.exception.body["message"])
        self.assertIn("allows 128", cm.exception.body["message"])
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model="stories", prompt=list(range(5, 135)), max_tokens=1)
        self.assertEqual(cm.exception.body.get("param"), "prompt")
        self.assertIn("130 tokens", cm.exception.body["message"])
        # Chat without max_tokens fills the context after a long prompt instead of failing.
        r = self.client.chat.completions.create(model="stories", temperature=0,
                                                messages=[{"role": "user", "content": "Once upon a time " * 12}])
        self.assertLessEqual(r.usage.prompt_tokens + r.usage.completion_tokens, 128)
        # The server keeps serving.
        self.assertEqual(len(self.complete(PROMPTS).choices), 4)


class TestSpeculativeDecoding(unittest.TestCase):
    """--llm-speculative-ngram: the same completions as a server without it, greedy and seeded, with
    drafts accepted (its metrics)."""

    PROMPT = "The dog ran to the park. The dog ran to the park. The dog ran to the"

    def test_same_output_as_without_drafts(self):
        if not os.path.exists(STORIES):
            self.skipTest(f"test model not present: {STORIES}")
        tmp = tempfile.mkdtemp(prefix="inferloop_speculative_")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.makedirs(os.path.join(tmp, "stories", "1"))
        shutil.copy(STORIES, os.path.join(tmp, "stories", "1", "model.gguf"))
        answers = {}
        for draft in (0, 8):
            with h.Server(INFERLOOP, tmp, "--llm-speculative-ngram", str(draft)) as server:
                client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.http_port}/v1", api_key="unused",
                                       max_retries=0, timeout=60)
                got = []
                for kw in (dict(temperature=0), dict(temperature=0.8, seed=7), dict(temperature=1.0, seed=3, n=2)):
                    r = client.completions.create(model="stories", prompt=[self.PROMPT, PROMPTS[0]], max_tokens=40, **kw)
                    got.append([c.text for c in sorted(r.choices, key=lambda c: c.index)])
                r = client.chat.completions.create(model="stories", temperature=0, max_tokens=30,
                                                   messages=[{"role": "user", "content": self.PROMPT}], stream=True)
                got.append("".join(ch.choices[0].delta.content or "" for ch in r if ch.choices))
                answers[draft] = got
                text = h.metrics(server.metrics_port)
                accepted = h.metric_sum(text, "inferloop_llm_speculative_accepted_tokens_total")
                drafted = h.metric_sum(text, "inferloop_llm_speculative_draft_tokens_total")
                if draft:
                    self.assertGreater(accepted, 0)
                    self.assertGreaterEqual(drafted, accepted)
                else:
                    self.assertEqual(drafted, 0)
        self.assertEqual(answers[8], answers[0])


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path
    h.StoriesOpenAiTest.inferloop = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
