"""Chat templates: inferloop's Jinja engine against PyPI jinja2, rendered live, byte for byte.

The jinja2 side is set up exactly as Hugging Face transformers' apply_chat_template sets it up
(ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]),
globals raise_exception and strftime_now, tojson = json.dumps(ensure_ascii=False, ...), variables
messages, tools (None when absent), documents (None), add_generation_prompt, bos_token,
eos_token). The C++ side is `inferloop chat-template --cases FILE`, which renders through the
same code `inferloop serve` uses for /v1/chat/completions (llm::ChatTemplate).

Covered: the real templates in tests/data/chat_templates/ (Llama 3, Llama 3.1 with tools,
Mistral v1 and v3 with tools, Qwen2, Qwen2.5 with tools, Gemma 2, Phi-3.5, ChatML) over a set of
conversations (system+user, multi-turn, generation prompt on and off, tool calls and tool
results, a tools list, non-ASCII text, empty content), conversations the templates refuse
(raise_exception: the C++ error carries the template's message), and a matrix of small templates
for the engine's language features (whitespace control, filters, tests, loops, slices, ...).

Run: .venv/bin/python tests/e2e/test_chat_templates.py --inferloop build/inferloop
Write the expected renderings as fixtures (for reading, not used by the test):
     .venv/bin/python tests/e2e/test_chat_templates.py --write-fixtures DIR
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
TEMPLATES = os.path.join(HERE, "..", "data", "chat_templates")
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
INFERLOOP = None

# Each template's BOS/EOS text (from its model's tokenizer_config.json); None: the model has none.
TOKENS = {
    "chatml.jinja": (None, "<|im_end|>"),
    "gemma-2.jinja": ("<bos>", "<eos>"),
    "llama-3.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama-3.1-tools.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral-v1.jinja": ("<s>", "</s>"),
    "mistral-v3-tools.jinja": ("<s>", "</s>"),
    "phi-3.5.jinja": ("<s>", "<|endoftext|>"),
    "qwen2.jinja": (None, "<|im_end|>"),
    "qwen2.5-tools.jinja": (None, "<|im_end|>"),
}
TOOL_TEMPLATES = {"llama-3.1-tools.jinja", "mistral-v3-tools.jinja", "qwen2.5-tools.jinja"}


def transformers_env():
    """The environment transformers' _compile_jinja_template builds (read from its source)."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    class Generation(jinja2.ext.Extension):
        """transformers' {% generation %} tag (AssistantTracker): renders its body."""
        tags = {"generation"}

        def parse(self, parser):
            next(parser.stream)
            return parser.parse_statements(["name:endgeneration"], drop_needle=True)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = transformers_env()


def read_template(name):
    with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
        return f.read()


def render_jinja2(template_text, context):
    """("text", str) or ("error", message, raised)."""
    try:
        return ("text", ENV.from_string(template_text).render(**context))
    except jinja2.exceptions.TemplateError as e:
        raised = type(e) is jinja2.exceptions.TemplateError
        return ("error", str(e), raised)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:  # Python errors inside a template
        return ("error", str(e), False)


def msg(role, content, **extra):
    m = {"role": role, "content": content}
    m.update(extra)
    return m


SYSTEM = msg("system", "You are a helpful assistant.")
CONVERSATIONS = {
    "system_user": [SYSTEM, msg("user", "Hello!")],
    "user_only": [msg("user", "What is 2+2?")],
    "multi_turn": [SYSTEM, msg("user", "Hi"), msg("assistant", "Hello! How can I help?"), msg("user", "Tell me a joke."),
                   msg("assistant", "   Why did the chicken cross the road?  "), msg("user", "Why?")],
    "multi_turn_no_system": [msg("user", "Hi"), msg("assistant", "Hello."), msg("user", "Bye")],
    "ends_with_assistant": [msg("user", "Say hi"), msg("assistant", "hi")],
    "non_ascii": [msg("system", "Réponds en français. 日本語も OK."), msg("user", "Grüße, 世界! 🙂 \"quotes\" and 'apostrophes'"),
                  msg("assistant", "Très bien — merci.\nDeux lignes."), msg("user", "tab\there, backslash \\ and {{ braces }}")],
    "empty_content": [msg("user", "")],
    "empty_system": [msg("system", ""), msg("user", "hi")],
    "whitespace": [msg("user", "  \n spaced out \n\n")],
    # refused by templates that require alternating roles
    "two_users": [msg("user", "one"), msg("user", "two")],
    "assistant_first": [msg("assistant", "I start"), msg("user", "ok")],
}

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city — «météo».",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}}
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The time now", "parameters": {"type": "object", "properties": {}}}}
TOOLS = [WEATHER_TOOL, TIME_TOOL]


