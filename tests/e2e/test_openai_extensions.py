#!/usr/bin/env python3
"""End-to-end tests of `stop_token_ids` (vLLM's extension, /v1/completions and
/v1/chat/completions) and of `best_of` > n (/v1/completions) in `inferloop serve`, with the OpenAI
Python SDK, on the real stories260k model (tests/data/llm).

stop_token_ids: the greedy continuation's 3rd token given as a stop id ends the output just
before it (finish_reason "stop", 2 completion tokens), streamed and not, in both endpoints; bad
lists are 400s naming stop_token_ids.

best_of: with best_of = 4 the returned choice is the candidate with the highest cumulative
logprob among the 4 obtained separately with the same seeds (seed + i), n = 2 returns the best
two in order, each prompt of a batch gets its own best; usage bills every candidate; bad values
(best_of < n, with stream, > 16) are 400s naming best_of.

Usage: test_openai_extensions.py --inferloop BUILD/inferloop [unittest args]
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

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from make_llm_models import field_value  # noqa: E402

import gguf  # noqa: E402
import openai  # noqa: E402

INFERLOOP = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
VOCAB = 512  # stories260k.md
PROMPT = "Once upon a time"


def greedy_ids(prompt, n):
    """The greedy continuation's token ids, from `inferloop generate --print-token-ids`."""
    out = subprocess.run([INFERLOOP, "generate", STORIES, "-p", prompt, "-n", str(n), "--temp", "0",
                          "--print-token-ids", "-t", "1"], check=True, capture_output=True, text=True).stderr
    line = next(x for x in out.splitlines() if x.startswith("generated ids:"))
    return [int(x) for x in line.split(":")[1].split()]


class ExtensionsBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(STORIES):
            raise unittest.SkipTest(f"test model not present: {STORIES} (see shared/models/README.md)")
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_openai_ext_")
        os.makedirs(os.path.join(cls.tmp, "stories", "1"))
        shutil.copy(STORIES, os.path.join(cls.tmp, "stories", "1", "model.gguf"))
        cls.server = h.Server(INFERLOOP, cls.tmp)
        cls.client = openai.OpenAI(base_url=f"http://127.0.0.1:{cls.server.http_port}/v1", api_key="unused",
                                   max_retries=0, timeout=60)
        pieces = field_value(gguf.GGUFReader(STORIES).fields["tokenizer.ggml.tokens"])
        cls.piece = {i: p.replace("\u2581", " ") for i, p in enumerate(pieces)}
        cls.ids_of = {}
        for i, p in cls.piece.items():
            cls.ids_of.setdefault(p, i)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
        if hasattr(cls, "tmp"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def bad(self, path, body, param, words):
        status, _, resp = h.post_json(self.server.http_port, path, body)
        self.assertEqual(status, 400, resp)
        self.assertEqual(resp["error"]["param"], param, resp)
        for w in words:
            self.assertIn(w, resp["error"]["message"])


class TestStopTokenIds(ExtensionsBase):
    def test_completion_ends_before_the_stop_token(self):
        ids = greedy_ids(PROMPT, 8)
        full = self.client.completions.create(model="stories", prompt=PROMPT, max_tokens=8, temperature=0, logprobs=0)
        self.assertEqual(full.choices[0].logprobs.tokens, [self.piece[i] for i in ids])  # the same greedy run
        want = "".join(self.piece[i] for i in ids[:2])
        for stream in (False, True):
            with self.subTest(stream=stream):
                r = self.client.completions.create(model="stories", prompt=PROMPT, max_tokens=8, temperature=0,
                                                   stream=stream, extra_body={"stop_token_ids": [ids[2], 3]},
                                                   **({"stream_options": {"include_usage": True}} if stream else {}))
                if stream:
                    chunks = list(r)
                    text = "".join(c.choices[0].text for c in chunks if c.choices)
                    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
                    usage = chunks[-1].usage
                else:
                    text, finish, usage = r.choices[0].text, [r.choices[0].finish_reason], r.usage
                self.assertEqual(text, want)
                self.assertEqual(finish, ["stop"])
                self.assertEqual(usage.completion_tokens, 2)
        # Without it (or with an id never generated) the output runs on.
        r = self.client.completions.create(model="stories", prompt=PROMPT, max_tokens=8, temperature=0,
                                           extra_body={"stop_token_ids": [3]})
        self.assertEqual(r.choices[0].text, full.choices[0].text)
        self.assertEqual(r.choices[0].finish_reason, "length")

    def test_chat_ends_before_the_stop_token(self):
        msgs = [{"role": "user", "content": "Tell me a story."}]
        full = self.client.chat.completions.create(model="stories", messages=msgs, max_tokens=8, temperature=0,
                                                   logprobs=True)
        toks = [t.token for t in full.choices[0].logprobs.content]
        self.assertGreaterEqual(len(toks), 3)
        third = self.ids_of[toks[2]]
        r = self.client.chat.completions.create(model="stories", messages=msgs, max_tokens=8, temperature=0,
                                                extra_body={"stop_token_ids": [third]})
        self.assertEqual(r.choices[0].message.content, toks[0] + toks[1])
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(r.usage.completion_tokens, 2)

    def test_bad_lists(self):
        for path, base in (("/v1/completions", {"prompt": PROMPT}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})):
            base = dict(base, model="stories", max_tokens=4)
            self.bad(path, dict(base, stop_token_ids=[VOCAB]), "stop_token_ids", [str(VOCAB), "vocabulary"])
            self.bad(path, dict(base, stop_token_ids=[-1]), "stop_token_ids", ["stop_token_ids[0]"])
            self.bad(path, dict(base, stop_token_ids=5), "stop_token_ids", ["list"])
            self.bad(path, dict(base, stop_token_ids=list(range(257))), "stop_token_ids", ["256"])
            status, _, resp = h.post_json(self.server.http_port, path, dict(base, stop_token_ids=[]))
            self.assertEqual(status, 200, resp)


