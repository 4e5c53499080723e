// The Jinja engine's contract (src/llm/jinja.h) and the chat template layer over it
// (src/llm/chat_template.h). Rendering equality with jinja2 over the real templates is
// tests/e2e/test_chat_templates.py's (live, against PyPI jinja2).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "llm/chat_template.h"
#include "llm/jinja.h"
#include "unit/comma_decimal_locale.h"

namespace inferloop::llm {
namespace {

jinja::Value Ctx(std::initializer_list<std::pair<const char*, jinja::Value>> vars) {
  jinja::Dict d;
  for (const auto& [k, v] : vars) d.Set(k, v);
  return jinja::Value::MakeDict(std::move(d));
}

TEST(JinjaTest, ParsedOnceRendersManyTimesFromSeveralThreads) {
  auto t = jinja::Template::Parse("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}");
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::vector<ChatMessage> msgs = {{"user", "a", false, "", "", ""}, {"assistant", "b", false, "", "", ""}};
  const jinja::Value ctx = Ctx({{"messages", *MessagesValue(msgs)}});
  std::vector<std::string> outs(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) outs[i] = (*t)->Render(ctx).value();
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& o : outs) EXPECT_EQ(o, "user:a;assistant:b;");
}

TEST(JinjaTest, RaiseExceptionIsFailedPreconditionWithTheMessage) {
  auto r = jinja::RenderTemplate("{{ raise_exception('no ' ~ x) }}", Ctx({{"x", jinja::Value::Int(3)}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "no 3");
}

TEST(JinjaTest, ErrorsNameTheLine) {
  auto r = jinja::RenderTemplate("a\n{{ b.c }}", Ctx({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "line 2: 'b' is undefined");
  auto p = jinja::Template::Parse("x\ny\n{% if a %}");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().rfind("line 3: ", 0), 0u) << p.status().message();
}

TEST(JinjaTest, LimitsStopHostileTemplates) {
  jinja::RenderLimits limits;
  limits.max_steps = 10000;
  auto t = jinja::Template::Parse("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto r = (*t)->Render(Ctx({}), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  limits.max_output_bytes = 100;
  auto big = jinja::Template::Parse("{{ 'x' * 101 }}");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ((*big)->Render(Ctx({}), limits).status().code(), StatusCode::kResourceExhausted);
}

TEST(JinjaTest, FloatLiteralsAndTheFloatFilterIgnoreTheProcessLocale) {
  // A host program with a ',' decimal point (LC_NUMERIC) must not change what a template means.
  inferloop::testing::CommaDecimalLocale locale;
  ASSERT_TRUE(locale.ok()) << locale.why();
  auto r = jinja::RenderTemplate("{{ 1.5 * 2 }}|{{ '2.25' | float }}|{{ 0.5 + 0.25 }}", Ctx({}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "3.0|2.25|0.75");
}

TEST(JinjaTest, PythonFloatReprAndJson) {
  EXPECT_EQ(jinja::PyFloatRepr(1.0), "1.0");
  EXPECT_EQ(jinja::PyFloatRepr(0.1), "0.1");
  EXPECT_EQ(jinja::PyFloatRepr(1e-5), "1e-05");
  EXPECT_EQ(jinja::PyFloatRepr(1e16), "1e+16");
  EXPECT_EQ(jinja::PyFloatRepr(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(jinja::PyFloatRepr(-2.5e-300), "-2.5e-300");
  auto v = jinja::ParseJson(R"({"b": [1, 2.5, null, true], "a": "\u00e9\n"})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(jinja::JsonDumps(*v, {}).value(), "{\"b\": [1, 2.5, null, true], \"a\": \"\xC3\xA9\\n\"}");
  jinja::JsonDumpOptions o;
  o.indent = 1;
  o.sort_keys = true;
  o.ensure_ascii = true;
  EXPECT_EQ(jinja::JsonDumps(*v, o).value(), "{\n \"a\": \"\\u00e9\\n\",\n \"b\": [\n  1,\n  2.5,\n  null,\n  true\n ]\n}");
}

TEST(ChatTemplateTest, ToolCallArgumentsBecomeObjects) {
  std::vector<ChatMessage> msgs = {
      {"assistant", "", true, R"([{"id":"1","type":"function","function":{"name":"f","arguments":"{\"x\": 1}"}}])", "", ""},
      {"assistant", "", true, R"([{"id":"2","type":"function","function":{"name":"g","arguments":"not json"}}])", "", ""},
      {"tool", "r", false, "", "1", "f"}};
  auto v = MessagesValue(msgs);
  ASSERT_TRUE(v.ok());
  auto out = jinja::RenderTemplate(
      "{% for m in messages %}{{ m.content }}|{% if m.tool_calls is defined %}{{ m.tool_calls | tojson }}{% endif %}|"
      "{{ m.tool_call_id }}|{{ m.name }}\n{% endfor %}",
      Ctx({{"messages", *v}}));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out,
            "None|[{\"id\": \"1\", \"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1}}}]||\n"
            "None|[{\"id\": \"2\", \"type\": \"function\", \"function\": {\"name\": \"g\", \"arguments\": \"not json\"}}]||\n"
            "r||1|f\n");
  msgs[0].tool_calls_json = "{oops";
  EXPECT_EQ(MessagesValue(msgs).status().message(), "'messages[0].tool_calls' must be a JSON array");
}

TEST(ChatTemplateTest, JinjaFirstFallbackOtherwise) {
  const std::vector<ChatMessage> hi = {{"user", "hi", false, "", "", ""}};
  bool add_bos = true;
  auto plain = ChatTemplate::FromText("", "<s>", "</s>");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->uses_jinja());
  EXPECT_EQ(plain->Render({hi, "", true}, &add_bos).value(), "hi");
  EXPECT_TRUE(add_bos);

  auto jinja = ChatTemplate::FromText("{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}", "<s>", "</s>");
  ASSERT_TRUE(jinja.ok());
  EXPECT_TRUE(jinja->uses_jinja());
  EXPECT_EQ(jinja->description(), "jinja");
  EXPECT_EQ(jinja->Render({hi, "", true}, &add_bos).value(), "<s>[hi]");
  EXPECT_FALSE(add_bos);

  // A ChatML template the engine cannot parse: the ChatML fallback, saying why.
  auto chatml = ChatTemplate::FromText("<|im_start|>{% filter upper %}{% endfilter %}", "", "");
  ASSERT_TRUE(chatml.ok());
  EXPECT_FALSE(chatml->uses_jinja());
  EXPECT_EQ(chatml->fallback_format(), ChatFormat::kChatml);
  EXPECT_NE(chatml->description().find("unknown or unsupported tag 'filter'"), std::string::npos) << chatml->description();
  EXPECT_EQ(chatml->Render({hi, "", true}, &add_bos).value(), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chatml->Render({hi, "[]", true}, &add_bos).status().code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(ChatTemplate::FromText("{% filter upper %}{% endfilter %}", "", "").status().code(), StatusCode::kUnimplemented);
}

TEST(ChatTemplateTest, RefusalsAreInvalidArgumentWithTheTemplatesMessage) {
  auto t = ChatTemplate::FromText(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok", "", "");
  ASSERT_TRUE(t.ok());
  bool add_bos = false;
  auto r = t->Render({{{"system", "s", false, "", "", ""}}, "", true}, &add_bos);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "'messages': the model's chat template refused the conversation: System role not supported");
}

}  // namespace
}  // namespace inferloop::llm
