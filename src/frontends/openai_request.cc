#include "frontends/openai_request.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdio>
#include <set>

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
    char buf[160];
    std::snprintf(buf, sizeof(buf), "'%s' must be between %g and %g, got %g", name, lo, hi, x);
    *err = {name, buf};
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

// Fields a client may send with a value that changes nothing; any other value is refused.
bool RequireNeutral(Fields& f, const char* name, double neutral, OpenAiFieldError* err) {
  const rapidjson::Value* v = f.Get(name);
  if (v == nullptr) return true;
  if (!v->IsNumber() || v->GetDouble() != neutral) {
    *err = {name, std::string("'") + name + "' is not supported (only " + (neutral == 0 ? "0" : "1") + " is accepted)"};
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
  if (!RequireNeutral(f, "presence_penalty", 0, err)) return false;
  if (!RequireNeutral(f, "frequency_penalty", 0, err)) return false;
  if (const rapidjson::Value* lb = f.Get("logit_bias"); lb != nullptr && (!lb->IsObject() || lb->MemberCount() > 0)) {
    *err = {"logit_bias", "'logit_bias' is not supported"};
    return false;
  }
  if (const rapidjson::Value* u = f.Get("user"); u != nullptr && !u->IsString()) {
    *err = {"user", "'user' must be a string"};
    return false;
  }
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
  if (prompt->IsString()) {
    p->gen.prompt.assign(prompt->GetString(), prompt->GetStringLength());
  } else if (prompt->IsArray() && prompt->Size() == 1 && (*prompt)[0].IsString()) {
    p->gen.prompt.assign((*prompt)[0].GetString(), (*prompt)[0].GetStringLength());
  } else {
    *err = {"prompt", "'prompt' must be a string or an array of one string (token-id prompts and batches of prompts are not supported)"};
    return false;
  }
  int64_t logprobs = -1;
  if (!ReadInt(f, "logprobs", 0, 5, &logprobs, err)) return false;
  p->gen.logprobs = static_cast<int>(logprobs);
  bool echo = false;
  if (!ReadBool(f, "echo", &echo, err)) return false;
  if (echo) {
    *err = {"echo", "'echo' is not supported"};
    return false;
  }
  int64_t best_of = p->gen.n;
  if (!ReadInt(f, "best_of", 1, 16, &best_of, err)) return false;
  if (best_of != p->gen.n) {
    *err = {"best_of", "'best_of' is only supported equal to 'n'"};
    return false;
  }
  if (const rapidjson::Value* suffix = f.Get("suffix"); suffix != nullptr) {
    *err = {"suffix", "'suffix' is not supported"};
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
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant") {
      *err = {where + ".role", "'" + where + ".role' must be system, developer, user or assistant (tool messages are not supported)"};
      return false;
    }
    const rapidjson::Value* content = mf.Get("content");
    if (content == nullptr) {
      *err = {where + ".content", "'" + where + ".content' is required"};
      return false;
    }
    if (content->IsString()) {
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
  if (const rapidjson::Value* rf = f.Get("response_format")) {
    if (!rf->IsObject() || !rf->HasMember("type") || !(*rf)["type"].IsString() ||
        std::string_view((*rf)["type"].GetString()) != "text" || rf->MemberCount() != 1) {
      *err = {"response_format", "'response_format' is only supported as {\"type\": \"text\"}"};
      return false;
    }
  }
  for (const char* unsupported : {"tools", "tool_choice", "functions", "function_call", "parallel_tool_calls", "audio",
                                  "modalities", "prediction", "web_search_options"}) {
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
