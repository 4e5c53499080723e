// Server: the composition root of `inferloop serve`: the backends (the kinds of model served:
// src/backends/<kind>), the inference server over one model manager for every kind, the
// text-generation router for the models that generate text, and the frontends (KServe v2 REST
// and gRPC, the OpenAI-compatible API on the REST port, a Prometheus metrics port), wired
// together. The serve, backends and frontends layers meet here (il_server), not in each other.
//
// Lifecycle: Create builds the backends and the inference server (nothing listens yet); Start
// opens the frontends first (liveness answers while models load), logs "server_listening",
// loads the startup models (every kind; in poll mode the repository is followed), starts the
// idle policy (when options.idle asks for one), and logs "server_ready" or "server_not_ready";
// Shutdown stops the idle policy, stops accepting,
// answers what is in flight until the deadline, and closes the frontends. Call Create only after
// blocking the signals the caller waits for (its threads inherit the mask).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "control/idle_policy.h"
#include "frontends/api_keys.h"
#include "frontends/grpc_server.h"
#include "frontends/http_server.h"
#include "frontends/openai_handler.h"
#include "frontends/rest_handler.h"
#include "inferloop/status.h"
#include "serve/event_log.h"
#include "serve/inference_server.h"
#include "backends/gguf/gguf_backend.h"
#include "control/adaptive_loop.h"
#include "serve/metrics_registry.h"
#include "serve/text_generation_router.h"

namespace inferloop::server {

struct ServerOptions {
  serve::InferenceServerOptions inference;  // repository, model control mode, limits, sessions
  backends::GgufBackendOptions llm;         // GGUF models; its `log` is set to the server's
  std::string host = "127.0.0.1";
  int http_port = 8000;  // 0: any free port; -1: off
  int grpc_port = 8001;
  int metrics_port = 8002;
  int http_threads = 2;
  size_t max_request_bytes = size_t{256} << 20;
  // HTTP ports (REST and metrics): a request header must arrive within this time, and at most
  // this many connections wait for one (frontends/http_server.h).
  std::chrono::milliseconds http_header_timeout{10'000};
  size_t http_max_header_waiting = 1024;
  std::string control_mode_name = "none";  // as the user gave it, for the log
  // Fair sharing of the CPUs between models (serve/cpu_share_scheduler.h): batches of every ONNX
  // model version take execution slots in proportion to their config's adaptive { cpu_share }.
  bool fair_share = true;
  int fair_share_slots = 0;  // batches running at once; 0: the server's intra-op thread count
  control::IdlePolicyOptions idle;  // idle models: memory released, LRU unloaded over a budget
  // When set, every endpoint but health needs one of these API keys (frontends/api_keys.h);
  // refusals are counted in inferloop_auth_refused_total{reason}.
  std::shared_ptr<frontends::ApiKeys> api_keys;
  // When set, the HTTP, metrics and gRPC ports speak TLS only (frontends/tls.h); failed handshakes
  // (HTTP and metrics ports) are counted in inferloop_tls_handshake_failures_total{endpoint}.
  std::shared_ptr<frontends::TlsCredentials> tls;
};

class Server {
 public:
  // Errors: those of InferenceServer::Create. `log` must outlive the server.
  static Result<std::unique_ptr<Server>> Create(const ServerOptions& options, serve::EventLog* log);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Errors: a frontend that cannot listen (also logged as "server_failed"). A model that does
  // not load is no error here (the server runs, not ready).
  Status Start();
  // Returns true when everything in flight was answered by `deadline`.
  bool Shutdown(std::chrono::steady_clock::time_point deadline);
  int64_t InflightRequests() const { return inference_ ? inference_->InflightRequests() : 0; }
  // SIGHUP: re-reads the TLS files for the HTTP and metrics ports' new connections (open ones keep
  // theirs), logged as "tls_reloaded" or, keeping the old certificate, "tls_reload_failed". gRPC
  // follows the files by itself. Without TLS: logs "tls_reload_skipped".
  void ReloadTls();
  // SIGHUP too: re-reads the --api-keys file (logged as api_keys_reloaded with the count, or
  // api_keys_reload_failed with the reason, the old keys kept); nothing without --api-keys.
  void ReloadApiKeys();

 private:
  Server(const ServerOptions& options, serve::EventLog* log);
  // An HTTP server on `port` (-1: none) into `out`; logged as "server_failed" when it cannot listen.
  Status StartHttpServer(const char* endpoint, int port, int io_threads, size_t max_body_bytes,
                         frontends::HttpHandler handler, std::unique_ptr<frontends::HttpServer>& out);
  Status StartGrpc();

  const ServerOptions options_;
  serve::EventLog* log_;
  int fair_share_slots_ = 0;  // 0: fair share off
  serve::MetricsRegistry backend_metrics_;
  serve::Counter http_limit_closes_[2];  // header_timeout, header_waiting_limit
  serve::Counter auth_refused_[4];       // missing, invalid, forbidden, rate_limited
  serve::Counter tls_handshake_failures_[2];  // http, metrics
  std::unique_ptr<control::AdaptiveLoop> adaptive_;  // steps the versions it attached (weakly held)
  std::unique_ptr<serve::InferenceServer> inference_;
  std::unique_ptr<serve::TextGenerationRouter> text_;
  std::unique_ptr<frontends::OpenAiHandler> openai_;
  std::unique_ptr<frontends::RestHandler> rest_;
  std::unique_ptr<frontends::HttpServer> http_;
  std::unique_ptr<frontends::HttpServer> metrics_http_;
  std::unique_ptr<frontends::GrpcServer> grpc_;
  std::unique_ptr<control::IdlePolicy> idle_;  // started once the startup models loaded
};

}  // namespace inferloop::server