class TestBestOf(ExtensionsBase):
    SEED = 1234

    def candidates(self, prompt, k, **kw):
        """(text, cumulative logprob, tokens) of the candidates a best_of = k request samples:
        the same request with n = 1 and seed + i, sent alone."""
        out = []
        for i in range(k):
            r = self.client.completions.create(model="stories", prompt=prompt, max_tokens=12, temperature=1.0,
                                               seed=self.SEED + i, logprobs=0, **kw)
            c = r.choices[0]
            out.append((c.text, sum(c.logprobs.token_logprobs), r.usage.completion_tokens))
        return out

    def test_returns_the_candidates_with_the_highest_cumulative_logprob(self):
        cands = self.candidates(PROMPT, 4)
        self.assertGreater(len({c[0] for c in cands}), 1, cands)  # the candidates differ, so the choice matters
        ranked = sorted(range(4), key=lambda i: -cands[i][1])
        print("candidates (text, cumulative logprob):", [(c[0], round(c[1], 4)) for c in cands])
        r = self.client.completions.create(model="stories", prompt=PROMPT, max_tokens=12, temperature=1.0,
                                           seed=self.SEED, n=1, best_of=4, logprobs=0)
        self.assertEqual(len(r.choices), 1)
        c = r.choices[0]
        self.assertEqual(c.index, 0)
        self.assertEqual(c.text, cands[ranked[0]][0])
        self.assertAlmostEqual(sum(c.logprobs.token_logprobs), max(x[1] for x in cands), places=4)
        self.assertEqual(r.usage.completion_tokens, sum(x[2] for x in cands))  # every candidate is billed
        # n = 2 of 4: the two best, best first; without logprobs the same texts and no logprobs.
        r = self.client.completions.create(model="stories", prompt=PROMPT, max_tokens=12, temperature=1.0,
                                           seed=self.SEED, n=2, best_of=4)
        self.assertEqual([c.index for c in r.choices], [0, 1])
        self.assertEqual([c.text for c in r.choices], [cands[i][0] for i in ranked[:2]])
        self.assertTrue(all(c.logprobs is None for c in r.choices))

    def test_each_prompt_of_a_batch_gets_its_best(self):
        prompts = [PROMPT, "Lily and Ben"]
        r = self.client.completions.create(model="stories", prompt=prompts, max_tokens=12, temperature=1.0,
                                           seed=self.SEED, best_of=3, logprobs=0)
        self.assertEqual([c.index for c in r.choices], [0, 1])
        # Prompt p's candidates sample with seed + p * best_of + i.
        for p, prompt in enumerate(prompts):
            cands = []
            for i in range(3):
                x = self.client.completions.create(model="stories", prompt=prompt, max_tokens=12, temperature=1.0,
                                                   seed=self.SEED + p * 3 + i, logprobs=0).choices[0]
                cands.append((x.text, sum(x.logprobs.token_logprobs)))
            self.assertEqual(r.choices[p].text, max(cands, key=lambda c: c[1])[0])

    def test_bad_values(self):
        base = {"model": "stories", "prompt": PROMPT, "max_tokens": 4}
        self.bad("/v1/completions", dict(base, n=3, best_of=2), "best_of", ["at least 'n'"])
        self.bad("/v1/completions", dict(base, best_of=4, stream=True), "best_of", ["streamed"])
        self.bad("/v1/completions", dict(base, best_of=17), "best_of", ["16"])
        self.bad("/v1/completions", dict(base, prompt=[PROMPT] * 20, best_of=16), "best_of", ["256"])
        status, _, resp = h.post_json(self.server.http_port, "/v1/completions", dict(base, n=2, best_of=2, stream=False))
        self.assertEqual(status, 200, resp)
        self.assertEqual(len(resp["choices"]), 2)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