def call(cid, name, arguments):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


TOOL_CONVERSATIONS = {
    "tools_user": [msg("user", "What's the weather in Paris?")],
    "tools_system_user": [SYSTEM, msg("user", "What's the weather in Paris?")],
    "tool_round_trip": [
        SYSTEM, msg("user", "What's the weather in Paris?"),
        msg("assistant", None, tool_calls=[call("abcDEF123", "get_weather", {"location": "Paris", "unit": "celsius"})]),
        msg("tool", "{\"temperature\": 21, \"sky\": \"clair\"}", tool_call_id="abcDEF123", name="get_weather"),
    ],
    "tool_round_trip_answered": [
        msg("user", "Weather in Zürich?"),
        msg("assistant", "", tool_calls=[call("zzzYYY999", "get_weather", {"location": "Zürich"})]),
        msg("tool", "sunny, 18°C", tool_call_id="zzzYYY999", name="get_weather"),
        msg("assistant", "It is sunny and 18°C in Zürich."), msg("user", "Thanks!"),
    ],
    "tools_no_user": [SYSTEM],
    "bad_tool_call_id": [
        msg("user", "Weather?"),
        msg("assistant", None, tool_calls=[call("short", "get_weather", {"location": "Rome"})]),
        msg("tool", "rain", tool_call_id="short", name="get_weather"),
    ],
}


def chat_cases():
    """(name, template file, jinja2 context, inferloop case)."""
    out = []
    for tname in sorted(TOKENS):
        bos, eos = TOKENS[tname]
        convs = [(k, v, None) for k, v in CONVERSATIONS.items()]
        if tname in TOOL_TEMPLATES:
            convs += [(k, v, TOOLS) for k, v in TOOL_CONVERSATIONS.items()]
            convs += [("tool_round_trip_no_tools_list", TOOL_CONVERSATIONS["tool_round_trip"], None)]
        for cname, messages, tools in convs:
            for agp in (True, False):
                context = {"messages": messages, "tools": tools, "documents": None, "add_generation_prompt": agp}
                if bos is not None:
                    context["bos_token"] = bos
                if eos is not None:
                    context["eos_token"] = eos
                # inferloop gets what an OpenAI client sends: tool call arguments as JSON text.
                openai_messages = copy.deepcopy(messages)
                for m in openai_messages:
                    for c in m.get("tool_calls") or []:
                        c["function"]["arguments"] = json.dumps(c["function"]["arguments"], ensure_ascii=False)
                case = {"template": os.path.join(TEMPLATES, tname), "bos_token": bos or "", "eos_token": eos or "",
                        "messages": openai_messages, "tools": tools, "add_generation_prompt": agp}
                out.append((f"{tname}:{cname}:agp={agp}", tname, context, case))
    return out


