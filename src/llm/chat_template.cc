#include "llm/chat_template.h"

#include "base/status_macros.h"
#include "llm/tokenizer.h"

namespace inferloop::llm {

const char* ChatFormatName(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatml: return "chatml";
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kPlain: break;
  }
  return "plain";
}

Result<ChatFormat> DetectChatFormat(std::string_view t) {
  if (t.empty()) return ChatFormat::kPlain;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatml;
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::kLlama3;
  if (t.find("[INST]") != std::string_view::npos) return ChatFormat::kLlama2;
  return Status::Unimplemented("the model's chat template is not one of the supported formats (chatml, llama3, llama2)");
}

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

Result<jinja::Value> MessagesValue(const std::vector<ChatMessage>& messages) {
  jinja::List list;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    jinja::Dict d;
    d.Set("role", jinja::Value::String(m.role));
    d.Set("content", m.content_is_null ? jinja::Value::None() : jinja::Value::String(m.content));
    if (!m.tool_calls_json.empty()) {
      Result<jinja::Value> calls = jinja::ParseJson(m.tool_calls_json);
      if (!calls.ok() || !calls->is_list()) {
        return Status::InvalidArgument("'messages[" + std::to_string(i) + "].tool_calls' must be a JSON array");
      }
      jinja::List fixed;
      for (const jinja::Value& call : calls->list()) {
        const jinja::Value* fn = call.is_dict() ? call.dict().Find("function") : nullptr;
        const jinja::Value* args = fn != nullptr && fn->is_dict() ? fn->dict().Find("arguments") : nullptr;
        if (args == nullptr || !args->is_string()) {
          fixed.push_back(call);
          continue;
        }
        Result<jinja::Value> parsed = jinja::ParseJson(args->str());
        if (!parsed.ok() || !parsed->is_dict()) {
          fixed.push_back(call);
          continue;
        }
        jinja::Dict f = fn->dict();
        f.Set("arguments", *parsed);
        jinja::Dict c = call.dict();
        c.Set("function", jinja::Value::MakeDict(std::move(f)));
        fixed.push_back(jinja::Value::MakeDict(std::move(c)));
      }
      d.Set("tool_calls", jinja::Value::MakeList(std::move(fixed)));
    }
    if (!m.tool_call_id.empty()) d.Set("tool_call_id", jinja::Value::String(m.tool_call_id));
    if (!m.name.empty()) d.Set("name", jinja::Value::String(m.name));
    list.push_back(jinja::Value::MakeDict(std::move(d)));
  }
  return jinja::Value::MakeList(std::move(list));
}

namespace {

// The context transformers' apply_chat_template gives a template.
Result<jinja::Value> TemplateContext(const ChatInput& in, const std::string& bos, const std::string& eos) {
  jinja::Dict ctx;
  IL_ASSIGN_OR_RETURN(jinja::Value messages, MessagesValue(in.messages));
  ctx.Set("messages", std::move(messages));
  jinja::Value tools = jinja::Value::None();
  if (!in.tools_json.empty()) {
    Result<jinja::Value> t = jinja::ParseJson(in.tools_json);
    if (!t.ok() || !t->is_list()) return Status::InvalidArgument("'tools' must be a JSON array");
    tools = *t;
  }
  ctx.Set("tools", std::move(tools));
  ctx.Set("documents", jinja::Value::None());
  ctx.Set("add_generation_prompt", jinja::Value::Bool(in.add_generation_prompt));
  if (!bos.empty()) ctx.Set("bos_token", jinja::Value::String(bos));
  if (!eos.empty()) ctx.Set("eos_token", jinja::Value::String(eos));
  return jinja::Value::MakeDict(std::move(ctx));
}

}  // namespace

