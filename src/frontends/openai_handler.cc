#include "frontends/openai_handler.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <set>

#include "frontends/http_status.h"

namespace inferloop::frontends {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string NewId(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s-%016llx%04llx", prefix, static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(counter.fetch_add(1) & 0xFFFF));
  return buf;
}

void Str(JsonWriter& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

// {"error": {"message", "type", "param", "code"}}
std::string ErrorJson(const std::string& message, const char* type, const std::string& param, const char* code) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("message");
  Str(w, message);
  w.Key("type");
  w.String(type);
  w.Key("param");
  if (param.empty()) w.Null(); else Str(w, param);
  w.Key("code");
  if (code == nullptr) w.Null(); else w.String(code);
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

HttpResponse Error(int status, const std::string& message, const std::string& param = "", const char* code = nullptr) {
  const char* type = status == 404   ? "invalid_request_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  HttpResponse r = JsonResponse(status, ErrorJson(message, type, param, code));
  if (status == 429 || status == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

HttpResponse FromStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound: return Error(404, s.message(), "model", "model_not_found");
    case StatusCode::kResourceExhausted: return Error(429, s.message());
    case StatusCode::kInvalidArgument: return Error(400, s.message());
    case StatusCode::kUnimplemented: return Error(400, s.message());
    case StatusCode::kUnavailable: return Error(503, s.message());
    default: return Error(500, s.message());
  }
}

// A field error: 400 naming the field.
struct FieldError {
  std::string field;
  std::string message;
};

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

bool ReadInt(Fields& f, const char* name, int64_t lo, int64_t hi, int64_t* out, FieldError* err) {
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

bool ReadNumber(Fields& f, const char* name, double lo, double hi, double* out, FieldError* err) {
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

bool ReadBool(Fields& f, const char* name, bool* out, FieldError* err) {
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
bool RequireNeutral(Fields& f, const char* name, double neutral, FieldError* err) {
  const rapidjson::Value* v = f.Get(name);
  if (v == nullptr) return true;
  if (!v->IsNumber() || v->GetDouble() != neutral) {
    *err = {name, std::string("'") + name + "' is not supported (only " + (neutral == 0 ? "0" : "1") + " is accepted)"};
    return false;
  }
  return true;
}

struct ParsedRequest {
  serve::TextGenerationRequest gen;
  bool stream = false;
  bool include_usage = false;
};

bool ParseCommon(Fields& f, bool chat, ParsedRequest* p, FieldError* err) {
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

bool ParseCompletion(const rapidjson::Value& body, ParsedRequest* p, FieldError* err) {
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

bool ParseChat(const rapidjson::Value& body, ParsedRequest* p, FieldError* err) {
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

void WriteBytes(JsonWriter& w, std::string_view s) {
  w.StartArray();
  for (unsigned char c : s) w.Int(c);
  w.EndArray();
}

// Token text for JSON (a token may hold part of a UTF-8 character).
std::string TokenText(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);  // as OpenAI shows byte tokens: "bytes:\xNN"
      out += "bytes:";
      out += buf;
      ++i;
    }
  }
  return out;
}

// Chat logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}
void WriteChatLogprobs(JsonWriter& w, const std::vector<serve::TextTokenLogprob>& tokens) {
  w.StartObject();
  w.Key("content");
  w.StartArray();
  for (const auto& t : tokens) {
    w.StartObject();
    w.Key("token");
    Str(w, TokenText(t.token));
    w.Key("logprob");
    w.Double(t.logprob);
    w.Key("bytes");
    WriteBytes(w, t.token);
    w.Key("top_logprobs");
    w.StartArray();
    for (const auto& [s, lp] : t.top) {
      w.StartObject();
      w.Key("token");
      Str(w, TokenText(s));
      w.Key("logprob");
      w.Double(lp);
      w.Key("bytes");
      WriteBytes(w, s);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// Completions logprobs: {"tokens", "token_logprobs", "top_logprobs": [{token: lp}], "text_offset"}
void WriteCompletionLogprobs(JsonWriter& w, const std::vector<serve::TextTokenLogprob>& tokens, size_t offset0) {
  w.StartObject();
  w.Key("tokens");
  w.StartArray();
  for (const auto& t : tokens) Str(w, TokenText(t.token));
  w.EndArray();
  w.Key("token_logprobs");
  w.StartArray();
  for (const auto& t : tokens) w.Double(t.logprob);
  w.EndArray();
  w.Key("top_logprobs");
  w.StartArray();
  for (const auto& t : tokens) {
    w.StartObject();
    for (const auto& [s, lp] : t.top) {
      const std::string k = TokenText(s);
      w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
      w.Double(lp);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("text_offset");
  w.StartArray();
  size_t off = offset0;
  for (const auto& t : tokens) {
    w.Uint64(off);
    off += t.token.size();
  }
  w.EndArray();
  w.EndObject();
}

void WriteUsage(JsonWriter& w, const serve::TextGenerationResult& r) {
  w.StartObject();
  w.Key("prompt_tokens");
  w.Int(r.prompt_tokens);
  w.Key("completion_tokens");
  w.Int(r.completion_tokens);
  w.Key("total_tokens");
  w.Int(r.prompt_tokens + r.completion_tokens);
  w.Key("prompt_tokens_details");
  w.StartObject();
  w.Key("cached_tokens");
  w.Int(r.cached_prompt_tokens);
  w.EndObject();
  w.EndObject();
}

// State shared by a request's callbacks.
struct Exchange {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  std::string id;
  std::string model;
  int64_t created = 0;
  HttpResponder respond;
  HttpStream out;
  std::mutex mu;
  // Non-streamed: collected per choice.
  std::vector<std::string> text;
  std::vector<std::vector<serve::TextTokenLogprob>> tokens;
  std::vector<bool> role_sent;       // streamed chat: first delta carries the role
  std::vector<size_t> text_offset;   // streamed completions: text_offset of the next token

  explicit Exchange(HttpResponder r) : respond(std::move(r)) {}

  void Head(JsonWriter& w, const char* object) {
    w.Key("id");
    Str(w, id);
    w.Key("object");
    w.String(object);
    w.Key("created");
    w.Int64(created);
    w.Key("model");
    Str(w, model);
  }

  void SendEvent(const std::string& json) { out.Write("data: " + json + "\n\n"); }

  std::string ChunkJson(int index, const std::string& text, const std::vector<serve::TextTokenLogprob>& toks,
                        const char* finish_reason) {
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    w.StartObject();
    Head(w, chat ? "chat.completion.chunk" : "text_completion");
    w.Key("choices");
    w.StartArray();
    w.StartObject();
    w.Key("index");
    w.Int(index);
    if (chat) {
      w.Key("delta");
      w.StartObject();
      if (!role_sent[index]) {
        w.Key("role");
        w.String("assistant");
        role_sent[index] = true;
      }
      if (finish_reason == nullptr || !text.empty()) {
        w.Key("content");
        Str(w, text);
      }
      w.EndObject();
      w.Key("logprobs");
      if (logprobs && !toks.empty()) WriteChatLogprobs(w, toks); else w.Null();
    } else {
      w.Key("text");
      Str(w, text);
      w.Key("logprobs");
      if (logprobs && !toks.empty()) {
        WriteCompletionLogprobs(w, toks, text_offset[index]);
        for (const auto& t : toks) text_offset[index] += t.token.size();
      } else {
        w.Null();
      }
    }
    w.Key("finish_reason");
    if (finish_reason == nullptr) w.Null(); else w.String(finish_reason);
    w.EndObject();
    w.EndArray();
    if (include_usage) {
      w.Key("usage");
      w.Null();
    }
    w.EndObject();
    return sb.GetString();
  }

  void OnPiece(const serve::TextPiece& p) {
    std::lock_guard<std::mutex> l(mu);
    if (stream) {
      SendEvent(ChunkJson(p.index, p.text, p.tokens, nullptr));
    } else {
      text[p.index] += p.text;
      for (const auto& t : p.tokens) tokens[p.index].push_back(t);
    }
  }

  void OnDone(const serve::TextGenerationResult& r) {
    std::lock_guard<std::mutex> l(mu);
    if (stream) {
      if (!r.status.ok()) {
        if (r.status.code() != StatusCode::kCancelled) SendEvent(ErrorJson(r.status.message(), "server_error", "", nullptr));
      } else {
        for (const auto& c : r.choices) SendEvent(ChunkJson(c.index, "", {}, c.finish_reason.c_str()));
        if (include_usage) {
          rapidjson::StringBuffer sb;
          JsonWriter w(sb);
          w.StartObject();
          Head(w, chat ? "chat.completion.chunk" : "text_completion");
          w.Key("choices");
          w.StartArray();
          w.EndArray();
          w.Key("usage");
          WriteUsage(w, r);
          w.EndObject();
          SendEvent(sb.GetString());
        }
      }
      out.Write("data: [DONE]\n\n");
      out.End();
      return;
    }
    if (!r.status.ok()) {
      respond(r.status.code() == StatusCode::kCancelled ? Error(499, r.status.message()) : Error(500, r.status.message()));
      return;
    }
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    w.StartObject();
    Head(w, chat ? "chat.completion" : "text_completion");
    w.Key("choices");
    w.StartArray();
    for (const auto& c : r.choices) {
      w.StartObject();
      w.Key("index");
      w.Int(c.index);
      if (chat) {
        w.Key("message");
        w.StartObject();
        w.Key("role");
        w.String("assistant");
        w.Key("content");
        Str(w, text[c.index]);
        w.EndObject();
        w.Key("logprobs");
        if (logprobs) WriteChatLogprobs(w, tokens[c.index]); else w.Null();
      } else {
        w.Key("text");
        Str(w, text[c.index]);
        w.Key("logprobs");
        if (logprobs) WriteCompletionLogprobs(w, tokens[c.index], 0); else w.Null();
      }
      w.Key("finish_reason");
      Str(w, c.finish_reason);
      w.EndObject();
    }
    w.EndArray();
    w.Key("usage");
    WriteUsage(w, r);
    w.EndObject();
    respond(JsonResponse(200, sb.GetString()));
  }
};

std::string Path(const std::string& target) {
  const size_t q = target.find('?');
  return q == std::string::npos ? target : target.substr(0, q);
}

}  // namespace

bool OpenAiHandler::Owns(std::string_view target) { return target.rfind("/v1/", 0) == 0 || target == "/v1"; }

void OpenAiHandler::Handle(HttpRequest request, HttpResponder respond) {
  const std::string path = Path(request.target);
  if (path == "/v1/models" || path.rfind("/v1/models/", 0) == 0) {
    if (request.method != "GET") {
      HttpResponse r = Error(405, "use GET for " + path);
      r.headers.emplace_back("Allow", "GET");
      return respond(std::move(r));
    }
    const auto models = service_.ListModels();
    auto write_model = [](JsonWriter& w, const serve::TextGenerationService::ModelInfo& m) {
      w.StartObject();
      w.Key("id");
      Str(w, m.name);
      w.Key("object");
      w.String("model");
      w.Key("created");
      w.Int64(m.created);
      w.Key("owned_by");
      w.String("inferloop");
      w.Key("context_length");
      w.Int64(m.context_length);
      w.EndObject();
    };
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    if (path == "/v1/models") {
      w.StartObject();
      w.Key("object");
      w.String("list");
      w.Key("data");
      w.StartArray();
      for (const auto& m : models) write_model(w, m);
      w.EndArray();
      w.EndObject();
      return respond(JsonResponse(200, sb.GetString()));
    }
    const std::string id = path.substr(std::string("/v1/models/").size());
    for (const auto& m : models) {
      if (m.name == id) {
        write_model(w, m);
        return respond(JsonResponse(200, sb.GetString()));
      }
    }
    return respond(Error(404, "model '" + id + "' does not exist", "model", "model_not_found"));
  }
  const bool chat = path == "/v1/chat/completions";
  if (!chat && path != "/v1/completions") return respond(Error(404, "unknown path " + path));
  if (request.method != "POST") {
    HttpResponse r = Error(405, "use POST for " + path);
    r.headers.emplace_back("Allow", "POST");
    return respond(std::move(r));
  }
  rapidjson::Document doc;
  doc.Parse(request.body.data(), request.body.size());
  if (doc.HasParseError()) {
    return respond(Error(400, std::string("malformed JSON body at offset ") + std::to_string(doc.GetErrorOffset()) + ": " +
                                  rapidjson::GetParseError_En(doc.GetParseError())));
  }
  if (!doc.IsObject()) return respond(Error(400, "the request body must be a JSON object"));
  ParsedRequest p;
  FieldError err;
  if (!(chat ? ParseChat(doc, &p, &err) : ParseCompletion(doc, &p, &err))) return respond(Error(400, err.message, err.field));
  if (p.gen.max_tokens < 0) {
    // Chat without a limit: up to the model's context (the engine refuses what cannot fit).
    for (const auto& m : service_.ListModels()) {
      if (m.name == p.gen.model) p.gen.max_tokens = static_cast<int>(std::max<int64_t>(1, m.context_length / 2));
    }
    if (p.gen.max_tokens < 0) p.gen.max_tokens = 16;
  }
  p.gen.cancelled = request.cancelled;

  auto ex = std::make_shared<Exchange>(respond);
  ex->chat = chat;
  ex->stream = p.stream;
  ex->include_usage = p.include_usage;
  ex->logprobs = p.gen.logprobs >= 0;
  ex->id = NewId(chat ? "chatcmpl" : "cmpl");
  ex->model = p.gen.model;
  ex->created = UnixNow();
  ex->text.resize(p.gen.n);
  ex->tokens.resize(p.gen.n);
  ex->role_sent.assign(p.gen.n, false);
  ex->text_offset.assign(p.gen.n, 0);
  std::unique_lock<std::mutex> hold(ex->mu);  // the first piece waits until the stream is open
  Status st = service_.Generate(
      std::move(p.gen), [ex](const serve::TextPiece& piece) { ex->OnPiece(piece); },
      [ex](const serve::TextGenerationResult& r) { ex->OnDone(r); });
  if (!st.ok()) {
    hold.unlock();
    return respond(FromStatus(st));
  }
  if (ex->stream) {
    HttpResponse head;
    head.status = 200;
    head.headers.emplace_back("Content-Type", "text/event-stream");
    head.headers.emplace_back("Cache-Control", "no-cache");
    ex->out = respond.Stream(std::move(head));
  }
}

}  // namespace inferloop::frontends
