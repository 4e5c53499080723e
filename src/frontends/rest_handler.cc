#include "frontends/rest_handler.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "frontends/adaptive_state_json.h"
#include "frontends/http_status.h"
#include "frontends/json_writer.h"

namespace inferloop::frontends {
namespace {

namespace rj = rapidjson;

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
    WriteDuration(w, "cache_hit", s.cache_hit);
    WriteDuration(w, "cache_miss", s.cache_miss);
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

}  // namespace

// The URL-decoded segments of the target's path ("/v2/models/m" -> {"v2", "models", "m"}).
Result<std::vector<std::string>> PathSegments(std::string_view target) {
  size_t end = target.find_first_of("?#");
  std::string_view path = target.substr(0, end);
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("the request target must be an absolute path, got '" + std::string(path) + "'");
  }
  std::vector<std::string> segments;
  segments.reserve(static_cast<size_t>(std::count(path.begin(), path.end(), '/')));
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

namespace {

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


// ---- routes ----

// What a route's path names, and what its handler needs.
struct RouteCall {
  serve::InferenceService& service;
  const RestHandlerOptions& options;
  HttpRequest& request;
  HttpResponder& respond;
  std::string model;    // /v2/models/{model}, /v2/repository/models/{model}
  std::string version;  // /v2/models/{m}/versions/{version}
  std::string action;   // health: live|ready; repository: load|unload
};

// /v2/models/{m}[/versions/{v}][/action]: false when the path is not of that form.
bool ParseModelPath(const std::vector<std::string>& seg, std::string& model, std::string& version,
                    std::string& action) {
  if (seg.size() < 3 || seg[0] != "v2" || seg[1] != "models") return false;
  model = seg[2];
  version.clear();
  size_t i = 3;
  if (seg.size() >= 5 && seg[3] == "versions") {
    version = seg[4];
    i = 5;
  }
  if (model.empty() || (i == 5 && version.empty()) || seg.size() > i + 1) return false;
  action = seg.size() == i + 1 ? seg[i] : "";
  return true;
}

// A route: `match` says whether a path is the route's (filling the call's path fields); a
// matching path with another method is a 405.
struct Route {
  const char* method;  // "GET" (HEAD too: the server sends no body) or "POST"
  bool (*match)(const std::vector<std::string>& seg, RouteCall& call);
  void (*handle)(RouteCall& call);
};

bool Is(const std::vector<std::string>& seg, std::initializer_list<std::string_view> want) {
  return seg.size() == want.size() && std::equal(seg.begin(), seg.end(), want.begin());
}

template <const char* kAction>
bool MatchModelAction(const std::vector<std::string>& seg, RouteCall& call) {
  return ParseModelPath(seg, call.model, call.version, call.action) && call.action == kAction;
}

void Metrics(RouteCall& c) {
  std::string text = c.service.MetricsText();
  if (c.options.extra_metrics) text += c.options.extra_metrics();
  c.respond(Body(200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)));
}

void ServerMetadata(RouteCall& c) {
  serve::ServerMetadata md = c.service.GetServerMetadata();
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
  c.respond(Json(buffer));
}

void Health(RouteCall& c) {
  bool ok = c.action == "live" ? c.service.Live() : c.service.Ready();
  c.respond(Empty(ok ? 200 : 503));
}

void RepositoryIndex(RouteCall& c) {
  bool ready_only = false;
  if (!c.request.body.empty()) {
    rj::Document doc;
    Status st = ParseControlBody(c.request.body, doc);
    if (!st.ok()) return c.respond(Error(st));
    const rj::Value& body = doc;
    auto it = body.FindMember("ready");
    if (it != body.MemberEnd()) {
      if (!it->value.IsBool()) return c.respond(Error(400, "\"ready\" must be a boolean"));
      ready_only = it->value.GetBool();
    }
  }
  rj::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartArray();
  for (const auto& e : c.service.RepositoryIndex(ready_only)) {
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
  c.respond(Json(buffer));
}

void RepositoryLoadUnload(RouteCall& c) {
  if (!c.request.body.empty()) {
    rj::Document doc;
    Status st = ParseControlBody(c.request.body, doc);
    if (!st.ok()) return c.respond(Error(st));
    const rj::Value& body = doc;
    auto it = body.FindMember("parameters");
    if (it != body.MemberEnd()) {
      if (!it->value.IsObject()) return c.respond(Error(400, "\"parameters\" must be a JSON object"));
      // Unload's "unload_dependents" concerns ensembles, which inferloop has not: ignored.
      // Load's configuration override and model files are not supported.
      for (auto p = it->value.MemberBegin(); p != it->value.MemberEnd(); ++p) {
        std::string_view key(p->name.GetString(), p->name.GetStringLength());
        if (c.action == "load" && (key == "config" || key.substr(0, 5) == "file:")) {
          return c.respond(Error(Status::Unimplemented(
              "model load parameter '" + std::string(key) + "' (configuration override, model files) is not supported")));
        }
      }
    }
  }
  auto done = [respond = c.respond](Status st) { respond(st.ok() ? Empty(200) : Error(st)); };
  if (c.action == "load") {
    c.service.LoadModel(c.model, std::move(done));
  } else {
    c.service.UnloadModel(c.model, std::move(done));
  }
}

void Statistics(RouteCall& c) {
  auto stats = c.service.GetStatistics(c.model, c.version);
  if (!stats.ok()) return c.respond(Error(stats.status()));
  c.respond(Body(200, kJson, StatisticsJson(*stats)));
}

void ModelMetadata(RouteCall& c) {
  auto md = c.service.GetModelMetadata(c.model, c.version);
  if (!md.ok()) return c.respond(Error(md.status()));
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
  c.respond(Json(buffer));
}

void ModelReady(RouteCall& c) {
  auto ready = c.service.ModelReady(c.model, c.version);
  if (!ready.ok()) return c.respond(Error(ready.status()));
  c.respond(Empty(*ready ? 200 : 503));
}

void ModelConfig(RouteCall& c) {
  auto config = c.service.GetModelConfigJson(c.model, c.version);
  if (!config.ok()) return c.respond(Error(config.status()));
  c.respond(Body(200, kJson, std::move(*config)));
}

// The response to an inference (JSON, or JSON + binary data as the request asked).
HttpResponse InferResponseBody(Result<InferResponse> result, const InferRequest& wanted) {
  if (!result.ok()) return Error(result.status());
  InferResponse& response = *result;
  if (response.model_name.empty()) response.model_name = wanted.model_name;
  if (response.id.empty()) response.id = wanted.id;
  auto encoded = EncodeJsonInferResponse(response, wanted);
  if (!encoded.ok()) return Error(encoded.status().WithContext("cannot encode the response"));
  HttpResponse r;
  if (encoded->has_binary) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(encoded->json_length));
  } else {
    r.content_type = kJson;
  }
  r.body = std::move(encoded->body);
  return r;
}

