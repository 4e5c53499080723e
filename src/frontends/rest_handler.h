// RestHandler: the KServe v2 REST protocol (with Triton's repository, statistics and binary
// tensor data extensions) on top of serve::InferenceService, as an HttpServer handler.
//
// Routes (path segments URL-decoded; the query string is ignored):
//   GET  /v2/health/live | /v2/health/ready            200, or 503 (empty body)
//   GET  /v2                                           server metadata
//   GET  /v2/models/{m}[/versions/{v}]                 model metadata (+ "memory_bytes")
//   GET  /v2/models/{m}[/versions/{v}]/ready           200, or 503 while not ready (empty body)
//   GET  /v2/models/{m}[/versions/{v}]/config          the model's configuration JSON
//   POST /v2/models/{m}[/versions/{v}]/infer           inference (JSON, or JSON + binary data)
//   GET  /v2/models/stats, /v2/models/{m}[/versions/{v}]/stats   statistics extension
//   GET  /v2/models/{m}[/versions/{v}]/adaptive        adaptive state (adaptive_state_json.h)
//   POST /v2/models/{m}[/versions/{v}]/adaptive/pin    body {"variant": "<name>"}: pins it; the state
//   POST /v2/models/{m}[/versions/{v}]/adaptive/free   body empty or {}: frees it; the state
//   POST /v2/repository/index                          body optional: {"ready": bool}
//   POST /v2/repository/models/{m}/load | /unload      200 (empty body) when done
//   GET  /metrics                                      Prometheus text (version 0.0.4)
// (The REST port's /v1/... goes to the OpenAI-compatible API instead: rest_router.h.)
// Errors: {"error": "..."} with the status of HttpStatusFromCode (http_status.h), Retry-After on
// 429/503; 404 for an unknown path, 405 (with Allow) for a known path and the wrong method,
// 400 for broken JSON or a bad Inference-Header-Content-Length.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <cstddef>
#include <memory>

#include "frontends/http_server.h"
#include "frontends/v2_json_codec.h"
#include "serve/inference_service.h"

namespace inferloop::frontends {

// The URL-decoded segments of a request target's path ("/v2/models/m?x" -> {"v2", "models", "m"});
// InvalidArgument for a target that is no absolute path or has bad percent-encoding.
Result<std::vector<std::string>> PathSegments(std::string_view target);

struct RestHandlerOptions {
  JsonDecodeOptions decode;
  // Appended to GET /metrics (e.g. the LLM engine's metrics).
  std::function<std::string()> extra_metrics;
};

class RestHandler {
 public:
  // `service` must outlive the handler and every request still in flight.
  explicit RestHandler(serve::InferenceService& service, RestHandlerOptions options = {});

  // Answers one request (through `respond`, possibly later from a service thread). Never blocks
  // on inference; decoding and encoding JSON happen on the calling / completing thread.
  void Handle(HttpRequest request, HttpResponder respond);

  // An HttpHandler calling Handle; the RestHandler must outlive the server using it.
  HttpHandler AsHttpHandler();

 private:
  serve::InferenceService& service_;
  RestHandlerOptions options_;
};

}  // namespace inferloop::frontends
