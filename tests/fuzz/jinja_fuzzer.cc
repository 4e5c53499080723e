// The Jinja engine for chat templates (src/llm/jinja.h): any bytes as a template, parsed and
// rendered over a small conversation with tools, under tight limits (a template comes from a
// model file: it must never crash, hang or exhaust memory). Seeds: tests/fuzz/corpus_jinja/
// (the real chat templates of tests/data/chat_templates/ and small feature templates).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llm/chat_template.h"
#include "llm/jinja.h"

using namespace inferloop::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = jinja::Template::Parse(text);
  if (!t.ok()) return 0;
  ChatInput in;
  in.messages = {{"system", "Be brief.", false, "", "", ""},
                 {"user", "Hi \xC3\xA9 {{ x }}", false, "", "", ""},
                 {"assistant", "", true, R"([{"id":"abcDEF123","type":"function","function":{"name":"f","arguments":"{\"a\":[1,2.5,null]}"}}])", "", ""},
                 {"tool", "42", false, "", "abcDEF123", "f"},
                 {"user", "again", false, "", "", ""}};
  in.tools_json = R"([{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}])";
  jinja::Dict ctx;
  ctx.Set("messages", *MessagesValue(in.messages));
  ctx.Set("tools", *jinja::ParseJson(in.tools_json));
  ctx.Set("add_generation_prompt", jinja::Value::Bool(true));
  ctx.Set("bos_token", jinja::Value::String("<s>"));
  ctx.Set("eos_token", jinja::Value::String("</s>"));
  jinja::RenderLimits limits;
  limits.max_steps = 200000;
  limits.max_output_bytes = 1 << 20;
  limits.max_call_depth = 16;
  (void)(*t)->Render(jinja::Value::MakeDict(std::move(ctx)), limits);
  return 0;
}
