// Tool calling's prompt convention, call grammar and call parsing (src/llm/tool_calls.h).
#include "llm/tool_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llm/grammar_matcher.h"

namespace inferloop::llm {
namespace {

const std::vector<ToolSpec> kTools = {
    {"add", "Adds", R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]})"},
    {"tree", "", R"({"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"})"}};

bool Accepts(const Grammar& g, const std::string& text) {
  GrammarMatcher m(&g);
  return m.Advance(text) && m.CanEnd();
}

TEST(ToolCalls, GrammarOfRequiredCalls) {
  auto g = ToolCallGrammar(kTools, /*strict=*/true, /*or_text=*/false);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(Accepts(*g, R"(<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>)"));
  EXPECT_TRUE(Accepts(*g, R"( <tool_call>{"name":"tree","arguments":{"kids":[{"kids":[]}]}}</tool_call>)"));  // refs rebased
  EXPECT_FALSE(Accepts(*g, R"(<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>)"));
  EXPECT_FALSE(Accepts(*g, R"(<tool_call>{"name": "sub", "arguments": {}}</tool_call>)"));
  EXPECT_FALSE(Accepts(*g, R"(<tool_call>{"arguments": {"a": 1, "b": 2}, "name": "add"}</tool_call>)"));
  EXPECT_FALSE(Accepts(*g, "hello"));
}

TEST(ToolCalls, GrammarOfAutoAllowsTextThatDoesNotOpenACall) {
  auto g = ToolCallGrammar(kTools, true, /*or_text=*/true);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(Accepts(*g, "Hello there"));
  EXPECT_TRUE(Accepts(*g, " Hello"));
  EXPECT_TRUE(Accepts(*g, ""));
  EXPECT_TRUE(Accepts(*g, "<tool"));        // a prefix of the marker, then the end
  EXPECT_TRUE(Accepts(*g, "<b>bold</b>"));  // departs from the marker
  EXPECT_TRUE(Accepts(*g, R"(<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>)"));
  EXPECT_FALSE(Accepts(*g, "<tool_call>free text"));  // once opened, a call it is
  EXPECT_FALSE(Accepts(*g, "  <tool_call>x"));
}

TEST(ToolCalls, BadParametersAreErrors) {
  auto g = ToolCallGrammar({{"f", "", R"({"type":"string","pattern":"a"})"}}, false, false);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("pattern"), std::string::npos);
  EXPECT_FALSE(ToolCallGrammar({}, false, false).ok());
}

TEST(ToolCalls, ParseAndStream) {
  const std::string call = R"( <tool_call>{"name": "add", "arguments": {"a": 1, "b": 22}}</tool_call>)";
  std::string name, args;
  ASSERT_TRUE(ParseToolCall(call, &name, &args));
  EXPECT_EQ(name, "add");
  EXPECT_EQ(args, R"({"a": 1, "b": 22})");
  EXPECT_FALSE(ParseToolCall(call.substr(0, call.size() - 3), &name, &args));
  EXPECT_FALSE(ParseToolCall("text", &name, &args));
  // Streamed in pieces of every size: one call start, then fragments that add up to the arguments.
  for (size_t step = 1; step <= call.size(); ++step) {
    ToolCallStream s;
    std::string text, got_name, got_args;
    int starts = 0;
    auto take = [&](const std::vector<ToolCallStream::Event>& ev) {
      for (const auto& e : ev) {
        if (e.kind == ToolCallStream::Event::Kind::kText) text += e.text;
        if (e.kind == ToolCallStream::Event::Kind::kCallStart) {
          ++starts;
          got_name = e.text;
        }
        if (e.kind == ToolCallStream::Event::Kind::kArguments) got_args += e.text;
      }
    };
    for (size_t i = 0; i < call.size(); i += step) take(s.Push(call.substr(i, step)));
    bool called = false;
    take(s.Finish(true, &called));
    EXPECT_TRUE(called);
    EXPECT_EQ(starts, 1);
    EXPECT_EQ(got_name, "add");
    EXPECT_EQ(got_args, args) << step;
    EXPECT_EQ(text, "");
  }
  // Text: held only while it could open a call.
  ToolCallStream t;
  EXPECT_TRUE(t.Push(" <to").empty());
  auto ev = t.Push("y");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, " <toy");
  EXPECT_EQ(t.Push(" box")[0].text, " box");
  bool called = true;
  EXPECT_TRUE(t.Finish(true, &called).empty());
  EXPECT_FALSE(called);
}

TEST(ToolCalls, ChatConvention) {
  ToolChatMessage call{"assistant", "", {{"call_1", "add", R"({"a":1,"b":2})"}}, ""};
  const std::vector<ToolChatMessage> msgs = {{"system", "Be brief.", {}, ""},
                                             {"user", "1+2?", {}, ""},
                                             call,
                                             {"tool", "3", {}, "call_1"},
                                             {"tool", "ok", {}, "call_2"}};
  const std::vector<ChatMessage> plain = ToolChatToPlain(msgs, {kTools[0]});
  ASSERT_EQ(plain.size(), 4u);
  EXPECT_EQ(plain[0].role, "system");
  EXPECT_EQ(plain[0].content.rfind("Be brief.\n\nTools; call one as <tool_call>", 0), 0u) << plain[0].content;
  EXPECT_NE(plain[0].content.find(R"({"name":"add","description":"Adds","parameters":{"type":"object")"), std::string::npos);
  EXPECT_EQ(plain[2].content, R"(<tool_call>{"name": "add", "arguments": {"a":1,"b":2}}</tool_call>)");
  EXPECT_EQ(plain[3].role, "user");
  EXPECT_EQ(plain[3].content, "<tool_response>\n3\n</tool_response>\n<tool_response>\nok\n</tool_response>");
  // Without tools to describe, the system message stays as it was.
  EXPECT_EQ(ToolChatToPlain(msgs, {})[0].content, "Be brief.");
}

}  // namespace
}  // namespace inferloop::llm