# Small templates for the engine's language features: (template, variables).
FEATURES = [
    ("a {{ x }} b", {"x": 1}),
    ("{{ x }}|{{ y }}|{{ z }}|{{ n }}", {"x": 1.5, "y": True, "z": None, "n": 10**15}),
    ("{{ 1e20 }} {{ 1e-7 }} {{ 0.1 + 0.2 }} {{ 3 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 1.0 }}", {}),
    ("{{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 'n': [1]} }} {{ (1, 2) | list }}", {}),
    ("{{ undefined_var }}|{{ undefined_var is defined }}|{{ x is undefined }}", {}),
    ("{{ 'it''s' }} {{ \"a\\tb\\nc\\\\d\\u00e9\\x41\" }} {{ 'q\\'' }}", {}),
    ("{% if x %}yes{% elif y %}elif{% else %}no{% endif %}", {"x": 0, "y": "s"}),
    ("{% for i in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }},{% endfor %}",
     {"items": ["a", "b", "c"]}),
    ("{% for i in items %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", {"items": [1, 2, 3]}),
    ("{% for i in [] %}x{% else %}empty{% endfor %}", {}),
    ("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("{% for m in ms if m.role == 'user' %}{{ loop.index }}{{ m.content }}{% endfor %}",
     {"ms": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}, {"role": "user", "content": "c"}]}),
    ("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}", {}),
    ("{% set ns = namespace(found=false, n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}", {}),
    ("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t %}block {{ a }}{% endset %}[{{ t }}]", {}),
    ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }}", {}),
    ("{{ s[1:3] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ l[::2] }}|{{ l[-1] }}|{{ s[0] }}|{{ l[10] }}|{{ s[:-1] }}",
     {"s": "héllo wörld", "l": [1, 2, 3, 4, 5]}),
    ("{{ s | length }} {{ l | count }} {{ d | length }} {{ s | upper }} {{ s | lower }} {{ s | title }} {{ s | capitalize }}",
     {"s": "hello wORLD-foo (bar) ßtraße", "l": [1, 2], "d": {"a": 1}}),
    ("[{{ s | trim }}] [{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ s | trim('a ') }}]",
     {"s": "  \t a b \n "}),
    ("{{ s.split() }} {{ s.split(',') }} {{ s.split(',', 1) }} {{ s.startswith('a,') }} {{ s.endswith(('x', 'c ')) }}",
     {"s": "a,b , c "}),
    ("{{ s.replace('a', 'b') }} {{ s | replace('a', 'XY', 1) }} {{ s.upper() }} {{ s.title() }} {{ s.find('c') }}",
     {"s": "abcabc hello-world"}),
    ("{{ l | join(', ') }} {{ l | join }} {{ us | join('|', attribute='n') }} {{ l | first }} {{ l | last }} {{ l | sum }}",
     {"l": [3, 1, 2], "us": [{"n": "x"}, {"n": "y"}]}),
    ("{{ l | sort }} {{ l | sort(reverse=true) }} {{ ws | sort }} {{ ws | sort(case_sensitive=true) }} {{ us | sort(attribute='n') | map(attribute='n') | list }}",
     {"l": [3, 1, 2], "ws": ["b", "A", "a", "C"], "us": [{"n": 2}, {"n": 1}]}),
    ("{{ ws | unique | list }} {{ l | reverse | list }} {{ 'abc' | reverse }} {{ l | max }} {{ l | min }}",
     {"ws": ["a", "A", "b", "a"], "l": [3, 1, 2]}),
    ("{{ us | selectattr('role', 'equalto', 'user') | list | length }} {{ us | rejectattr('role', 'eq', 'user') | map(attribute='c') | join }} "
     "{{ us | selectattr('flag') | list | length }} {{ l | select('odd') | list }} {{ l | reject('even') | list }} {{ l | select('gt', 1) | list }}",
     {"us": [{"role": "user", "c": "1", "flag": True}, {"role": "bot", "c": "2", "flag": False}], "l": [1, 2, 3, 4]}),
    ("{{ l | map('upper') | list }} {{ l | map('replace', 'a', 'o') | join }} {{ x | default('dflt') }} {{ '' | default('e', true) }} {{ y | d('z') }}",
     {"l": ["ab", "ca"], "y": 0}),
    ("{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ x | tojson(sort_keys=true) }}|{{ x | tojson(separators=(',', ':')) }}|{{ x | tojson(ensure_ascii=true) }}",
     {"x": {"b": [1, 2.5, None, True], "a": "é\"\n<tag>🙂", "c": {}, "d": []}}),
    ("{{ 'x' | tojson }} {{ 1 | tojson }} {{ none | tojson }} {{ 1.0 | tojson }} {{ [] | tojson(indent=4) }}", {}),
    ("{{ '3' | int + 1 }} {{ 'x' | int }} {{ 2.7 | int }} {{ '2.5' | float }} {{ 3 | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 7 | string ~ '!' }}", {}),
    ("{{ s | indent(2) }}|{{ s | indent(2, true) }}|{{ s | indent(first=true, blank=true) }}", {"s": "a\n\nb\nc"}),
    ("{{ x is none }} {{ x is not none }} {{ 1 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ 'a' is string }} {{ {} is mapping }} "
     "{{ [] is iterable }} {{ 'a' is sequence }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ true is boolean }} {{ false is false }} "
     "{{ 1 is sameas 1 }} {{ 'a' is in 'abc' }} {{ 2 is in [1, 2] }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 1 is true }}", {"x": None}),
    ("{{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 1 in [1, 2] }} {{ 'k' in d }} {{ 'v' in d }} {{ not true }} {{ 1 < 2 < 3 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
     {"d": {"k": "v"}}),
    ("{{ x or 'fallback' }} {{ x and 'and' }} {{ 'yes' if x else 'no' }} {{ 'yes' if y }} {{ 1 if 0 else 2 if 0 else 3 }}", {"x": "", "y": 0}),
    ("{{ 'a' ~ 1 ~ none ~ true }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ -x }} {{ +x }}", {"x": 4}),
    ("{{ d.k }} {{ d['k'] }} {{ d.get('k') }} {{ d.get('z', 'dz') }} {{ d.get('z') }} {{ d.missing }} {{ d.keys() | list }} {{ d.values() | list }}",
     {"d": {"k": "v", "n": 1}}),
    ("{{ l.0 }} {{ l[1] }} {{ d.l[0].x }} {{ (l | list)[1:] }}", {"l": [10, 20], "d": {"l": [{"x": "deep"}]}}),
    ("{{ d | dictsort if false else 'skip' }} {{ '%s' if false else 'pct' }}", {"d": {}}),
    # whitespace control, trim_blocks and lstrip_blocks
    ("  {% if true %}\n    x\n  {% endif %}\n  after\n", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("line1\n  {# comment #}\n  {{ v }}  \n{%+ if true %}kept{% endif %}\n{% if true +%}\nno-trim{% endif %}", {"v": "v"}),
    ("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\nend", {}),
    ("{%- for i in [1, 2] -%}\n  {{- i -}}\n{%- endfor %}   \n\n  trailing\n\n", {}),
    ("{% raw %}{{ not rendered }} {% if %}{% endraw %} {{ 'after raw' }}", {}),
    ("x{#- strip before\n#}   y {# keep -#}   z", {}),
    ("text\r\nwith crlf {{ 1 }}\r\n", {}),
    ("{% generation %}gen {{ 1 }}{% endgeneration %}", {}),
    ("{{ raise_exception('custom failure: ' ~ n) }}", {"n": 5}),
]


