// inferloop chat-template: the prompt a chat conversation becomes under a model's chat template
// (its GGUF tokenizer.chat_template through the Jinja engine, or the fallback format), as
// `inferloop serve` renders it for /v1/chat/completions. --cases renders many conversations
// in one run (JSON lines out; tests/e2e/test_chat_templates.py compares them with jinja2).
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "base/json_string.h"
#include "cli/commands.h"
#include "llm/chat_template.h"
#include "llm/gguf_file.h"
#include "llm/tokenizer.h"

namespace inferloop::cli {
namespace {

Result<std::string> ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// OpenAI-shaped messages (a JSON array value) as llm::ChatMessage.
Result<std::vector<llm::ChatMessage>> Messages(const llm::jinja::Value& v) {
  if (!v.is_list()) return Status::InvalidArgument("'messages' must be a JSON array");
  std::vector<llm::ChatMessage> out;
  for (const llm::jinja::Value& m : v.list()) {
    if (!m.is_dict()) return Status::InvalidArgument("each message must be an object");
    llm::ChatMessage msg;
    auto str = [&](const char* key) {
      const llm::jinja::Value* x = m.dict().Find(key);
      return x != nullptr && x->is_string() ? x->str() : std::string();
    };
    msg.role = str("role");
    msg.content = str("content");
    const llm::jinja::Value* content = m.dict().Find("content");
    msg.content_is_null = content == nullptr || content->is_none();
    if (const llm::jinja::Value* calls = m.dict().Find("tool_calls"); calls != nullptr && !calls->is_none()) {
      Result<std::string> json = llm::jinja::JsonDumps(*calls, {});
      if (!json.ok()) return json.status();
      msg.tool_calls_json = *json;
    }
    msg.tool_call_id = str("tool_call_id");
    msg.name = str("name");
    out.push_back(std::move(msg));
  }
  return out;
}

// One rendering: {"text": ...} or {"error": ...}.
std::string RenderCase(const llm::ChatTemplate& t, const llm::jinja::Value& c) {
  llm::ChatInput in;
  const llm::jinja::Value* messages = c.dict().Find("messages");
  Result<std::vector<llm::ChatMessage>> msgs = messages ? Messages(*messages) : Status::InvalidArgument("no 'messages'");
  if (!msgs.ok()) return "{\"error\": " + JsonString(msgs.status().message()) + "}";
  in.messages = std::move(*msgs);
  if (const llm::jinja::Value* tools = c.dict().Find("tools"); tools != nullptr && !tools->is_none()) {
    Result<std::string> json = llm::jinja::JsonDumps(*tools, {});
    if (json.ok()) in.tools_json = *json;
  }
  const llm::jinja::Value* agp = c.dict().Find("add_generation_prompt");
  in.add_generation_prompt = agp == nullptr || agp->Truthy();
  bool add_bos = false;
  Result<std::string> text = t.Render(in, &add_bos);
  if (!text.ok()) return "{\"error\": " + JsonString(text.status().message()) + "}";
  return "{\"text\": " + JsonString(*text) + ", \"add_bos\": " + (add_bos ? "true" : "false") + "}";
}

// A template text rendered with exactly the variables of `context`: {"text"} or {"error"} (with
// "raised": true for a raise_exception).
std::string RenderRaw(const std::string& text, const llm::jinja::Value& context) {
  Result<std::shared_ptr<const llm::jinja::Template>> t = llm::jinja::Template::Parse(text);
  Result<std::string> out = t.ok() ? (*t)->Render(context) : Result<std::string>(t.status());
  if (out.ok()) return "{\"text\": " + JsonString(*out) + "}";
  const bool raised = out.status().code() == StatusCode::kFailedPrecondition;
  return "{\"error\": " + JsonString(out.status().message()) + ", \"raised\": " + (raised ? "true" : "false") + "}";
}

int RunCases(const std::string& path) {
  Result<std::string> text = ReadText(path);
  Result<llm::jinja::Value> cases = text.ok() ? llm::jinja::ParseJson(*text) : Result<llm::jinja::Value>(text.status());
  if (!cases.ok() || !cases->is_list()) {
    std::cerr << "error: " << path << ": " << (cases.ok() ? "expected a JSON array of cases" : cases.status().message()) << "\n";
    return 1;
  }
  std::map<std::string, std::shared_ptr<llm::ChatTemplate>> templates;
  for (const llm::jinja::Value& c : cases->list()) {
    auto field = [&](const char* key) {
      const llm::jinja::Value* x = c.is_dict() ? c.dict().Find(key) : nullptr;
      return x != nullptr && x->is_string() ? x->str() : std::string();
    };
    if (const llm::jinja::Value* context = c.is_dict() ? c.dict().Find("context") : nullptr) {
      std::cout << RenderRaw(field("template_text"), *context) << "\n";
      continue;
    }
    const std::string key = field("template") + '\0' + field("bos_token") + '\0' + field("eos_token");
    auto& t = templates[key];
    if (!t) {
      Result<std::string> src = ReadText(field("template"));
      Result<llm::ChatTemplate> made = src.ok() ? llm::ChatTemplate::FromText(*src, field("bos_token"), field("eos_token"))
                                                : Result<llm::ChatTemplate>(src.status());
      if (!made.ok()) {
        std::cout << "{\"error\": " << JsonString(made.status().message()) << "}\n";
        continue;
      }
      t = std::make_shared<llm::ChatTemplate>(std::move(*made));
    }
    std::cout << RenderCase(*t, c) << "\n";
  }
  return 0;
}

}  // namespace

Runner AddChatTemplateCommand(CLI::App& app) {
  struct Args {
    std::string model, template_file, bos, eos, messages, tools, cases;
    bool no_generation_prompt = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("chat-template", "Print the prompt a chat conversation becomes under a model's chat template.");
  cmd->add_option("--model", a->model, "A GGUF model file (its tokenizer.chat_template and BOS/EOS tokens)");
  cmd->add_option("--template", a->template_file, "A Jinja chat template file (instead of --model)");
  cmd->add_option("--bos", a->bos, "With --template: the BOS token's text (bos_token)");
  cmd->add_option("--eos", a->eos, "With --template: the EOS token's text (eos_token)");
  cmd->add_option("--messages", a->messages, "A JSON file: the conversation, as OpenAI's 'messages' array");
  cmd->add_option("--tools", a->tools, "A JSON file: OpenAI's 'tools' array");
  cmd->add_flag("--no-generation-prompt", a->no_generation_prompt, "End after the last message (add_generation_prompt=false)");
  cmd->add_option("--cases", a->cases,
                  "A JSON file: an array of {template (a file), bos_token, eos_token, messages, tools, add_generation_prompt} "
                  "or {template_text, context} (the variables as they are); prints one JSON line per case, "
                  "{\"text\"} or {\"error\"}");
  return [a]() {
    if (!a->cases.empty()) return RunCases(a->cases);
    auto fail = [](const Status& s) {
      std::cerr << "error: " << s.message() << "\n";
      return 1;
    };
    Result<llm::ChatTemplate> t = Status::InvalidArgument("give --model or --template");
    if (!a->model.empty()) {
      auto file = llm::GgufFile::Open(a->model);
      if (!file.ok()) return fail(file.status());
      auto tok = llm::Tokenizer::FromGguf(*file);
      if (!tok.ok()) return fail(tok.status());
      t = llm::ChatTemplate::FromGguf(*file, *tok);
    } else if (!a->template_file.empty()) {
      Result<std::string> src = ReadText(a->template_file);
      if (!src.ok()) return fail(src.status());
      t = llm::ChatTemplate::FromText(*src, a->bos, a->eos);
    }
    if (!t.ok()) return fail(t.status());
    if (a->messages.empty()) return fail(Status::InvalidArgument("give --messages"));
    Result<std::string> msgs = ReadText(a->messages);
    if (!msgs.ok()) return fail(msgs.status());
    Result<llm::jinja::Value> mv = llm::jinja::ParseJson(*msgs);
    if (!mv.ok()) return fail(mv.status().WithContext(a->messages));
    llm::jinja::Dict c;
    c.Set("messages", *mv);
    if (!a->tools.empty()) {
      Result<std::string> tools = ReadText(a->tools);
      if (!tools.ok()) return fail(tools.status());
      Result<llm::jinja::Value> tv = llm::jinja::ParseJson(*tools);
      if (!tv.ok()) return fail(tv.status().WithContext(a->tools));
      c.Set("tools", *tv);
    }
    c.Set("add_generation_prompt", llm::jinja::Value::Bool(!a->no_generation_prompt));
    const std::string line = RenderCase(*t, llm::jinja::Value::MakeDict(std::move(c)));
    Result<llm::jinja::Value> r = llm::jinja::ParseJson(line);
    std::cerr << "prompt format: " << t->description() << "\n";
    if (const llm::jinja::Value* e = r->dict().Find("error")) return fail(Status::InvalidArgument(e->str()));
    std::cout << r->dict().Find("text")->str();
    return 0;
  };
}

}  // namespace inferloop::cli