Result<ChatTemplate> ChatTemplate::FromText(std::string_view text, std::string bos_token, std::string eos_token) {
  ChatTemplate t;
  t.bos_ = std::move(bos_token);
  t.eos_ = std::move(eos_token);
  if (text.empty()) {
    t.description_ = "plain (the model has no chat template)";
    return t;
  }
  std::string why;
  Result<std::shared_ptr<const jinja::Template>> parsed = jinja::Template::Parse(text);
  if (parsed.ok()) {
    // A template that cannot render a plain conversation is no use: fall back.
    ChatInput probe;
    probe.messages.push_back({"user", "Hello", false, "", "", ""});
    IL_ASSIGN_OR_RETURN(jinja::Value ctx, TemplateContext(probe, t.bos_, t.eos_));
    Result<std::string> r = (*parsed)->Render(ctx);
    if (r.ok() || r.status().code() == StatusCode::kFailedPrecondition) {
      t.jinja_ = *parsed;
      t.description_ = "jinja";
      return t;
    }
    why = "the template fails on a one-message conversation: " + r.status().message();
  } else {
    why = "the template does not parse: " + parsed.status().message();
  }
  Result<ChatFormat> format = DetectChatFormat(text);
  if (!format.ok()) return Status::Unimplemented(format.status().message() + "; and " + why);
  t.format_ = *format;
  t.description_ = std::string(ChatFormatName(t.format_)) + " (fallback: " + why + ")";
  return t;
}

Result<ChatTemplate> ChatTemplate::FromGguf(const GgufFile& file, const Tokenizer& tokenizer) {
  std::string_view text;
  if (file.Find("tokenizer.chat_template") != nullptr) {
    IL_ASSIGN_OR_RETURN(text, file.GetString("tokenizer.chat_template"));
  }
  const std::string bos = tokenizer.bos() >= 0 ? std::string(tokenizer.Text(tokenizer.bos())) : "";
  const std::string eos = tokenizer.eos() >= 0 ? std::string(tokenizer.Text(tokenizer.eos())) : "";
  return FromText(text, bos, eos);
}

Result<std::string> ChatTemplate::Render(const ChatInput& input, bool* add_bos) const {
  *add_bos = false;
  if (input.messages.empty()) return Status::InvalidArgument("'messages' must hold at least one message");
  if (jinja_ == nullptr) {
    if (!input.tools_json.empty()) {
      return Status::InvalidArgument("'tools': the model has no chat template that takes tools (its prompt format is " +
                                     std::string(ChatFormatName(format_)) + ")");
    }
    bool has_bos = false;
    IL_ASSIGN_OR_RETURN(std::string text, RenderChat(format_, input.messages, &has_bos));
    *add_bos = !has_bos;
    return text;
  }
  IL_ASSIGN_OR_RETURN(jinja::Value ctx, TemplateContext(input, bos_, eos_));
  Result<std::string> text = jinja_->Render(ctx);
  if (!text.ok()) {
    const Status& s = text.status();
    if (s.code() == StatusCode::kFailedPrecondition) {
      return Status::InvalidArgument("'messages': the model's chat template refused the conversation: " + s.message());
    }
    return Status::InvalidArgument("'messages': the model's chat template failed on this conversation: " + s.message());
  }
  return text;
}

Result<std::string> RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages, bool* starts_with_bos) {
  *starts_with_bos = false;
  if (messages.empty()) return Status::InvalidArgument("'messages' must hold at least one message");
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return Status::InvalidArgument("'messages': role '" + m.role + "' is not supported by the model's prompt format " +
                                     ChatFormatName(format) + " (system, user, assistant)");
    }
    if (!m.tool_calls_json.empty()) {
      return Status::InvalidArgument(std::string("'messages': tool calls are not supported by the model's prompt format ") +
                                     ChatFormatName(format));
    }
  }
  std::string out;
  switch (format) {
    case ChatFormat::kPlain:
      for (const ChatMessage& m : messages) {
        if (!out.empty()) out += "\n";
        out += m.content;
      }
      return out;
    case ChatFormat::kChatml:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::kLlama3:
      *starts_with_bos = true;
      out = "<|begin_of_text|>";
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + Trim(m.content) + "<|eot_id|>";
      }
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::kLlama2: {
      // <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] ...
      *starts_with_bos = true;
      std::string system;
      size_t i = 0;
      if (messages[0].role == "system") {
        system = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n";
        i = 1;
      }
      bool first = true;
      for (; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
          out += "<s>[INST] " + (first ? system : std::string()) + Trim(m.content) + " [/INST]";
          first = false;
        } else if (m.role == "assistant") {
          out += " " + Trim(m.content) + " </s>";
        } else {
          return Status::InvalidArgument("the llama2 chat format takes a system message only first");
        }
      }
      if (first) out += "<s>[INST] " + system + " [/INST]";
      return out;
    }
  }
  return out;
}

}  // namespace inferloop::llm
