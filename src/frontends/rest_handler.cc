#include "frontends/rest_handler.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontends/http_status.h"
#include "frontends/openai_handler.h"

namespace inferloop::frontends {
namespace {

namespace rj = rapidjson;
using JsonWriter = rj::Writer<rj::StringBuffer>;

constexpr const char kJson[] = "application/json";
// Control bodies (repository index, load) are small; larger ones are refused before parsing.
constexpr size_t kMaxControlBodyBytes = 64 * 1024;
constexpr int kMaxControlJsonDepth = 32;

// ---- responses ----

HttpResponse Empty(int status) {
  HttpResponse r;
  r.status = status;
  if (HttpStatusWantsRetryAfter(status)) {
    r.headers.emplace_back("Retry-After", std::to_string(serve::RetryAfterSeconds()));
  }
  return r;
}

HttpResponse Body(int status, std::string content_type, std::string body) {
  HttpResponse r = Empty(status);
  r.headers.emplace_back("Content-Type", std::move(content_type));
  r.body = std::move(body);
  return r;
}

HttpResponse Error(const Status& status) {
  return Body(HttpStatusFromCode(status.code()), kJson, JsonErrorBody(status));
}

HttpResponse Error(int http_status, std::string message) {
  return Body(http_status, kJson, JsonErrorBody(Status(StatusCode::kInvalidArgument, std::move(message))));
}

HttpResponse MethodNotAllowed(std::string_view allowed, const std::string& method) {
  HttpResponse r = Error(405, "method " + method + " is not allowed here; use " + std::string(allowed));
  r.headers.emplace_back("Allow", std::string(allowed));
  return r;
}

HttpResponse Json(const rj::StringBuffer& buffer) {
  return Body(200, kJson, std::string(buffer.GetString(), buffer.GetSize()));
}

// ---- JSON writing ----

void Key(JsonWriter& w, std::string_view key) { w.Key(key.data(), static_cast<rj::SizeType>(key.size())); }
void Str(JsonWriter& w, std::string_view s) { w.String(s.data(), static_cast<rj::SizeType>(s.size())); }

void WriteTensorMetadata(JsonWriter& w, const std::vector<serve::TensorMetadata>& tensors) {
  w.StartArray();
  for (const auto& t : tensors) {
    w.StartObject();
    Key(w, "name");
    Str(w, t.name);
    Key(w, "datatype");
    Str(w, t.datatype);
    Key(w, "shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteDuration(JsonWriter& w, std::string_view name, const serve::DurationStat& d) {
  Key(w, name);
  w.StartObject();
  Key(w, "count");
  w.Uint64(d.count);
  Key(w, "ns");
  w.Uint64(d.ns);
  w.EndObject();
}

std::string StatisticsJson(const std::vector<serve::ModelStatistics>& stats) {
  rj::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  Key(w, "model_stats");
  w.StartArray();
  for (const auto& s : stats) {
    w.StartObject();
    Key(w, "name");
    Str(w, s.name);
    Key(w, "version");
    Str(w, s.version);
    Key(w, "last_inference");
    w.Uint64(s.last_inference_ms);
    Key(w, "inference_count");
    w.Uint64(s.inference_count);
    Key(w, "execution_count");
    w.Uint64(s.execution_count);
    Key(w, "inference_stats");
    w.StartObject();
    WriteDuration(w, "success", s.success);
    WriteDuration(w, "fail", s.fail);
    WriteDuration(w, "queue", s.queue);
    WriteDuration(w, "compute_input", s.compute_input);
    WriteDuration(w, "compute_infer", s.compute_infer);
    WriteDuration(w, "compute_output", s.compute_output);
    // Triton reports its response cache here; inferloop has none.
    WriteDuration(w, "cache_hit", {});
    WriteDuration(w, "cache_miss", {});
    w.EndObject();
    Key(w, "batch_stats");
    w.StartArray();
    for (const auto& b : s.batch_stats) {
      w.StartObject();
      Key(w, "batch_size");
      w.Uint64(b.batch_size);
      WriteDuration(w, "compute_input", b.compute_input);
      WriteDuration(w, "compute_infer", b.compute_infer);
      WriteDuration(w, "compute_output", b.compute_output);
      w.EndObject();
    }
    w.EndArray();
    Key(w, "memory_bytes");
    w.Int64(s.memory_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// ---- request parsing ----

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX-decodes one path segment ('+' stays '+': it means a space only in query strings).
Result<std::string> UrlDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("bad percent-encoding in the request path: '" + std::string(s) + "'");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// The URL-decoded segments of the target's path ("/v2/models/m" -> {"v2", "models", "m"}).
Result<std::vector<std::string>> PathSegments(std::string_view target) {
  size_t end = target.find_first_of("?#");
  std::string_view path = target.substr(0, end);
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("the request target must be an absolute path, got '" + std::string(path) + "'");
  }
  std::vector<std::string> segments;
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    IL_ASSIGN_OR_RETURN(std::string segment, UrlDecode(path.substr(pos, slash - pos)));
    segments.push_back(std::move(segment));
    pos = slash + 1;
  }
  return segments;
}

// The Inference-Header-Content-Length value; 0 when absent.
Result<size_t> JsonHeaderLength(const HttpRequest& request) {
  const std::string* value = FindHttpHeader(request.headers, "Inference-Header-Content-Length");
  if (value == nullptr) return size_t{0};
  size_t n = 0;
  const char* begin = value->data();
  const char* end = begin + value->size();
  auto [ptr, ec] = std::from_chars(begin, end, n);
  if (value->empty() || ec != std::errc() || ptr != end) {
    return Status::InvalidArgument("Inference-Header-Content-Length must be a non-negative integer, got '" + *value + "'");
  }
  if (n > request.body.size()) {
    return Status::InvalidArgument("Inference-Header-Content-Length " + std::to_string(n) +
                                   " is larger than the request body (" + std::to_string(request.body.size()) +
                                   " bytes)");
  }
  return n;
}

// Deepest [ / { nesting of a JSON text (strings skipped), to refuse deep bodies before the
// recursive DOM sees them.
int JsonDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// Parses a small control body; it must be a JSON object.
Status ParseControlBody(const std::string& body, rj::Document& doc) {
  if (body.size() > kMaxControlBodyBytes) {
    return Status::InvalidArgument("request body is too large (" + std::to_string(body.size()) + " bytes, at most " +
                                   std::to_string(kMaxControlBodyBytes) + ")");
  }
  if (JsonDepth(body) > kMaxControlJsonDepth) return Status::InvalidArgument("request JSON is nested too deeply");
  doc.Parse<rj::kParseIterativeFlag | rj::kParseValidateEncodingFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    return Status::InvalidArgument(std::string("malformed JSON in the request body at byte ") +
                                   std::to_string(doc.GetErrorOffset()) + ": " + rj::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject()) return Status::InvalidArgument("the request body must be a JSON object");
  return Status::Ok();
}

}  // namespace

RestHandler::RestHandler(serve::InferenceService& service, RestHandlerOptions options)
    : service_(service), options_(std::move(options)) {}

HttpHandler RestHandler::AsHttpHandler() {
  return [this](HttpRequest request, HttpResponder respond) { Handle(std::move(request), std::move(respond)); };
}

void RestHandler::Handle(HttpRequest request, HttpResponder respond) {
  if (options_.openai != nullptr && OpenAiHandler::Owns(request.target)) {
    return options_.openai->Handle(std::move(request), std::move(respond));
  }
  auto segments_or = PathSegments(request.target);
  if (!segments_or.ok()) return respond(Error(segments_or.status()));
  const std::vector<std::string>& seg = *segments_or;
  const std::string& method = request.method;
  const bool get = method == "GET" || method == "HEAD";  // the server sends no body for HEAD
  const bool post = method == "POST";
  auto not_found = [&] { respond(Error(404, "unknown path '" + request.target.substr(0, 200) + "'")); };

  // GET /metrics
  if (seg.size() == 1 && seg[0] == "metrics") {
    if (!get) return respond(MethodNotAllowed("GET", method));
    std::string text = service_.MetricsText();
    if (options_.extra_metrics) text += options_.extra_metrics();
    return respond(Body(200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)));
  }
  if (seg.empty() || seg[0] != "v2") return not_found();

  // GET /v2
  if (seg.size() == 1) {
    if (!get) return respond(MethodNotAllowed("GET", method));
    serve::ServerMetadata md = service_.GetServerMetadata();
    rj::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    Key(w, "name");
    Str(w, md.name);
    Key(w, "version");
    Str(w, md.version);
    Key(w, "extensions");
    w.StartArray();
    for (const auto& e : md.extensions) Str(w, e);
    w.EndArray();
    w.EndObject();
    return respond(Json(buffer));
  }

  // GET /v2/health/{live,ready}
  if (seg[1] == "health") {
    if (seg.size() != 3 || (seg[2] != "live" && seg[2] != "ready")) return not_found();
    if (!get) return respond(MethodNotAllowed("GET", method));
    bool ok = seg[2] == "live" ? service_.Live() : service_.Ready();
    return respond(Empty(ok ? 200 : 503));
  }

  // /v2/repository/...
  if (seg[1] == "repository") {
    if (seg.size() == 3 && seg[2] == "index") {
      if (!post) return respond(MethodNotAllowed("POST", method));
      bool ready_only = false;
      if (!request.body.empty()) {
        rj::Document doc;
        Status st = ParseControlBody(request.body, doc);
        if (!st.ok()) return respond(Error(st));
        const rj::Value& body = doc;
        auto it = body.FindMember("ready");
        if (it != body.MemberEnd()) {
          if (!it->value.IsBool()) return respond(Error(400, "\"ready\" must be a boolean"));
          ready_only = it->value.GetBool();
        }
      }
      rj::StringBuffer buffer;
      JsonWriter w(buffer);
      w.StartArray();
      for (const auto& e : service_.RepositoryIndex(ready_only)) {
        w.StartObject();
        Key(w, "name");
        Str(w, e.name);
        if (!e.version.empty()) {
          Key(w, "version");
          Str(w, e.version);
        }
        Key(w, "state");
        Str(w, e.state);
        if (!e.reason.empty()) {
          Key(w, "reason");
          Str(w, e.reason);
        }
        w.EndObject();
      }
      w.EndArray();
      return respond(Json(buffer));
    }
    if (seg.size() == 5 && seg[2] == "models" && !seg[3].empty() && (seg[4] == "load" || seg[4] == "unload")) {
      if (!post) return respond(MethodNotAllowed("POST", method));
      if (!request.body.empty()) {
        rj::Document doc;
        Status st = ParseControlBody(request.body, doc);
        if (!st.ok()) return respond(Error(st));
        const rj::Value& body = doc;
        auto it = body.FindMember("parameters");
        if (it != body.MemberEnd()) {
          if (!it->value.IsObject()) return respond(Error(400, "\"parameters\" must be a JSON object"));
          // Unload's "unload_dependents" concerns ensembles, which inferloop has not: ignored.
          // Load's configuration override and model files are not supported.
          for (auto p = it->value.MemberBegin(); p != it->value.MemberEnd(); ++p) {
            std::string_view key(p->name.GetString(), p->name.GetStringLength());
            if (seg[4] == "load" && (key == "config" || key.substr(0, 5) == "file:")) {
              return respond(Error(Status::Unimplemented(
                  "model load parameter '" + std::string(key) + "' (configuration override, model files) is not supported")));
            }
          }
        }
      }
      auto done = [respond](Status st) { respond(st.ok() ? Empty(200) : Error(st)); };
      if (seg[4] == "load") {
        service_.LoadModel(seg[3], std::move(done));
      } else {
        service_.UnloadModel(seg[3], std::move(done));
      }
      return;
    }
    return not_found();
  }

  if (seg[1] != "models" || seg.size() < 3) return not_found();

  // GET /v2/models/stats
  if (seg.size() == 3 && seg[2] == "stats") {
    if (!get) return respond(MethodNotAllowed("GET", method));
    auto stats = service_.GetStatistics("", "");
    if (!stats.ok()) return respond(Error(stats.status()));
    return respond(Body(200, kJson, StatisticsJson(*stats)));
  }

  // /v2/models/{m}[/versions/{v}][/action]
  const std::string& model = seg[2];
  std::string version;
  size_t i = 3;
  if (seg.size() >= 5 && seg[3] == "versions") {
    version = seg[4];
    i = 5;
  }
  if (model.empty() || (i == 5 && version.empty()) || seg.size() > i + 1) return not_found();
  std::string action = seg.size() == i + 1 ? seg[i] : "";

  if (action.empty()) {
    if (!get) return respond(MethodNotAllowed("GET", method));
    auto md = service_.GetModelMetadata(model, version);
    if (!md.ok()) return respond(Error(md.status()));
    rj::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    Key(w, "name");
    Str(w, md->name);
    Key(w, "versions");
    w.StartArray();
    for (const auto& v : md->versions) Str(w, v);
    w.EndArray();
    Key(w, "platform");
    Str(w, md->platform);
    Key(w, "inputs");
    WriteTensorMetadata(w, md->inputs);
    Key(w, "outputs");
    WriteTensorMetadata(w, md->outputs);
    Key(w, "memory_bytes");
    w.Int64(md->memory_bytes);
    w.EndObject();
    return respond(Json(buffer));
  }
  if (action == "ready") {
    if (!get) return respond(MethodNotAllowed("GET", method));
    auto ready = service_.ModelReady(model, version);
    if (!ready.ok()) return respond(Error(ready.status()));
    return respond(Empty(*ready ? 200 : 503));
  }
  if (action == "config") {
    if (!get) return respond(MethodNotAllowed("GET", method));
    auto config = service_.GetModelConfigJson(model, version);
    if (!config.ok()) return respond(Error(config.status()));
    return respond(Body(200, kJson, std::move(*config)));
  }
  if (action == "stats") {
    if (!get) return respond(MethodNotAllowed("GET", method));
    auto stats = service_.GetStatistics(model, version);
    if (!stats.ok()) return respond(Error(stats.status()));
    return respond(Body(200, kJson, StatisticsJson(*stats)));
  }
  if (action != "infer") return not_found();
  if (!post) return respond(MethodNotAllowed("POST", method));

  auto header_length = JsonHeaderLength(request);
  if (!header_length.ok()) return respond(Error(header_length.status()));
  auto decoded = DecodeJsonInferRequest(request.body, *header_length, options_.decode);
  if (!decoded.ok()) return respond(Error(decoded.status()));
  InferRequest infer = std::move(decoded).value();
  infer.model_name = model;
  infer.model_version = version;

  // What encoding the response needs of the request (not its input tensors).
  InferRequest wanted;
  wanted.model_name = infer.model_name;
  wanted.model_version = infer.model_version;
  wanted.id = infer.id;
  wanted.parameters = infer.parameters;
  wanted.outputs = infer.outputs;

  serve::RequestContext context;
  context.cancelled = request.cancelled;
  context.received = request.received;
  context.request_bytes = request.body.size();
  context.protocol = "http";
  service_.Infer(std::move(infer), std::move(context),
                 [wanted = std::move(wanted), respond](Result<InferResponse> result) {
                   if (!result.ok()) return respond(Error(result.status()));
                   InferResponse& response = *result;
                   if (response.model_name.empty()) response.model_name = wanted.model_name;
                   if (response.id.empty()) response.id = wanted.id;
                   auto encoded = EncodeJsonInferResponse(response, wanted);
                   if (!encoded.ok()) {
                     return respond(Error(encoded.status().WithContext("cannot encode the response")));
                   }
                   HttpResponse r;
                   if (encoded->has_binary) {
                     r.headers.emplace_back("Content-Type", "application/octet-stream");
                     r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(encoded->json_length));
                   } else {
                     r.headers.emplace_back("Content-Type", kJson);
                   }
                   r.body = std::move(encoded->body);
                   respond(std::move(r));
                 });
}

}  // namespace inferloop::frontends