void Infer(RouteCall& c) {
  auto header_length = JsonHeaderLength(c.request);
  if (!header_length.ok()) return c.respond(Error(header_length.status()));
  auto decoded = DecodeJsonInferRequest(c.request.body, *header_length, c.options.decode);
  if (!decoded.ok()) return c.respond(Error(decoded.status()));
  InferRequest infer = std::move(decoded).value();
  infer.model_name = c.model;
  infer.model_version = c.version;

  // What encoding the response needs of the request (not its input tensors).
  InferRequest wanted;
  wanted.model_name = infer.model_name;
  wanted.model_version = infer.model_version;
  wanted.id = infer.id;
  wanted.parameters = infer.parameters;
  wanted.outputs = infer.outputs;

  serve::RequestContext context(c.request.cancelled, c.request.received);
  context.request_bytes = c.request.body.size();
  context.protocol = "http";
  c.service.Infer(std::move(infer), std::move(context),
                  [wanted = std::move(wanted), respond = c.respond](Result<InferResponse> result) {
                    respond(InferResponseBody(std::move(result), wanted));
                  });
}

void AdaptiveState(RouteCall& c) {
  auto state = c.service.GetAdaptiveState(c.model, c.version);
  if (!state.ok()) return c.respond(Error(state.status()));
  c.respond(Body(200, kJson, AdaptiveStateJson(*state)));
}

// The variant a pin body {"variant": "<name>"} names.
Result<std::string> PinBodyVariant(const std::string& body) {
  if (body.empty()) return Status::InvalidArgument("the request body must be a JSON object {\"variant\": \"<name>\"}");
  rj::Document doc;
  IL_RETURN_IF_ERROR(ParseControlBody(body, doc));
  const rj::Value& object = doc;
  auto it = object.FindMember("variant");
  if (it == object.MemberEnd()) {
    return Status::InvalidArgument("the request body needs \"variant\": the name of the variant to pin (\"int8\", ...)");
  }
  if (!it->value.IsString()) return Status::InvalidArgument("\"variant\" must be a string");
  std::string variant(it->value.GetString(), it->value.GetStringLength());
  if (variant.empty()) {
    return Status::InvalidArgument("\"variant\" must not be empty (POST .../adaptive/free lets the controller choose again)");
  }
  return variant;
}

