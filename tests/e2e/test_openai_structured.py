#!/usr/bin/env python3
"""End-to-end tests of structured outputs (response_format json_object / json_schema, constrained
decoding) of `inferloop serve`, with the OpenAI Python SDK, on the real stories260k model.

Covers: 100 sampled completions (temperature 1, 10 seeds x n=10) under a JSON schema with a
nested object, an array, enums, bounded integers and strings all finish, parse with json.loads
and validate with jsonschema; the same through chat, streamed and not (equal texts); json_object
mode; logprobs under a schema report only tokens the grammar allows; response_format text leaves
the output unchanged; bad schemas and bad response_format shapes each a 400 naming the problem,
with the server serving normally afterwards.

Usage: test_openai_structured.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure, 77 skipped (stories260k not present).
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

import jsonschema  # noqa: E402
import openai  # noqa: E402

INFERLOOP = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
CONTEXT = 128  # stories260k's context (tokens)

# Small enough that every answer fits in the 128-token context after a short prompt.
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "mood": {"enum": ["happy", "sad", "angry"]},
        "pet": {"type": "object",
                "properties": {"kind": {"enum": ["cat", "dog"]}, "legs": {"type": "integer", "minimum": 0, "maximum": 8}},
                "required": ["kind", "legs"], "additionalProperties": False},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
    },
    "required": ["name", "age", "mood", "pet", "tags"],
    "additionalProperties": False,
}
RF = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA, "strict": True}}
MESSAGES = [{"role": "user", "content": "Tell me about Lily."}]


class StructuredTestBase(h.StoriesOpenAiTest):
    client_timeout = 120

    def chat(self, **kw):
        kw.setdefault("model", "stories")
        kw.setdefault("messages", MESSAGES)
        return self.client.chat.completions.create(**kw)


class TestJsonSchema(StructuredTestBase):
    def test_100_sampled_completions_parse_and_validate(self):
        prompt = "Once upon a time"
        max_tokens = CONTEXT - 5  # the prompt is 5 tokens with BOS
        texts, longest = [], 0
        for s in range(10):
            r = self.client.completions.create(model="stories", prompt=prompt, temperature=1, seed=1000 * s, n=10,
                                               max_tokens=max_tokens, extra_body={"response_format": RF})
            self.assertEqual(len(r.choices), 10)
            for c in r.choices:
                self.assertEqual(c.finish_reason, "stop", c.text)
                jsonschema.validate(json.loads(c.text), SCHEMA)
                texts.append(c.text)
            longest = max(longest, r.usage.completion_tokens)
        print(f"100 sampled: {len(set(texts))} distinct answers, e.g. {texts[0]!r}", file=sys.stderr)
        self.assertGreater(len(set(texts)), 50)  # sampled, not one answer repeated

    def test_chat_streamed_equals_not_streamed(self):
        for seed in (1, 2, 3):
            r = self.chat(temperature=1, seed=seed, response_format=RF)
            self.assertEqual(r.choices[0].finish_reason, "stop")
            text = r.choices[0].message.content
            jsonschema.validate(json.loads(text), SCHEMA)
            chunks = list(self.chat(temperature=1, seed=seed, response_format=RF, stream=True))
            streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
            self.assertEqual(streamed, text)
            self.assertEqual([ch.choices[0].finish_reason for ch in chunks if ch.choices][-1], "stop")

    def test_greedy_logprobs_show_only_allowed_tokens(self):
        r = self.chat(temperature=0, response_format=RF, logprobs=True, top_logprobs=5)
        c = r.choices[0]
        jsonschema.validate(json.loads(c.message.content), SCHEMA)
        toks = c.logprobs.content
        self.assertEqual("".join(t.token for t in toks), c.message.content)
        # The first byte may only be ' ' or '{'; after '{"' only the first key ("name") may follow.
        for alt in toks[0].top_logprobs:
            self.assertIn(bytes(alt.bytes)[:1], (b" ", b"{"), alt)
        for t in toks:
            self.assertGreater(t.logprob, -1e9)
            for alt in t.top_logprobs:
                self.assertGreater(alt.logprob, -1e9)
        # The masked distribution: the alternatives of a forced position hold nearly all the mass.
        text = ""
        for t in toks:
            if text.endswith('{"') and '"name"' not in text:
                for alt in t.top_logprobs:
                    self.assertTrue("name".startswith(bytes(alt.bytes).decode("utf-8", "replace")), alt)
            text += t.token

    def test_text_format_changes_nothing(self):
        a = self.chat(temperature=1, seed=7, max_tokens=20).choices[0].message.content
        b = self.chat(temperature=1, seed=7, max_tokens=20, response_format={"type": "text"}).choices[0].message.content
        self.assertEqual(a, b)

    def test_length_is_reported_not_hidden(self):
        r = self.chat(temperature=1, seed=3, max_tokens=6, response_format=RF)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertTrue(r.choices[0].message.content.lstrip().startswith('{"'))

    def test_recursive_schema_with_refs(self):
        schema = {"$defs": {"node": {"type": "object", "properties": {
            "v": {"type": "integer", "minimum": 0, "maximum": 9},
            "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}},
            "$ref": "#/$defs/node"}
        rf = {"type": "json_schema", "json_schema": {"name": "list", "schema": schema}}
        stopped = 0
        for seed in range(4):
            r = self.chat(temperature=1, seed=seed, response_format=rf)
            if r.choices[0].finish_reason == "stop":
                stopped += 1
                jsonschema.validate(json.loads(r.choices[0].message.content), schema)
        self.assertGreater(stopped, 0)


class TestJsonObject(StructuredTestBase):
    def test_json_object_mode(self):
        # A logit_bias toward '"' and '}' (byte tokens 37 and 128, '▁"' 313) so answers close in the context.
        r = self.chat(temperature=1, seed=5, n=16, response_format={"type": "json_object"},
                      logit_bias={"128": 8, "37": 8, "313": 8})
        stopped = 0
        for c in r.choices:
            self.assertTrue(c.message.content.lstrip().startswith("{"), c.message.content)
            if c.finish_reason == "stop":
                stopped += 1
                self.assertIsInstance(json.loads(c.message.content), dict)
        self.assertGreater(stopped, 0)
        # Also on /v1/completions.
        r = self.client.completions.create(model="stories", prompt="Once", max_tokens=40, temperature=0,
                                           extra_body={"response_format": {"type": "json_object"}})
        self.assertTrue(r.choices[0].text.lstrip().startswith("{"))


class TestStructuredErrors(StructuredTestBase):
    def bad(self, response_format, param, *words):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(max_tokens=4, response_format=response_format)
        body = cm.exception.body
        self.assertEqual(body.get("param"), param, body)
        for w in words:
            self.assertIn(w, body["message"])

    def bad_schema(self, schema, *words):
        self.bad({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
                 "response_format.json_schema.schema", *words)

    def test_bad_schemas_are_400s_naming_the_problem(self):
        self.bad_schema({"type": "string", "pattern": "^[a-z]+$"}, "pattern", "#")
        self.bad_schema({"type": "object", "properties": {"a": {"type": "object", "patternProperties": {"x": {}}}}},
                        "patternProperties", "#/properties/a")
        self.bad_schema({"if": {"type": "string"}, "then": {"maxLength": 3}}, "'if'")
        self.bad_schema({"type": "string", "format": "email"}, "email")
        self.bad_schema({"type": "number", "minimum": 1.5}, "minimum")
        self.bad_schema({"type": "strnig"}, "unknown type", "strnig")
        self.bad_schema({"$ref": "#/$defs/nope"}, "does not resolve")
        self.bad_schema({"$ref": "#"}, "left-recursive")
        self.bad_schema({"type": "array", "minItems": 3, "maxItems": 1}, "minItems")
        self.bad_schema({"properties": ["a"]}, "properties")

    def test_bad_response_format_shapes(self):
        self.bad({"type": "xml"}, "response_format.type")
        self.bad({"type": "json_schema"}, "response_format.json_schema")
        self.bad({"type": "json_schema", "json_schema": {"schema": {}}}, "response_format.json_schema.name")
        self.bad({"type": "json_schema", "json_schema": {"name": "x"}}, "response_format.json_schema.schema")
        self.bad({"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strict": "yes"}},
                 "response_format.json_schema.strict")
        self.bad({"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "extra": 1}},
                 "response_format.json_schema.extra")
        self.bad({"type": "json_object", "schema": {}}, "response_format.schema")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(max_tokens=4, extra_body={"response_format": "json"})
        self.assertEqual(cm.exception.body.get("param"), "response_format")

    def test_server_still_serves(self):
        self.bad_schema({"type": "string", "pattern": "x"}, "pattern")
        r = self.chat(temperature=1, seed=11, response_format=RF)
        jsonschema.validate(json.loads(r.choices[0].message.content), SCHEMA)
        self.assertTrue(self.chat(max_tokens=5).choices[0].message.content)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path
    h.StoriesOpenAiTest.inferloop = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