def feature_cases():
    return [(f"feature[{i}]", None, ctx, {"template_text": t, "context": ctx}) for i, (t, ctx) in enumerate(FEATURES)]


def run_inferloop(cases):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
        path = f.name
    try:
        p = subprocess.run([INFERLOOP, "chat-template", "--cases", path], capture_output=True, timeout=300)
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise RuntimeError(f"inferloop chat-template failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    lines = p.stdout.decode("utf-8").splitlines()
    if len(lines) != len(cases):
        raise RuntimeError(f"expected {len(cases)} lines, got {len(lines)}")
    return [json.loads(line) for line in lines]


class ChatTemplateTest(unittest.TestCase):
    def compare(self, cases, expected_fn):
        results = run_inferloop([c[3] for c in cases])
        stats = {"text": 0, "raised": 0}
        for (name, tname, ctx, case), got in zip(cases, results):
            want = expected_fn(tname, case, ctx)
            with self.subTest(name):
                if want[0] == "text":
                    self.assertIn("text", got, f"{name}: inferloop failed: {got.get('error')}")
                    self.assertEqual(got["text"], want[1], name)
                    stats["text"] += 1
                else:
                    self.assertIn("error", got, f"{name}: jinja2 raised {want[1]!r}, inferloop rendered {got.get('text')!r}")
                    if want[2]:  # raise_exception: the template's own message reaches the client
                        self.assertIn(want[1], got["error"], name)
                    stats["raised"] += 1
        return stats

    def test_real_templates_match_jinja2(self):
        cases = chat_cases()
        sources = {t: read_template(t) for t in TOKENS}
        stats = self.compare(cases, lambda tname, case, ctx: render_jinja2(sources[tname], ctx))
        print(f"real templates: {len(TOKENS)} templates, {len(cases)} renderings: {stats['text']} equal byte for byte, "
              f"{stats['raised']} refused by both")
        # every template renders most conversations, and some are refused (raise_exception)
        self.assertGreater(stats["text"], 150)
        self.assertGreater(stats["raised"], 10)

    def test_language_features_match_jinja2(self):
        cases = feature_cases()
        stats = self.compare(cases, lambda tname, case, ctx: render_jinja2(case["template_text"], ctx))
        print(f"language features: {len(cases)} templates: {stats['text']} equal, {stats['raised']} errors on both sides")

    def test_refusals_carry_the_templates_message(self):
        gemma = os.path.join(TEMPLATES, "gemma-2.jinja")
        mistral = os.path.join(TEMPLATES, "mistral-v3-tools.jinja")
        got = run_inferloop([
            {"template": gemma, "bos_token": "<bos>", "messages": [SYSTEM, msg("user", "hi")]},
            {"template": mistral, "bos_token": "<s>", "eos_token": "</s>", "messages": [msg("user", "a"), msg("user", "b")]},
        ])
        self.assertEqual(got[0]["error"], "'messages': the model's chat template refused the conversation: System role not supported")
        self.assertIn("conversation roles must alternate user/assistant/user/assistant/...", got[1]["error"])

    def test_template_errors_name_the_line(self):
        got = run_inferloop([
            {"template_text": "ok\n{% if %}", "context": {}},
            {"template_text": "{{ x.y.z }}", "context": {}},
            {"template_text": "a\nb\n{{ 1 + 'a' }}", "context": {}},
            {"template_text": "{% for x in y %}", "context": {}},
            {"template_text": "{{ x | nosuchfilter }}", "context": {"x": 1}},
            {"template_text": "{% include 'other' %}", "context": {}},
            {"template_text": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "context": {}},
            {"template_text": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "context": {}},
            {"template_text": "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", "context": {}},
            {"template_text": "{{ " + "(" * 500 + "1" + ")" * 500 + " }}", "context": {}},
        ])
        self.assertRegex(got[0]["error"], r"^line 2: ")
        self.assertEqual(got[1]["error"], "line 1: 'x' is undefined")
        self.assertRegex(got[2]["error"], r"^line 3: unsupported operand type\(s\) for \+: 'int' and 'str'")
        self.assertRegex(got[3]["error"], r"missing '\{% endfor %\}'")
        self.assertRegex(got[4]["error"], r"no filter named 'nosuchfilter'")
        self.assertRegex(got[5]["error"], r"unknown or unsupported tag 'include'")
        self.assertRegex(got[6]["error"], r"more than \d+ steps")
        self.assertRegex(got[7]["error"], r"macro calls nest deeper than")
        self.assertRegex(got[8]["error"], r"output is over \d+ bytes")
        self.assertRegex(got[9]["error"], r"nests too deeply")
        for g in got:
            self.assertFalse(g["raised"])

    def test_fallback_for_a_template_the_engine_cannot_use(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.jinja")
            with open(bad, "w") as f:  # a ChatML template that uses a tag the engine does not support
                f.write("{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
                        "{% endfor %}{% filter upper %}x{% endfilter %}")
            got = run_inferloop([{"template": bad, "messages": [msg("user", "hi")]}])
        self.assertEqual(got[0]["text"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


class ServeChatTemplateTest(unittest.TestCase):
    """inferloop serve's /v1/chat/completions on stories260k given Gemma 2's chat template."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_chat_template_")
        os.makedirs(os.path.join(cls.tmp, "repo", "gemma_stories", "1"))
        cls.model = os.path.join(cls.tmp, "repo", "gemma_stories", "1", "model.gguf")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "requantize", STORIES, cls.model,
                        "--type", "F32", "--chat-template", os.path.join(TEMPLATES, "gemma-2.jinja")],
                       check=True, stdout=subprocess.DEVNULL)
        cls.server = h.Server(INFERLOOP, os.path.join(cls.tmp, "repo"))

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def prompt_tokens(self, messages):
        """The token count of the prompt `inferloop chat-template` renders (no BOS added: the
        template writes it)."""
        path = os.path.join(self.tmp, "messages.json")
        with open(path, "w") as f:
            json.dump(messages, f)
        text = subprocess.run([INFERLOOP, "chat-template", "--model", self.model, "--messages", path],
                              check=True, capture_output=True).stdout
        ids = subprocess.run([INFERLOOP, "tokenize", self.model, "--stdin", "--no-bos", "--parse-special", "--ids-only"],
                             input=text, check=True, capture_output=True).stdout.split()
        return text.decode(), len(ids)

    def test_the_models_template_makes_the_prompt(self):
        messages = [msg("user", "Once upon a time")]
        text, n = self.prompt_tokens(messages)
        self.assertEqual(text, "<s><start_of_turn>user\nOnce upon a time<end_of_turn>\n<start_of_turn>model\n")
        status, _, body = h.post_json(self.server.http_port, "/v1/chat/completions",
                                      {"model": "gemma_stories", "messages": messages, "max_tokens": 4, "temperature": 0})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["prompt_tokens"], n)
        ev = [e for e in self.server.find_events("chat_template") if e.get("model") == "gemma_stories"]
        self.assertEqual(ev[0]["prompt_format"], "jinja")

    def test_a_refused_conversation_is_a_400_with_the_templates_message(self):
        for messages, words in (([SYSTEM, msg("user", "hi")], "System role not supported"),
                                ([msg("user", "a"), msg("user", "b")], "Conversation roles must alternate")):
            status, _, body = h.post_json(self.server.http_port, "/v1/chat/completions",
                                          {"model": "gemma_stories", "messages": messages, "max_tokens": 4})
            self.assertEqual(status, 400, body)
            self.assertIn(words, body["error"]["message"])
            self.assertEqual(body["error"]["type"], "invalid_request_error")
            self.assertEqual(body["error"]["param"], "messages")
        status, _, body = h.post_json(self.server.http_port, "/v1/chat/completions",
                                      {"model": "gemma_stories", "messages": [msg("user", "hi")], "max_tokens": 2})
        self.assertEqual(status, 200, body)


class ServeToolTemplateTest(unittest.TestCase):
    """inferloop serve with a tool-aware template (Qwen2.5's): a request with tools, an assistant
    tool call and a tool result is rendered as jinja2 renders the same conversation (as
    transformers and vLLM pass it: the call's JSON arguments as an object)."""

    def test_tools_and_tool_messages_reach_the_template(self):
        tmp = tempfile.mkdtemp(prefix="inferloop_tool_template_")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.makedirs(os.path.join(tmp, "repo", "qwen_stories", "1"))
        model = os.path.join(tmp, "repo", "qwen_stories", "1", "model.gguf")
        template = os.path.join(TEMPLATES, "qwen2.5-tools.jinja")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "requantize", STORIES, model,
                        "--type", "F32", "--chat-template", template], check=True, stdout=subprocess.DEVNULL)
        tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                                 "parameters": {"type": "object",
                                                                "properties": {"city": {"type": "string"}},
                                                                "required": ["city"]}}}
        call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        messages = [msg("user", "Weather?"), msg("assistant", None, tool_calls=[call]),
                    msg("tool", "sunny", tool_call_id="call_1")]
        as_template_sees = [dict(m) for m in messages]
        as_template_sees[1] = msg("assistant", None, tool_calls=[
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}])
        with open(template, encoding="utf-8") as f:
            kind, text = render_jinja2(f.read(), {"messages": as_template_sees, "tools": [tool],
                                                  "add_generation_prompt": True, "bos_token": "<s>",
                                                  "eos_token": "</s>"})[:2]
        self.assertEqual(kind, "text", text)
        self.assertIn("get_weather", text)
        self.assertIn("sunny", text)
        want = len(subprocess.run([INFERLOOP, "tokenize", model, "--stdin", "--no-bos", "--parse-special", "--ids-only"],
                                  input=text.encode(), check=True, capture_output=True).stdout.split())
        with h.Server(INFERLOOP, os.path.join(tmp, "repo")) as server:
            status, _, body = h.post_json(server.http_port, "/v1/chat/completions",
                                          {"model": "qwen_stories", "messages": messages, "tools": [tool],
                                           "tool_choice": "auto", "max_tokens": 1})
        # The prompt is longer than stories260k's 128-token context: the 400 says its length.
        if status == 200:
            self.assertEqual(body["usage"]["prompt_tokens"], want)
        else:
            self.assertEqual(status, 400, body)
            self.assertIn(f"'messages' is too long: {want} tokens", body["error"]["message"])


def write_fixtures(directory):
    os.makedirs(directory, exist_ok=True)
    sources = {t: read_template(t) for t in TOKENS}
    out = []
    for name, tname, ctx, case in chat_cases():
        r = render_jinja2(sources[tname], ctx)
        out.append({"name": name, "context": ctx, "expected": r[1] if r[0] == "text" else None,
                    "raises": r[1] if r[0] == "error" else None})
    with open(os.path.join(directory, "renderings.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print(f"wrote {len(out)} renderings to {directory}/renderings.json")


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    if "--write-fixtures" in sys.argv:
        write_fixtures(sys.argv[sys.argv.index("--write-fixtures") + 1])
        sys.exit(0)
    h.run_tests(set_inferloop, skipped_is_failure=True)
