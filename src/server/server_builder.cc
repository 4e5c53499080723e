#include "server/server_builder.h"

#include <algorithm>
#include <utility>

#include "backends/classification/classification_backend.h"
#include "base/process_memory.h"
#include "base/thread_pool.h"
#include "backends/detection/nms_backend.h"
#include "backends/dicom/dicom_series_backend.h"
#include "backends/ensemble/ensemble_backend.h"
#include "backends/image/image_preprocess_backend.h"
#include "backends/lesion_report/lesion_report_backend.h"
#include "backends/onnx/onnx_backend.h"
#include "serve/cpu_share_scheduler.h"
#include "backends/report/report_backend.h"
#include "backends/saliency/occlusion_saliency_backend.h"
#include "backends/sliding_window/sliding_window_backend.h"
#include "frontends/rest_router.h"

namespace inferloop::server {

namespace {

// The metrics port: GET /metrics (the inference server's and the LLM service's), 404 otherwise.
frontends::HttpHandler MetricsPortHandler(serve::InferenceServer* s, serve::MetricsRegistry* lm) {
  return [s, lm](frontends::HttpRequest req, frontends::HttpResponder respond) {
    frontends::HttpResponse resp;
    const std::string path = req.target.substr(0, req.target.find('?'));
    if (path == "/metrics" && (req.method == "GET" || req.method == "HEAD")) {
      resp.headers.push_back({"Content-Type", "text/plain; version=0.0.4; charset=utf-8"});
      resp.body = s->MetricsText() + lm->Exposition();
    } else {
      resp.status = 404;
      resp.headers.push_back({"Content-Type", "application/json"});
      resp.body = "{\"error\":\"not found: the metrics port serves GET /metrics\"}";
    }
    respond(std::move(resp));
  };
}

}  // namespace

Server::Server(const ServerOptions& options, serve::EventLog* log)
    : options_(options), log_(log), backend_metrics_(serve::MetricsRegistry::Options{.process_metrics = false}) {}

Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options, serve::EventLog* log) {
  std::unique_ptr<Server> s(new Server(options, log));
  // The kinds of model served, asked in this order (serve/model_backend.h); the onnx backend,
  // which takes any config naming no other platform or backend, comes last.
  auto registry = std::make_shared<serve::BackendRegistry>();
  backends::GgufBackendOptions go = options.llm;
  go.log = log;
  registry->Add(backends::MakeEnsembleBackend(&s->backend_metrics_));
  registry->Add(backends::MakeImagePreprocessBackend());
  registry->Add(backends::MakeClassificationBackend());
  registry->Add(backends::MakeOcclusionSaliencyBackend());
  registry->Add(backends::MakeReportBackend());
  registry->Add(backends::MakeNmsBackend());
  registry->Add(backends::MakeDicomSeriesBackend());
  registry->Add(backends::MakeSlidingWindowBackend());
  registry->Add(backends::MakeLesionReportBackend());
  registry->Add(backends::MakeGgufBackend(go, &s->backend_metrics_));
  s->adaptive_ = std::make_unique<control::AdaptiveLoop>(
      control::AdaptiveLoop::Options{.log = log, .metrics = &s->backend_metrics_});
  registry->Add(backends::MakeOnnxBackend(s->adaptive_.get()));
  auto closes = s->backend_metrics_.AddCounter(
      "inferloop_http_connections_closed_total",
      "HTTP connections the server closed because of its header limits, by reason: header_timeout (no complete "
      "request header within --http-header-timeout-secs), header_waiting_limit (the longest waiting of more than "
      "--http-max-header-waiting connections waiting for a request header).",
      {"reason"});
  if (!closes.ok()) return closes.status();
  s->http_limit_closes_[0] = closes.value()->WithLabels({"header_timeout"}).value();
  s->http_limit_closes_[1] = closes.value()->WithLabels({"header_waiting_limit"}).value();
  if (options.tls) {
    auto failures = s->backend_metrics_.AddCounter(
        "inferloop_tls_handshake_failures_total",
        "TLS handshakes that failed (--tls-cert), by port: http, metrics (a client that does not speak TLS, does not "
        "trust the certificate, presents no or a wrong client certificate under --tls-client-ca, or stalls past "
        "--http-header-timeout-secs).",
        {"endpoint"});
    if (!failures.ok()) return failures.status();
    s->tls_handshake_failures_[0] = failures.value()->WithLabels({"http"}).value();
    s->tls_handshake_failures_[1] = failures.value()->WithLabels({"metrics"}).value();
  }
  if (options.api_keys) {
    auto refused = s->backend_metrics_.AddCounter(
        "inferloop_auth_refused_total",
        "Requests refused by the API keys (--api-keys), by reason: missing (no 'Authorization: Bearer' key), invalid "
        "(an unknown key), forbidden (a key without the permission), rate_limited (a key over its rate=N/s).",
        {"reason"});
    if (!refused.ok()) return refused.status();
    const frontends::AuthResult reasons[] = {frontends::AuthResult::kMissing, frontends::AuthResult::kInvalid,
                                             frontends::AuthResult::kForbidden, frontends::AuthResult::kRateLimited};
    for (int i = 0; i < 4; ++i) {
      s->auth_refused_[i] = refused.value()->WithLabels({std::string(frontends::AuthResultName(reasons[i]))}).value();
    }
    Server* raw = s.get();
    options.api_keys->set_on_refused([raw](frontends::AuthResult r) {
      raw->auth_refused_[static_cast<int>(r) - static_cast<int>(frontends::AuthResult::kMissing)].Increment();
    });
  }
  serve::InferenceServerOptions io = options.inference;
  io.manager.backends = registry;
  io.fair_admission = options.fair_share;
  if (options.fair_share) {
    serve::CpuShareScheduler::Options cso;
    // One slot per intra-op thread (0 there: the CPUs this process may use).
    cso.slots = options.fair_share_slots > 0 ? options.fair_share_slots : options.inference.manager.session.intra_op_threads;
    io.manager.cpu_share = std::make_shared<serve::CpuShareScheduler>(std::move(cso));
    s->fair_share_slots_ = io.manager.cpu_share->slots();
  }
  auto inference = serve::InferenceServer::Create(std::move(io), log);
  if (!inference.ok()) return inference.status();
  s->inference_ = std::move(inference).value();
  serve::InferenceServer* is = s->inference_.get();
  s->text_ = std::make_unique<serve::TextGenerationRouter>(
      [is](const std::string& model) { return is->Find(model, 0); }, [is] { return is->Serving(); },
      [is](const std::string& model, std::function<void(Result<std::shared_ptr<serve::ModelVersion>>)> done) {
        return is->models().LoadOnDemand(model, "", std::move(done));
      });
  s->openai_ = std::make_unique<frontends::OpenAiHandler>(*s->text_);
  frontends::RestHandlerOptions rest_options;
  serve::MetricsRegistry* backend_metrics = &s->backend_metrics_;
  rest_options.extra_metrics = [backend_metrics] { return backend_metrics->Exposition(); };
  s->rest_ = std::make_unique<frontends::RestHandler>(*s->inference_, rest_options);
  return s;
}

