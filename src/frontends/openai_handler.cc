#include "frontends/openai_handler.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cmath>
#include <mutex>
#include <random>

#include "frontends/http_status.h"
#include "frontends/json_writer.h"
#include "frontends/openai_embeddings.h"
#include "frontends/openai_request.h"

namespace inferloop::frontends {
namespace {


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

// The field a service error names first ("'max_tokens' is too large: ..." -> "max_tokens"), or "".
std::string QuotedField(const std::string& message) {
  if (message.empty() || message[0] != '\'') return "";
  const size_t end = message.find('\'', 1);
  if (end == std::string::npos) return "";
  const std::string field = message.substr(1, end - 1);
  for (char c : field) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' || c == ']')) return "";
  }
  return field;
}

HttpResponse FromStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound: return Error(404, s.message(), "model", "model_not_found");
    case StatusCode::kResourceExhausted: return Error(429, s.message());
    case StatusCode::kInvalidArgument: return Error(400, s.message(), QuotedField(s.message()));
    case StatusCode::kUnimplemented: return Error(400, s.message());
    case StatusCode::kUnavailable: return Error(503, s.message());
    default: return Error(500, s.message());
  }
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

// The message of a choice that called a tool.
void WriteToolCallMessage(JsonWriter& w, const std::string& id, const std::string& name, const std::string& args) {
  w.StartObject();
  w.Key("role");
  w.String("assistant");
  w.Key("content");
  w.Null();
  w.Key("tool_calls");
  w.StartArray();
  w.StartObject();
  w.Key("id");
  Str(w, id);
  w.Key("type");
  w.String("function");
  w.Key("function");
  w.StartObject();
  w.Key("name");
  Str(w, name);
  w.Key("arguments");
  Str(w, args);
  w.EndObject();
  w.EndObject();
  w.EndArray();
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
  // Non-streamed: each choice's tool call (the service's call pieces), when it made one.
  std::vector<std::string> call_id, call_name, call_args;

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
    StartChunk(w, chat ? "chat.completion.chunk" : "text_completion", index);
    if (chat) {
      w.Key("delta");
      w.StartObject();
      RoleOnce(w, index);
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
    EndChunk(w, finish_reason);
    return sb.GetString();
  }

  // A streamed chunk's start: the head and one choice opened, with its index.
  void StartChunk(JsonWriter& w, const char* object, int index) {
    w.StartObject();
    Head(w, object);
    w.Key("choices");
    w.StartArray();
    w.StartObject();
    w.Key("index");
    w.Int(index);
  }

  // A streamed chunk's end: the choice's finish_reason (null: none yet), usage null when the
  // stream reports usage in its own last chunk.
  void EndChunk(JsonWriter& w, const char* finish_reason) {
    w.Key("finish_reason");
    if (finish_reason == nullptr) w.Null(); else w.String(finish_reason);
    w.EndObject();
    w.EndArray();
    if (include_usage) {
      w.Key("usage");
      w.Null();
    }
    w.EndObject();
  }

  // The delta's role, in the first delta of a choice only.
  void RoleOnce(JsonWriter& w, int index) {
    if (role_sent[index]) return;
    w.Key("role");
    w.String("assistant");
    role_sent[index] = true;
  }

  // A streamed tool-call delta: the header (id, type, name, empty arguments) or an arguments fragment.
  std::string ToolDeltaJson(int index, const serve::TextPiece& p) {
    const bool header = !p.call_name.empty();
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    StartChunk(w, "chat.completion.chunk", index);
    w.Key("delta");
    w.StartObject();
    RoleOnce(w, index);
    if (header) {
      w.Key("content");
      w.Null();
    }
    w.Key("tool_calls");
    w.StartArray();
    w.StartObject();
    w.Key("index");
    w.Int(0);
    if (header) {
      w.Key("id");
      Str(w, p.call_id);
      w.Key("type");
      w.String("function");
    }
    w.Key("function");
    w.StartObject();
    if (header) {
      w.Key("name");
      Str(w, p.call_name);
    }
    w.Key("arguments");
    Str(w, p.call_arguments);
    w.EndObject();
    w.EndObject();
    w.EndArray();
    w.EndObject();
    w.Key("logprobs");
    w.Null();
    EndChunk(w, nullptr);
    return sb.GetString();
  }

  void OnPiece(const serve::TextPiece& p) {
    std::lock_guard<std::mutex> l(mu);
    if (stream) {
      if (!p.text.empty() || !p.has_call()) SendEvent(ChunkJson(p.index, p.text, p.tokens, nullptr));
      if (p.has_call()) SendEvent(ToolDeltaJson(p.index, p));
    } else {
      text[p.index] += p.text;
      for (const auto& t : p.tokens) tokens[p.index].push_back(t);
      if (!p.call_name.empty()) {
        call_id[p.index] = p.call_id;
        call_name[p.index] = p.call_name;
      }
      call_args[p.index] += p.call_arguments;
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
      if (chat && !call_name[c.index].empty()) {  // (a call cut off by max_tokens: finish_reason "length")
        w.Key("message");
        WriteToolCallMessage(w, call_id[c.index], call_name[c.index], call_args[c.index]);
        w.Key("logprobs");
        if (logprobs) WriteChatLogprobs(w, tokens[c.index]); else w.Null();
      } else if (chat) {
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

// POST /v1/embeddings (openai_embeddings.h).
void HandleEmbeddings(serve::TextGenerationService& service, HttpRequest request, HttpResponder respond) {
  if (request.method != "POST") {
    HttpResponse r = Error(405, "use POST for /v1/embeddings");
    r.headers.emplace_back("Allow", "POST");
    return respond(std::move(r));
  }
  OpenAiEmbeddingsRequest p;
  OpenAiFieldError err;
  if (!ParseOpenAiEmbeddingsRequest(request.body, &p, &err)) return respond(Error(400, err.message, err.field));
  p.request.cancelled = request.cancelled;
  const std::string model = p.request.model;
  const bool base64 = p.base64;
  Status st = service.Embed(std::move(p.request), [respond, model, base64](const serve::EmbeddingResult& r) mutable {
    if (!r.status.ok()) {
      respond(r.status.code() == StatusCode::kCancelled ? Error(499, r.status.message()) : Error(500, r.status.message()));
      return;
    }
    respond(JsonResponse(200, OpenAiEmbeddingsJson(r, model, base64)));
  });
  if (!st.ok()) respond(FromStatus(st));
}

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
  if (path == "/v1/embeddings") return HandleEmbeddings(service_, std::move(request), std::move(respond));
  const bool chat = path == "/v1/chat/completions";
  if (!chat && path != "/v1/completions") return respond(Error(404, "unknown path " + path));
  if (request.method != "POST") {
    HttpResponse r = Error(405, "use POST for " + path);
    r.headers.emplace_back("Allow", "POST");
    return respond(std::move(r));
  }
  OpenAiRequest p;
  OpenAiFieldError err;
  if (!ParseOpenAiRequest(request.body, chat, &p, &err)) return respond(Error(400, err.message, err.field));
  // (Chat without max_tokens: max_tokens < 0, the service generates up to the model's context.)
  p.gen.cancelled = request.cancelled;

  auto ex = std::make_shared<Exchange>(respond);
  ex->chat = chat;
  ex->stream = p.stream;
  ex->include_usage = p.include_usage;
  ex->logprobs = p.gen.logprobs >= 0;
  ex->id = NewId(chat ? "chatcmpl" : "cmpl");
  ex->model = p.gen.model;
  ex->created = UnixNow();
  const size_t choices = std::max<size_t>(1, p.gen.prompts.size()) * static_cast<size_t>(p.gen.n);
  ex->text.resize(choices);
  ex->tokens.resize(choices);
  ex->role_sent.assign(choices, false);
  ex->text_offset.assign(choices, 0);
  ex->call_id.resize(choices);
  ex->call_name.resize(choices);
  ex->call_args.resize(choices);
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
