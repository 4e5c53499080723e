#!/usr/bin/env python3
"""End-to-end tests of chat tools (tools, tool_choice, tool_calls, role "tool" messages) of
`inferloop serve`, with the OpenAI Python SDK, on the real stories260k model.

Covers: a tool call round trip (tools + tool_choice "required" -> message.tool_calls whose
arguments parse and validate against the function's parameters -> the result sent back as a
"tool" message -> a normal answer), non-streamed and streamed (deltas: the call's id and name,
then argument fragments that concatenate to the arguments); a named function; "auto" (this model
never starts a call, so the answer is text); "none"; bad tools / tool_choice / tool messages each
a 400 naming the parameter, with the server serving normally afterwards.

Usage: test_openai_tools.py --inferloop BUILD/inferloop [unittest args]
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

# Small, so a whole round trip fits in stories260k's 128-token context.
ADD = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                        "b": {"type": "integer", "minimum": 0, "maximum": 9}},
       "required": ["a", "b"], "additionalProperties": False}
PET = {"type": "object", "properties": {"kind": {"enum": ["cat", "dog"]}}, "required": ["kind"]}
TOOLS = [{"type": "function", "function": {"name": "add", "description": "Adds", "parameters": ADD, "strict": True}},
         {"type": "function", "function": {"name": "pet", "parameters": PET}}]
PARAMS = {"add": ADD, "pet": PET}
MESSAGES = [{"role": "user", "content": "Add 2 and 3."}]


class ToolsTestBase(h.StoriesOpenAiTest):
    def chat(self, **kw):
        kw.setdefault("model", "stories")
        kw.setdefault("messages", MESSAGES)
        return self.client.chat.completions.create(**kw)

    def check_call(self, name, arguments):
        self.assertIn(name, PARAMS)
        jsonschema.validate(json.loads(arguments), PARAMS[name])

    def answer_after(self, call_id, name, arguments, result, stream):
        msgs = MESSAGES + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]
        if not stream:
            r = self.chat(messages=msgs, tools=TOOLS, tool_choice="none", temperature=0)
            self.assertIn(r.choices[0].finish_reason, ("stop", "length"))
            self.assertIsNone(r.choices[0].message.tool_calls)
            return r.choices[0].message.content, r.usage.prompt_tokens
        chunks = list(self.chat(messages=msgs, tools=TOOLS, tool_choice="none", temperature=0, stream=True))
        for ch in chunks:
            self.assertFalse(ch.choices[0].delta.tool_calls)
        return "".join(ch.choices[0].delta.content or "" for ch in chunks), None


class TestToolCalls(ToolsTestBase):
    def test_round_trip(self):
        r = self.chat(tools=TOOLS, tool_choice="required", temperature=1, seed=4)
        c = r.choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertIsNone(c.message.content)
        self.assertEqual(len(c.message.tool_calls), 1)
        call = c.message.tool_calls[0]
        self.assertTrue(call.id.startswith("call_"), call.id)
        self.assertEqual(call.type, "function")
        self.check_call(call.function.name, call.function.arguments)
        text, prompt_tokens = self.answer_after(call.id, call.function.name, call.function.arguments, "5", stream=False)
        self.assertTrue(text)
        # The tool result is in the prompt: a different result, a different prompt.
        _, other = self.answer_after(call.id, call.function.name, call.function.arguments, "five and more", stream=False)
        self.assertNotEqual(prompt_tokens, other)

    def test_round_trip_streamed(self):
        for seed in (1, 2, 3):
            whole = self.chat(tools=TOOLS, tool_choice="required", temperature=1, seed=seed).choices[0]
            chunks = list(self.chat(tools=TOOLS, tool_choice="required", temperature=1, seed=seed, stream=True))
            deltas = [d for ch in chunks for d in (ch.choices[0].delta.tool_calls or [])]
            self.assertGreater(len(deltas), 1)
            first = deltas[0]
            self.assertEqual(first.index, 0)
            self.assertTrue(first.id.startswith("call_"))
            self.assertEqual(first.type, "function")
            name = first.function.name
            self.assertTrue(all(d.id is None and d.function.name is None for d in deltas[1:]))
            arguments = "".join(d.function.arguments or "" for d in deltas)
            self.assertEqual(chunks[-1].choices[0].finish_reason, "tool_calls")
            self.assertFalse("".join(ch.choices[0].delta.content or "" for ch in chunks))
            self.check_call(name, arguments)
            # The same call as the non-streamed answer (the same seed).
            self.assertEqual((name, arguments), (whole.message.tool_calls[0].function.name,
                                                 whole.message.tool_calls[0].function.arguments))
            text, _ = self.answer_after(first.id, name, arguments, "5", stream=True)
            self.assertTrue(text)

    def test_named_function(self):
        for seed in range(3):
            r = self.chat(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "pet"}}, temperature=1, seed=seed)
            call = r.choices[0].message.tool_calls[0]
            self.assertEqual(call.function.name, "pet")
            self.check_call("pet", call.function.arguments)

    def test_several_choices_each_call(self):
        r = self.chat(tools=TOOLS, tool_choice="required", temperature=1, seed=9, n=4)
        self.assertEqual(sorted(c.index for c in r.choices), [0, 1, 2, 3])
        for c in r.choices:
            self.assertEqual(c.finish_reason, "tool_calls")
            self.check_call(c.message.tool_calls[0].function.name, c.message.tool_calls[0].function.arguments)

    def test_auto_and_none_answer_text(self):
        # "auto": the tools are described to the model; stories260k never opens a <tool_call>, so text.
        tiny = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
        r = self.chat(messages=[{"role": "user", "content": "Hi"}], tools=tiny, temperature=0, max_tokens=10)
        self.assertIsNone(r.choices[0].message.tool_calls)
        self.assertTrue(r.choices[0].message.content)
        bare = self.chat(messages=[{"role": "user", "content": "Hi"}], temperature=0, max_tokens=10)
        self.assertGreater(r.usage.prompt_tokens, bare.usage.prompt_tokens + 20)  # the tools were described
        plain = self.chat(temperature=0, max_tokens=10).choices[0].message.content
        r = self.chat(tools=TOOLS, tool_choice="none", temperature=0, max_tokens=10)
        self.assertEqual(r.choices[0].message.content, plain)  # "none": the tools are not shown


class TestToolErrors(ToolsTestBase):
    def bad(self, param, *words, **kw):
        kw.setdefault("max_tokens", 4)
        with self.assertRaises(openai.BadRequestError) as cm:
            self.chat(**kw)
        body = cm.exception.body
        self.assertEqual(body.get("param"), param, body)
        for w in words:
            self.assertIn(w, body["message"])

    def test_bad_input(self):
        self.bad("tool_choice", "nope", tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})
        self.bad("tool_choice", "needs 'tools'", tool_choice="required")
        self.bad("tool_choice", tools=TOOLS, tool_choice="sometimes")
        self.bad("tools[0]", extra_body={"tools": [{"type": "retrieval"}]})
        self.bad("tools[0].function.name", extra_body={"tools": [{"type": "function", "function": {"name": "bad name"}}]})
        self.bad("tools[1].function.name", "two tools", tools=[TOOLS[0], TOOLS[0]])
        self.bad("tools[0].function.parameters", extra_body={"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]})
        self.bad("tools[0].function.parameters", "pattern", tool_choice="required",
                 tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
                     "s": {"type": "string", "pattern": "^a"}}}}}])
        self.bad("tools", extra_body={"tools": {"name": "f"}})
        self.bad("messages[1].tool_call_id", messages=MESSAGES + [{"role": "tool", "content": "x"}])
        self.bad("messages[1].tool_calls[0]", messages=MESSAGES + [{"role": "assistant", "tool_calls": [{"id": "c"}]}])
        self.bad("messages[1].tool_calls[0].function.arguments", messages=MESSAGES + [{"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}])
        self.bad("response_format", tools=TOOLS, response_format={"type": "json_object"})
        # The server keeps serving.
        r = self.chat(tools=TOOLS, tool_choice="required", temperature=1, seed=5)
        self.assertEqual(r.choices[0].finish_reason, "tool_calls")


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path
    h.StoriesOpenAiTest.inferloop = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