Status Server::StartHttpServer(const char* endpoint, int port, int io_threads, size_t max_body_bytes,
                               frontends::HttpHandler handler, std::unique_ptr<frontends::HttpServer>& out) {
  if (port < 0) return Status::Ok();
  frontends::HttpServerOptions ho;
  ho.host = options_.host;
  ho.port = static_cast<uint16_t>(port);
  ho.io_threads = io_threads;
  ho.max_body_bytes = max_body_bytes;
  ho.header_timeout = options_.http_header_timeout;
  ho.max_header_waiting = options_.http_max_header_waiting;
  ho.on_limit_close = [this](frontends::HttpLimitClose reason) {
    http_limit_closes_[reason == frontends::HttpLimitClose::kHeaderTimeout ? 0 : 1].Increment();
  };
  if (options_.tls) {
    ho.tls = options_.tls;
    serve::Counter* failures = &tls_handshake_failures_[std::string_view(endpoint) == "metrics" ? 1 : 0];
    ho.on_tls_handshake_failure = [failures] { failures->Increment(); };
  }
  auto h = frontends::HttpServer::Start(ho, std::move(handler));
  if (!h.ok()) {
    log_->Error("server_failed", {{"endpoint", endpoint}, {"reason", h.status().message()}});
    return h.status();
  }
  out = std::move(h).value();
  return Status::Ok();
}

Status Server::StartGrpc() {
  if (options_.grpc_port < 0) return Status::Ok();
  frontends::GrpcServerOptions go;
  go.host = options_.host;
  go.port = options_.grpc_port;
  go.api_keys = options_.api_keys.get();
  go.tls = options_.tls;
  go.max_receive_message_bytes = static_cast<int>(std::min<size_t>(options_.max_request_bytes, size_t{2000} << 20));
  grpc_ = std::make_unique<frontends::GrpcServer>(*inference_, go);
  if (Status st = grpc_->Start(); !st.ok()) {
    log_->Error("server_failed", {{"endpoint", "grpc"}, {"reason", st.message()}});
    return st;
  }
  return Status::Ok();
}