// POST .../adaptive/pin {"variant": "int8"} or .../adaptive/free (body empty or a JSON object);
// answers the state after the change.
void AdaptivePinFree(RouteCall& c) {
  std::string variant;
  if (c.action == "pin") {
    auto parsed = PinBodyVariant(c.request.body);
    if (!parsed.ok()) return c.respond(Error(parsed.status()));
    variant = std::move(parsed).value();
  } else if (!c.request.body.empty()) {
    rj::Document doc;
    Status st = ParseControlBody(c.request.body, doc);
    if (!st.ok()) return c.respond(Error(st));
  }
  Status st = c.service.PinVariant(c.model, c.version, variant);
  if (!st.ok()) return c.respond(Error(st));
  AdaptiveState(c);
}

// /v2/models/{m}[/versions/{v}]/adaptive/{pin|free}
bool MatchAdaptivePinFree(const std::vector<std::string>& seg, RouteCall& c) {
  if (seg.size() < 2 || seg[seg.size() - 2] != "adaptive" || (seg.back() != "pin" && seg.back() != "free")) {
    return false;
  }
  std::vector<std::string> head(seg.begin(), seg.end() - 1);
  if (!ParseModelPath(head, c.model, c.version, c.action) || c.action != "adaptive") return false;
  c.action = seg.back();
  return true;
}

constexpr char kNoAction[] = "";
constexpr char kReady[] = "ready";
constexpr char kConfig[] = "config";
constexpr char kStats[] = "stats";
constexpr char kInfer[] = "infer";
constexpr char kAdaptive[] = "adaptive";

// In order: the first route whose path matches answers (so /v2/models/stats is the statistics
// of every model, not the metadata of a model named "stats").
const Route kRoutes[] = {
    {"GET", [](const auto& seg, RouteCall&) { return Is(seg, {"metrics"}); }, Metrics},
    {"GET", [](const auto& seg, RouteCall&) { return Is(seg, {"v2"}); }, ServerMetadata},
    {"GET",
     [](const auto& seg, RouteCall& c) {
       if (seg.size() != 3 || seg[0] != "v2" || seg[1] != "health" || (seg[2] != "live" && seg[2] != "ready")) return false;
       c.action = seg[2];
       return true;
     },
     Health},
    {"POST", [](const auto& seg, RouteCall&) { return Is(seg, {"v2", "repository", "index"}); }, RepositoryIndex},
    {"POST",
     [](const auto& seg, RouteCall& c) {
       if (seg.size() != 5 || seg[0] != "v2" || seg[1] != "repository" || seg[2] != "models" || seg[3].empty() ||
           (seg[4] != "load" && seg[4] != "unload"))
         return false;
       c.model = seg[3];
       c.action = seg[4];
       return true;
     },
     RepositoryLoadUnload},
    {"GET", [](const auto& seg, RouteCall&) { return Is(seg, {"v2", "models", "stats"}); }, Statistics},
    {"GET", MatchModelAction<kNoAction>, ModelMetadata},
    {"GET", MatchModelAction<kReady>, ModelReady},
    {"GET", MatchModelAction<kConfig>, ModelConfig},
    {"GET", MatchModelAction<kStats>, Statistics},
    {"POST", MatchModelAction<kInfer>, Infer},
    {"GET", MatchModelAction<kAdaptive>, AdaptiveState},
    {"POST", MatchAdaptivePinFree, AdaptivePinFree},
};

}  // namespace

RestHandler::RestHandler(serve::InferenceService& service, RestHandlerOptions options)
    : service_(service), options_(std::move(options)) {}

HttpHandler RestHandler::AsHttpHandler() {
  return [this](HttpRequest request, HttpResponder respond) { Handle(std::move(request), std::move(respond)); };
}

void RestHandler::Handle(HttpRequest request, HttpResponder respond) {
  auto segments = PathSegments(request.target);
  if (!segments.ok()) return respond(Error(segments.status()));
  RouteCall call{service_, options_, request, respond, {}, {}, {}};
  for (const Route& route : kRoutes) {
    if (!route.match(*segments, call)) continue;
    const std::string& method = request.method;
    const bool allowed = method == route.method || (method == "HEAD" && std::string_view(route.method) == "GET");
    if (!allowed) return respond(MethodNotAllowed(route.method, method));
    return route.handle(call);
  }
  respond(Error(404, "unknown path '" + request.target.substr(0, 200) + "'"));
}

}  // namespace inferloop::frontends
