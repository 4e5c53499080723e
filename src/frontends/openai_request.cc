#include "frontends/openai_request.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <set>

#include "base/c_locale_number.h"
#include "frontends/openai_text_inputs.h"

namespace inferloop::frontends {
namespace {


class Fields {
 public:
  explicit Fields(const rapidjson::Value& obj) : obj_(obj) {}

  const rapidjson::Value* Get(const char* name) {
    seen_.insert(name);
    auto it = obj_.FindMember(name);
    if (it == obj_.MemberEnd() || it->value.IsNull()) return nullptr;
    return &it->value;
  }
  // The first member not read through Get, or "".
  std::string Unknown() const {
    for (auto it = obj_.MemberBegin(); it != obj_.MemberEnd(); ++it) {
      if (!seen_.count(it->name.GetString())) return it->name.GetString();
    }
    return "";
  }

 private:
  const rapidjson::Value& obj_;
  std::set<std::string> seen_;
};

bool ReadInt(Fields& f, const char* name, int64_t lo, int64_t hi, int64_t* out, OpenAiFieldError* err) {
  const rapidjson::Value* v = f.Get(name);
  if (v == nullptr) return true;
  if (!v->IsInt64()) {
    *err = {name, std::string("'") + name + "' must be an integer"};
    return false;
  }
  const int64_t x = v->GetInt64();
  if (x < lo || x > hi) {
    *err = {name, std::string("'") + name + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                      ", got " + std::to_string(x)};
    return false;
  }
  *out = x;
  return true;
}

bool ReadNumber(Fields& f, const char* name, double lo, double hi, double* out, OpenAiFieldError* err) {
  const rapidjson::Value* v = f.Get(name);
  if (v == nullptr) return true;
  if (!v->IsNumber()) {
    *err = {name, std::string("'") + name + "' must be a number"};
    return false;
  }
  const double x = v->GetDouble();
  if (!(x >= lo && x <= hi)) {
    *err = {name, std::string("'") + name + "' must be between " + FormatGeneralC(lo) + " and " + FormatGeneralC(hi) +
                      ", got " + FormatGeneralC(x)};
    return false;
  }
  *out = x;
  return true;
}

bool ReadBool(Fields& f, const char* name, bool* out, OpenAiFieldError* err) {
  const rapidjson::Value* v = f.Get(name);
  if (v == nullptr) return true;
  if (!v->IsBool()) {
    *err = {name, std::string("'") + name + "' must be a boolean"};
    return false;
  }
  *out = v->GetBool();
  return true;
}

// presence_penalty, frequency_penalty ([-2, 2]), repetition_penalty (> 0), min_p ([0, 1]).
bool ParsePenalties(Fields& f, serve::TextGenerationRequest* g, OpenAiFieldError* err) {
  double presence = 0, frequency = 0, repetition = 1, min_p = 0;
  if (!ReadNumber(f, "presence_penalty", -2, 2, &presence, err)) return false;
  if (!ReadNumber(f, "frequency_penalty", -2, 2, &frequency, err)) return false;
  if (!ReadNumber(f, "repetition_penalty", 0, 1e6, &repetition, err)) return false;
  if (repetition == 0) {
    *err = {"repetition_penalty", "'repetition_penalty' must be greater than 0 (1: no penalty)"};
    return false;
  }
  if (!ReadNumber(f, "min_p", 0, 1, &min_p, err)) return false;
  g->presence_penalty = static_cast<float>(presence);
  g->frequency_penalty = static_cast<float>(frequency);
  g->repetition_penalty = static_cast<float>(repetition);
  g->min_p = static_cast<float>(min_p);
  return true;
}

// logit_bias: {"<token id>": bias in [-100, 100], ...} (ids beyond the vocabulary: the service).
bool ParseLogitBias(Fields& f, serve::TextGenerationRequest* g, OpenAiFieldError* err) {
  const rapidjson::Value* lb = f.Get("logit_bias");
  if (lb == nullptr) return true;
  if (!lb->IsObject() || lb->MemberCount() > 1024) {
    *err = {"logit_bias", "'logit_bias' must be an object of up to 1024 {\"<token id>\": bias} entries"};
    return false;
  }
  for (auto it = lb->MemberBegin(); it != lb->MemberEnd(); ++it) {
    const std::string key(it->name.GetString(), it->name.GetStringLength());
    const bool digits = !key.empty() && key.size() <= 9 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!digits) {
      *err = {"logit_bias", "'logit_bias' keys must be token ids (non-negative integers as strings), got '" + key + "'"};
      return false;
    }
    const double b = it->value.IsNumber() ? it->value.GetDouble() : 1e9;
    if (!(b >= -100 && b <= 100)) {
      *err = {"logit_bias", "'logit_bias' values must be numbers between -100 and 100 (token " + key + ")"};
      return false;
    }
    g->logit_bias.emplace_back(std::stoi(key), static_cast<float>(b));
  }
  return true;
}

// stop_token_ids (vLLM's extension): up to 256 token ids that end a choice (ids beyond the
// vocabulary: the service).
bool ParseStopTokenIds(Fields& f, serve::TextGenerationRequest* g, OpenAiFieldError* err) {
  const rapidjson::Value* ids = f.Get("stop_token_ids");
  if (ids == nullptr) return true;
  if (!ids->IsArray() || ids->Size() > 256) {
    *err = {"stop_token_ids", "'stop_token_ids' must be a list of up to 256 token ids"};
    return false;
  }
  for (rapidjson::SizeType i = 0; i < ids->Size(); ++i) {
    const rapidjson::Value& v = (*ids)[i];
    if (!v.IsInt64() || v.GetInt64() < 0 || v.GetInt64() > INT32_MAX) {
      *err = {"stop_token_ids", "'stop_token_ids[" + std::to_string(i) + "]' must be a token id (a non-negative integer)"};
      return false;
    }
    g->stop_token_ids.push_back(static_cast<int32_t>(v.GetInt64()));
  }
  return true;
}

// prompt: a string, [string, ...], [id, ...] or [[id, ...], ...]; at most 256 choices in all.
bool ParsePrompts(const rapidjson::Value& prompt, int n, std::vector<serve::TextPrompt>* out, OpenAiFieldError* err) {
  constexpr size_t kMaxChoices = 256;
  if (IsListOfInputs(prompt) && prompt.Size() * static_cast<size_t>(n) > kMaxChoices) {
    *err = {"prompt", "'prompt' holds " + std::to_string(prompt.Size()) + " prompts: with n = " + std::to_string(n) +
                          " that is more than " + std::to_string(kMaxChoices) + " choices"};
    return false;
  }
  return ParseTextInputs(prompt, "prompt", out, err);
}

// response_format: {"type": "text"}, {"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"name", "description"?, "schema", "strict"?}} (the schema is compiled by the
// service, which reports what it cannot enforce).
bool ParseResponseFormat(Fields& f, serve::TextGenerationRequest* g, OpenAiFieldError* err) {
  const rapidjson::Value* rf = f.Get("response_format");
  if (rf == nullptr) return true;
  using Format = serve::TextGenerationRequest::Format;
  const char* kShape = "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                       "{\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}";
  if (!rf->IsObject()) {
    *err = {"response_format", kShape};
    return false;
  }
  Fields rff(*rf);
  const rapidjson::Value* type = rff.Get("type");
  const std::string t = type != nullptr && type->IsString() ? type->GetString() : "";
  if (t == "json_schema") {
    const rapidjson::Value* js = rff.Get("json_schema");
    if (js == nullptr || !js->IsObject()) {
      *err = {"response_format.json_schema", "'response_format.json_schema' is required with type json_schema and must be an object"};
      return false;
    }
    Fields jf(*js);
    const rapidjson::Value* name = jf.Get("name");
    const bool name_ok = name != nullptr && name->IsString() && name->GetStringLength() > 0 && name->GetStringLength() <= 64 &&
                         std::all_of(name->GetString(), name->GetString() + name->GetStringLength(),
                                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
    if (!name_ok) {
      *err = {"response_format.json_schema.name", "'response_format.json_schema.name' is required: 1 to 64 letters, digits, '_' or '-'"};
      return false;
    }
    if (const rapidjson::Value* d = jf.Get("description"); d != nullptr && !d->IsString()) {
      *err = {"response_format.json_schema.description", "'response_format.json_schema.description' must be a string"};
      return false;
    }
    const rapidjson::Value* schema = jf.Get("schema");
    if (schema == nullptr || !(schema->IsObject() || schema->IsBool())) {
      *err = {"response_format.json_schema.schema", "'response_format.json_schema.schema' is required and must be a JSON schema (an object)"};
      return false;
    }
    if (!ReadBool(jf, "strict", &g->json_schema_strict, err)) {
      err->field = "response_format.json_schema.strict";
      err->message = "'response_format.json_schema.strict' must be a boolean";
      return false;
    }
    if (const std::string u = jf.Unknown(); !u.empty()) {
      *err = {"response_format.json_schema." + u, "'response_format.json_schema." + u + "' is not supported"};
      return false;
    }
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    schema->Accept(w);
    g->json_schema.assign(sb.GetString(), sb.GetSize());
    g->format = Format::kJsonSchema;
  } else if (t == "json_object") {
    g->format = Format::kJsonObject;
  } else if (t != "text") {
    *err = {"response_format.type", kShape};
    return false;
  }
  if (const std::string u = rff.Unknown(); !u.empty()) {
    *err = {"response_format." + u, "'response_format." + u + "' is not supported with type " + t};
    return false;
  }
  return true;
}

bool ParseCommon(Fields& f, bool chat, OpenAiRequest* p, OpenAiFieldError* err) {
  serve::TextGenerationRequest& g = p->gen;
  const rapidjson::Value* model = f.Get("model");
  if (model == nullptr || !model->IsString() || model->GetStringLength() == 0) {
    *err = {"model", "'model' is required and must be a non-empty string"};
    return false;
  }
  g.model = model->GetString();
  int64_t max_tokens = chat ? -1 : 16;
  if (!ReadInt(f, "max_tokens", 1, 1 << 20, &max_tokens, err)) return false;
  if (chat && !ReadInt(f, "max_completion_tokens", 1, 1 << 20, &max_tokens, err)) return false;
  g.max_tokens = static_cast<int>(max_tokens);  // chat: -1 = up to the context (resolved below)
  double temperature = 1.0, top_p = 1.0;
  if (!ReadNumber(f, "temperature", 0, 2, &temperature, err)) return false;
  if (!ReadNumber(f, "top_p", 0, 1, &top_p, err)) return false;
  if (top_p == 0) {
    *err = {"top_p", "'top_p' must be greater than 0"};
    return false;
  }
  g.temperature = static_cast<float>(temperature);
  g.top_p = static_cast<float>(top_p);
  int64_t top_k = 0, n = 1, priority = 0;
  if (!ReadInt(f, "top_k", -1, 1 << 20, &top_k, err)) return false;
  g.top_k = top_k < 0 ? 0 : static_cast<int>(top_k);  // -1 means "no limit" for vLLM clients
  if (!ReadInt(f, "n", 1, 16, &n, err)) return false;
  g.n = static_cast<int>(n);
  if (!ReadInt(f, "priority", -1000, 1000, &priority, err)) return false;
  g.priority = static_cast<int>(priority);
  if (const rapidjson::Value* seed = f.Get("seed")) {
    if (!seed->IsInt64() && !seed->IsUint64()) {
      *err = {"seed", "'seed' must be an integer"};
      return false;
    }
    g.seed = seed->IsUint64() ? seed->GetUint64() : static_cast<uint64_t>(seed->GetInt64());
  }
  if (const rapidjson::Value* stop = f.Get("stop")) {
    if (stop->IsString()) {
      g.stop.emplace_back(stop->GetString(), stop->GetStringLength());
    } else if (stop->IsArray() && stop->Size() <= 4) {
      for (const auto& s : stop->GetArray()) {
        if (!s.IsString() || s.GetStringLength() == 0) {
          *err = {"stop", "'stop' must hold non-empty strings"};
          return false;
        }
        g.stop.emplace_back(s.GetString(), s.GetStringLength());
      }
    } else {
      *err = {"stop", "'stop' must be a string or an array of up to 4 strings"};
      return false;
    }
  }
  if (!ReadBool(f, "stream", &p->stream, err)) return false;
  if (const rapidjson::Value* so = f.Get("stream_options")) {
    if (!so->IsObject()) {
      *err = {"stream_options", "'stream_options' must be an object"};
      return false;
    }
    Fields sf(*so);
    if (!ReadBool(sf, "include_usage", &p->include_usage, err)) return false;
    if (const std::string u = sf.Unknown(); !u.empty()) {
      *err = {"stream_options." + u, "'stream_options." + u + "' is not supported"};
      return false;
    }
    if (!p->stream) {
      *err = {"stream_options", "'stream_options' is only allowed when 'stream' is true"};
      return false;
    }
  }
  if (!ParsePenalties(f, &g, err)) return false;
  if (!ParseLogitBias(f, &g, err)) return false;
  if (!ParseResponseFormat(f, &g, err)) return false;
  if (!ParseStopTokenIds(f, &g, err)) return false;
  if (const rapidjson::Value* u = f.Get("user"); u != nullptr && !u->IsString()) {
    *err = {"user", "'user' must be a string"};
    return false;
  }
  return true;
}

bool IsToolName(const rapidjson::Value* v) {
  return v != nullptr && v->IsString() && v->GetStringLength() > 0 && v->GetStringLength() <= 64 &&
         std::all_of(v->GetString(), v->GetString() + v->GetStringLength(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

std::string JsonText(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

// A message's tool_calls (assistant) and tool_call_id (tool).
bool ParseToolFields(Fields& mf, const std::string& where, serve::TextChatMessage* msg, OpenAiFieldError* err) {
  const rapidjson::Value* id = mf.Get("tool_call_id");
  if (msg->role == "tool") {
    if (id == nullptr || !id->IsString()) {
      *err = {where + ".tool_call_id", "'" + where + ".tool_call_id' is required in a tool message (a string)"};
      return false;
    }
    msg->tool_call_id = id->GetString();
  } else if (id != nullptr) {
    *err = {where + ".tool_call_id", "'" + where + ".tool_call_id' belongs to tool messages only"};
    return false;
  }
  const rapidjson::Value* calls = mf.Get("tool_calls");
  if (calls == nullptr) return true;
  if (msg->role != "assistant" || !calls->IsArray()) {
    *err = {where + ".tool_calls", "'" + where + ".tool_calls' must be an array, in an assistant message"};
    return false;
  }
  for (rapidjson::SizeType i = 0; i < calls->Size(); ++i) {
    const std::string at = where + ".tool_calls[" + std::to_string(i) + "]";
    const rapidjson::Value& c = (*calls)[i];
    const bool ok = c.IsObject() && c.HasMember("id") && c["id"].IsString() && c.HasMember("function") &&
                    c["function"].IsObject() && IsToolName(c["function"].HasMember("name") ? &c["function"]["name"] : nullptr) &&
                    c["function"].HasMember("arguments") && c["function"]["arguments"].IsString() &&
                    (!c.HasMember("type") || (c["type"].IsString() && std::string_view(c["type"].GetString()) == "function"));
    if (!ok) {
      *err = {at, "'" + at + "' must be {\"id\": ..., \"type\": \"function\", \"function\": {\"name\": ..., \"arguments\": \"<JSON text>\"}}"};
      return false;
    }
    rapidjson::Document args;
    args.Parse(c["function"]["arguments"].GetString());
    if (args.HasParseError()) {
      *err = {at + ".function.arguments", "'" + at + ".function.arguments' must be JSON text"};
      return false;
    }
    msg->tool_calls.push_back({c["id"].GetString(), c["function"]["name"].GetString(), JsonText(args)});
  }
  return true;
}

bool ReadToolChoice(const rapidjson::Value* choice, bool has_tools, serve::TextGenerationRequest* g, OpenAiFieldError* err);

// tools: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}];
// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}};
// parallel_tool_calls: a boolean (at most one call is made either way).
bool ParseTools(Fields& f, serve::TextGenerationRequest* g, OpenAiFieldError* err) {
  using Choice = serve::TextGenerationRequest::ToolChoice;
  bool parallel = true;
  if (!ReadBool(f, "parallel_tool_calls", &parallel, err)) return false;
  const rapidjson::Value* tools = f.Get("tools");
  if (tools != nullptr) {
    if (!tools->IsArray() || tools->Empty() || tools->Size() > 128) {
      *err = {"tools", "'tools' must be an array of 1 to 128 tools"};
      return false;
    }
    for (rapidjson::SizeType i = 0; i < tools->Size(); ++i) {
      const std::string at = "tools[" + std::to_string(i) + "]";
      const rapidjson::Value& t = (*tools)[i];
      if (!t.IsObject() || !t.HasMember("type") || !t["type"].IsString() || std::string_view(t["type"].GetString()) != "function" ||
          !t.HasMember("function") || !t["function"].IsObject()) {
        *err = {at, "'" + at + "' must be {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}"};
        return false;
      }
      Fields ff(t["function"]);
      serve::TextTool tool;
      const rapidjson::Value* name = ff.Get("name");
      if (!IsToolName(name)) {
        *err = {at + ".function.name", "'" + at + ".function.name' is required: 1 to 64 letters, digits, '_' or '-'"};
        return false;
      }
      tool.name = name->GetString();
      for (const serve::TextTool& other : g->tools) {
        if (other.name == tool.name) {
          *err = {at + ".function.name", "'" + at + ".function.name': two tools are named '" + tool.name + "'"};
          return false;
        }
      }
      if (const rapidjson::Value* d = ff.Get("description")) {
        if (!d->IsString()) {
          *err = {at + ".function.description", "'" + at + ".function.description' must be a string"};
          return false;
        }
        tool.description = d->GetString();
      }
      const rapidjson::Value* params = ff.Get("parameters");
      if (params != nullptr && !params->IsObject()) {
        *err = {at + ".function.parameters", "'" + at + ".function.parameters' must be a JSON schema object"};
        return false;
      }
      tool.parameters = params != nullptr ? JsonText(*params) : R"({"type":"object","properties":{}})";
      if (!ReadBool(ff, "strict", &tool.strict, err)) {
        *err = {at + ".function.strict", "'" + at + ".function.strict' must be a boolean"};
        return false;
      }
      if (const std::string u = ff.Unknown(); !u.empty()) {
        *err = {at + ".function." + u, "'" + at + ".function." + u + "' is not supported"};
        return false;
      }
      g->tools.push_back(std::move(tool));
    }
  }
  const rapidjson::Value* choice = f.Get("tool_choice");
  g->tool_choice = g->tools.empty() ? Choice::kNone : Choice::kAuto;
  if (choice != nullptr && !ReadToolChoice(choice, tools != nullptr, g, err)) return false;
  if (g->tool_choice != Choice::kNone && g->format != serve::TextGenerationRequest::Format::kText) {
    *err = {"response_format", "'response_format' together with 'tools' is not supported (unless 'tool_choice' is \"none\")"};
    return false;
  }
  return true;
}

bool ReadToolChoice(const rapidjson::Value* choice_ptr, bool has_tools, serve::TextGenerationRequest* g, OpenAiFieldError* err) {
  using Choice = serve::TextGenerationRequest::ToolChoice;
  const rapidjson::Value* choice = choice_ptr;
  if (!has_tools) {
    *err = {"tool_choice", "'tool_choice' needs 'tools'"};
    return false;
  }
  if (choice->IsString() && std::string_view(choice->GetString()) == "none") {
    g->tool_choice = Choice::kNone;
  } else if (choice->IsString() && std::string_view(choice->GetString()) == "auto") {
    g->tool_choice = Choice::kAuto;
  } else if (choice->IsString() && std::string_view(choice->GetString()) == "required") {
    g->tool_choice = Choice::kRequired;
  } else if (choice->IsObject() && choice->HasMember("function") && (*choice)["function"].IsObject() &&
             IsToolName((*choice)["function"].HasMember("name") ? &(*choice)["function"]["name"] : nullptr)) {
    g->tool_choice = Choice::kFunction;
    g->tool_choice_name = (*choice)["function"]["name"].GetString();
    bool known = false;
    for (const serve::TextTool& t : g->tools) known = known || t.name == g->tool_choice_name;
    if (!known) {
      *err = {"tool_choice", "'tool_choice' names the function '" + g->tool_choice_name + "', which is not in 'tools'"};
      return false;
    }
  } else {
    *err = {"tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}"};
    return false;
  }
  return true;
}

// best_of (completions): n..16 candidates per prompt, the best n returned (serve/best_of.h); not
// with stream; prompts * best_of within the 256 choices a request may have.
bool ParseBestOf(Fields& f, OpenAiRequest* p, OpenAiFieldError* err) {
  int64_t best_of = p->gen.n;
  if (!ReadInt(f, "best_of", 1, 16, &best_of, err)) return false;
  if (best_of < p->gen.n) {
    *err = {"best_of", "'best_of' (" + std::to_string(best_of) + ") must be at least 'n' (" + std::to_string(p->gen.n) + ")"};
    return false;
  }
  if (best_of > p->gen.n && p->stream) {
    *err = {"best_of", "'best_of' greater than 'n' cannot be streamed (the best candidates are known at the end)"};
    return false;
  }
  if (p->gen.prompts.size() * static_cast<size_t>(best_of) > 256) {
    *err = {"best_of", "'best_of' = " + std::to_string(best_of) + " with " + std::to_string(p->gen.prompts.size()) +
                           " prompts asks for more than 256 candidates"};
    return false;
  }
  p->gen.best_of = best_of > p->gen.n ? static_cast<int>(best_of) : 0;
  return true;
}

bool ParseCompletion(const rapidjson::Value& body, OpenAiRequest* p, OpenAiFieldError* err) {
  Fields f(body);
  if (!ParseCommon(f, false, p, err)) return false;
  const rapidjson::Value* prompt = f.Get("prompt");
  if (prompt == nullptr) {
    *err = {"prompt", "'prompt' is required"};
    return false;
  }
  if (!ParsePrompts(*prompt, p->gen.n, &p->gen.prompts, err)) return false;
  int64_t logprobs = -1;
  if (!ReadInt(f, "logprobs", 0, 5, &logprobs, err)) return false;
  p->gen.logprobs = static_cast<int>(logprobs);
  if (!ReadBool(f, "echo", &p->gen.echo, err)) return false;
  if (p->gen.echo && p->gen.logprobs >= 0) {
    *err = {"echo", "'echo' together with 'logprobs' is not supported (the prompt's logprobs are not computed)"};
    return false;
  }
  if (!ParseBestOf(f, p, err)) return false;
  if (const rapidjson::Value* suffix = f.Get("suffix");
      suffix != nullptr && !(suffix->IsString() && suffix->GetStringLength() == 0)) {
    *err = {"suffix", "'suffix' is not supported: the served models cannot fill in text between a prompt and a "
                      "suffix (send the text before the gap as 'prompt')"};
    return false;
  }
  if (const std::string u = f.Unknown(); !u.empty()) {
    *err = {u, "unknown or unsupported field '" + u + "'"};
    return false;
  }
  if (p->gen.max_tokens < 0) p->gen.max_tokens = 16;
  return true;
}

bool ParseChat(const rapidjson::Value& body, OpenAiRequest* p, OpenAiFieldError* err) {
  Fields f(body);
  if (!ParseCommon(f, true, p, err)) return false;
  p->gen.chat = true;
  const rapidjson::Value* messages = f.Get("messages");
  if (messages == nullptr || !messages->IsArray() || messages->Size() == 0) {
    *err = {"messages", "'messages' is required and must be a non-empty array"};
    return false;
  }
  for (rapidjson::SizeType i = 0; i < messages->Size(); ++i) {
    const rapidjson::Value& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.IsObject()) {
      *err = {where, "'" + where + "' must be an object"};
      return false;
    }
    Fields mf(m);
    serve::TextChatMessage msg;
    const rapidjson::Value* role = mf.Get("role");
    if (role == nullptr || !role->IsString()) {
      *err = {where + ".role", "'" + where + ".role' is required"};
      return false;
    }
    msg.role = role->GetString();
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
      *err = {where + ".role", "'" + where + ".role' must be system, developer, user, assistant or tool"};
      return false;
    }
    if (!ParseToolFields(mf, where, &msg, err)) return false;
    const rapidjson::Value* content = mf.Get("content");
    if (content == nullptr && !msg.tool_calls.empty()) {
      // An assistant message that only calls tools.
    } else if (content == nullptr) {
      *err = {where + ".content", "'" + where + ".content' is required"};
      return false;
    }
    if (content == nullptr) {
      // (tool calls only)
    } else if (content->IsString()) {
      msg.content.assign(content->GetString(), content->GetStringLength());
    } else if (content->IsArray()) {
      for (const auto& part : content->GetArray()) {
        if (!part.IsObject() || !part.HasMember("type") || !part["type"].IsString() ||
            std::string_view(part["type"].GetString()) != "text" || !part.HasMember("text") || !part["text"].IsString()) {
          *err = {where + ".content", "'" + where + ".content' parts must be {\"type\": \"text\", \"text\": ...} (other content types are not supported)"};
          return false;
        }
        msg.content.append(part["text"].GetString(), part["text"].GetStringLength());
      }
    } else {
      *err = {where + ".content", "'" + where + ".content' must be a string or an array of text parts"};
      return false;
    }
    mf.Get("name");  // a participant name changes nothing in the prompt formats supported
    if (const std::string u = mf.Unknown(); !u.empty()) {
      *err = {where + "." + u, "'" + where + "." + u + "' is not supported"};
      return false;
    }
    p->gen.messages.push_back(std::move(msg));
  }
  bool logprobs = false;
  if (!ReadBool(f, "logprobs", &logprobs, err)) return false;
  int64_t top = -1;
  if (!ReadInt(f, "top_logprobs", 0, 20, &top, err)) return false;
  if (top >= 0 && !logprobs) {
    *err = {"top_logprobs", "'top_logprobs' needs 'logprobs': true"};
    return false;
  }
  p->gen.logprobs = logprobs ? static_cast<int>(std::max<int64_t>(top, 0)) : -1;
  if (!ParseTools(f, &p->gen, err)) return false;
  for (const char* unsupported : {"functions", "function_call", "audio", "modalities", "prediction", "web_search_options"}) {
    if (f.Get(unsupported) != nullptr) {
      *err = {unsupported, std::string("'") + unsupported + "' is not supported"};
      return false;
    }
  }
  if (const std::string u = f.Unknown(); !u.empty()) {
    *err = {u, "unknown or unsupported field '" + u + "'"};
    return false;
  }
  return true;
}

}  // namespace

bool ParseOpenAiRequest(std::string_view body, bool chat, OpenAiRequest* out, OpenAiFieldError* err) {
  *out = OpenAiRequest{};
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    *err = {"", std::string("malformed JSON body at offset ") + std::to_string(doc.GetErrorOffset()) + ": " +
                    rapidjson::GetParseError_En(doc.GetParseError())};
    return false;
  }
  if (!doc.IsObject()) {
    *err = {"", "the request body must be a JSON object"};
    return false;
  }
  return chat ? ParseChat(doc, out, err) : ParseCompletion(doc, out, err);
}

}  // namespace inferloop::frontends