Status Server::Start() {
  // Frontends first: liveness answers while models load (ready stays false until they are).
  Status st = StartHttpServer("http", options_.http_port, options_.http_threads, options_.max_request_bytes,
                              frontends::WithApiKeys(options_.api_keys.get(), frontends::RestRouter(*rest_, openai_.get())),
                              http_);
  if (!st.ok()) return st;
  st = StartHttpServer("metrics", options_.metrics_port, 1, 4096, frontends::WithApiKeys(options_.api_keys.get(), MetricsPortHandler(inference_.get(), &backend_metrics_)),
                       metrics_http_);
  if (!st.ok()) return st;
  st = StartGrpc();
  if (!st.ok()) return st;
  const int threads = options_.inference.manager.session.intra_op_threads;
  log_->Info("server_listening", {{"host", options_.host},
                                  {"http_port", http_ ? std::to_string(http_->port()) : "off"},
                                  {"grpc_port", grpc_ ? std::to_string(grpc_->port()) : "off"},
                                  {"metrics_port", metrics_http_ ? std::to_string(metrics_http_->port()) : "off"},
                                  {"model_repository", options_.inference.manager.repository},
                                  {"model_control_mode", options_.control_mode_name},
                                  {"api_keys", options_.api_keys ? std::to_string(options_.api_keys->size()) : "off"},
                                  {"tls", !options_.tls ? "off" : options_.tls->mutual() ? "mutual" : "on"},
                                  {"fair_share_slots", fair_share_slots_ > 0 ? std::to_string(fair_share_slots_) : "off"},
                                  // Intra-op threads per model (--threads, or 0 resolved from the affinity mask
                                  // and the cgroup CPU quota): what a Kubernetes CPU limit became.
                                  {"threads", std::to_string(threads > 0 ? threads : DefaultThreadCount())},
                                  {"allocator", HeapAllocatorName()}});

  Status loaded = inference_->LoadStartupModels();
  if (options_.idle.enabled()) {
    auto idle = control::IdlePolicy::Start(inference_->models(), options_.idle, log_);
    if (!idle.ok()) {
      log_->Error("server_failed", {{"endpoint", "idle_policy"}, {"reason", idle.status().message()}});
      return idle.status();
    }
    idle_ = std::move(idle).value();
    log_->Info("idle_policy_started",
               {{"release_after_ms", std::to_string(options_.idle.release_after.count())},
                {"memory_budget_bytes", std::to_string(options_.idle.memory_budget_bytes)}});
  }
  if (loaded.ok()) {
    log_->Info("server_ready", {});
  } else {
    log_->Error("server_not_ready", {{"reason", loaded.message()}});
  }
  return Status::Ok();
}

void Server::ReloadTls() {
  if (!options_.tls) {
    log_->Info("tls_reload_skipped", {{"reason", "TLS is off (no --tls-cert)"}});
    return;
  }
  Status st = options_.tls->Reload();
  if (!st.ok()) {
    log_->Error("tls_reload_failed", {{"reason", st.message()}, {"kept", options_.tls->Describe()}});
    return;
  }
  log_->Info("tls_reloaded", {{"certificate", options_.tls->Describe()}});
}

void Server::ReloadApiKeys() {
  if (!options_.api_keys) return;
  Status st = options_.api_keys->Reload();
  if (!st.ok()) {
    log_->Error("api_keys_reload_failed", {{"reason", st.message()}, {"kept", std::to_string(options_.api_keys->size())}});
    return;
  }
  log_->Info("api_keys_reloaded", {{"keys", std::to_string(options_.api_keys->size())}});
}

bool Server::Shutdown(std::chrono::steady_clock::time_point deadline) {
  idle_.reset();  // no unload starts while requests drain
  if (http_) http_->StopAccepting();
  inference_->BeginShutdown();
  const bool idle = inference_->WaitIdle(deadline) && text_->WaitIdle(deadline);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  const auto grace = std::max(left, std::chrono::milliseconds(100));
  if (http_) http_->Shutdown(grace);
  if (grpc_) grpc_->Shutdown(grace);
  if (metrics_http_) metrics_http_->Shutdown(std::chrono::milliseconds(100));
  inference_.reset();
  return idle;
}

}  // namespace inferloop::server
