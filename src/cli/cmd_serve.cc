// inferloop serve --model-repository DIR [--http-port 8000] [--grpc-port 8001] [--metrics-port 8002]
//                 [--host 127.0.0.1] [--model-control-mode none|poll|explicit] [--load-model NAME ...]
// Serves a model repository over KServe v2 REST and gRPC (docs/SERVING.md). Ports: 0 picks a free
// one (the "server_listening" log line says which), -1 turns that endpoint off.
// SIGTERM / SIGINT: stop accepting, answer what is in flight, exit 0. SIGHUP: re-read the TLS
// certificate and key (--tls-cert/--tls-key/--tls-client-ca) for new connections, and the
// --api-keys file.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/precision_option.h"
#include "control/idle_policy.h"
#include "frontends/api_keys.h"
#include "frontends/tls.h"
#include "serve/event_log.h"
#include "serve/model_repository_layout.h"
#include "server/server_builder.h"

namespace inferloop::cli {
namespace {

struct ServeArgs {
  std::string repository;
  int http_port = 8000;
  int grpc_port = 8001;
  int metrics_port = 8002;
  std::string host = "127.0.0.1";
  std::string control_mode = "none";
  std::vector<std::string> load_models;
  double poll_seconds = 2.0;
  int64_t max_inflight = 1024;
  int64_t max_inflight_mb = 1024;
  int64_t model_max_inflight = 0;
  int64_t model_max_inflight_mb = 0;
  int64_t max_request_mb = 256;
  int threads = 0;
  std::string precision;
  int http_threads = 2;
  double http_header_timeout_seconds = 10;
  int64_t http_max_header_waiting = 1024;
  std::string fair_share = "on";
  int fair_share_slots = 0;
  double shutdown_seconds = 30;
  double liveness_stall_seconds = 60;
  int64_t llm_kv_cache_mb = 256;
  std::string llm_kv_type = "f16";
  int llm_max_batch_tokens = 512;
  int llm_speculative_ngram = 0;
  int llm_max_sequences = 64;
  int64_t llm_max_token_backlog = 16384;
  int64_t llm_prefix_cache_mb = -1;
  std::string llm_prefix_cache_dir;
  int64_t llm_prefix_cache_disk_mb = 4096;
  double idle_release_after_seconds = 30;
  std::string api_keys;  // --api-keys FILE ("": no keys needed)
  std::string tls_cert, tls_key, tls_client_ca;  // --tls-cert/--tls-key/--tls-client-ca FILE ("": none)
  std::string memory_budget = "0";
  std::string response_cache_bytes = "256MiB";
  std::string response_cache_dir;
  std::string response_cache_disk_bytes = "1GiB";
};

// A size flag's value (bytes, or e.g. 512MiB); a message naming the flag on stderr and nullopt
// when it is bad.
std::optional<int64_t> ParseSizeFlag(const char* flag, const std::string& text) {
  auto size = control::ParseMemorySize(text);
  if (!size.ok()) {
    std::cerr << "error: " << flag << ": " << size.status().message() << "\n";
    return std::nullopt;
  }
  return size.value();
}

// The response cache's options from the command line (nullopt inside: no cache); a message on
// stderr and nullopt outside when one is bad.
std::optional<std::optional<serve::ResponseCacheOptions>> ToResponseCacheOptions(const ServeArgs& a) {
  const std::optional<int64_t> memory = ParseSizeFlag("--response-cache-bytes", a.response_cache_bytes);
  const std::optional<int64_t> disk = ParseSizeFlag("--response-cache-disk-bytes", a.response_cache_disk_bytes);
  if (!memory || !disk) return std::nullopt;
  if (*memory == 0) {
    if (!a.response_cache_dir.empty()) {
      std::cerr << "error: --response-cache-dir needs a response cache (--response-cache-bytes is 0: caching off)\n";
      return std::nullopt;
    }
    return std::optional<serve::ResponseCacheOptions>();
  }
  serve::ResponseCacheOptions o;
  o.memory_bytes = *memory;
  o.disk_dir = a.response_cache_dir;
  o.disk_bytes = *disk;
  return std::optional<serve::ResponseCacheOptions>(o);
}

// The server's options from the command line; a message on stderr and nullopt when one is bad.
std::optional<server::ServerOptions> ToServerOptions(const ServeArgs& a) {
  auto mode = serve::ParseModelControlMode(a.control_mode);
  if (!mode.ok()) {
    std::cerr << "error: " << mode.status().message() << "\n";
    return std::nullopt;
  }
  if (mode.value() != serve::ModelControlMode::kExplicit && !a.load_models.empty()) {
    std::cerr << "error: --load-model needs --model-control-mode explicit (in " << a.control_mode
              << " mode every model of the repository is loaded)\n";
    return std::nullopt;
  }
  auto kv_type = llm::ParseKvType(a.llm_kv_type);
  if (!kv_type.ok()) {
    std::cerr << "error: --llm-kv-type: " << kv_type.status().message() << "\n";
    return std::nullopt;
  }
  if (!a.llm_prefix_cache_dir.empty()) {
    if (a.llm_prefix_cache_mb == 0) {
      std::cerr << "error: --llm-prefix-cache-dir needs the prefix cache (--llm-prefix-cache-mb is 0)\n";
      return std::nullopt;
    }
    std::error_code ec;
    std::filesystem::create_directories(a.llm_prefix_cache_dir, ec);
    if (ec || ::access(a.llm_prefix_cache_dir.c_str(), W_OK) != 0) {
      std::cerr << "error: --llm-prefix-cache-dir: cannot use '" << a.llm_prefix_cache_dir
                << "': " << (ec ? ec.message() : std::string(std::strerror(errno))) << "\n";
      return std::nullopt;
    }
  }
  auto precision = ParsePrecision(a.precision);
  if (!precision.ok()) {
    std::cerr << "error: --precision: " << precision.status().message() << "\n";
    return std::nullopt;
  }
  const std::optional<int64_t> budget = ParseSizeFlag("--memory-budget", a.memory_budget);
  if (!budget) return std::nullopt;
  auto response_cache = ToResponseCacheOptions(a);
  if (!response_cache) return std::nullopt;
  server::ServerOptions o;
  o.inference.response_cache = *response_cache;
  o.idle.release_after = std::chrono::milliseconds(static_cast<int64_t>(a.idle_release_after_seconds * 1000));
  o.idle.memory_budget_bytes = *budget;
  serve::InferenceServerOptions& so = o.inference;
  so.manager.repository = a.repository;
  so.manager.mode = mode.value();
  so.manager.startup_models = a.load_models;
  so.manager.poll_interval = std::chrono::milliseconds(static_cast<int64_t>(a.poll_seconds * 1000));
  so.manager.session.intra_op_threads = a.threads;
  so.manager.session.precision = *precision;
  so.manager.per_model_limits.max_inflight_requests = a.model_max_inflight;
  so.manager.per_model_limits.max_inflight_bytes = a.model_max_inflight_mb << 20;
  so.global_limits.max_inflight_requests = a.max_inflight;
  so.global_limits.max_inflight_bytes = a.max_inflight_mb << 20;
  so.inline_slots = a.http_threads - 1;
  so.liveness_stall_limit = std::chrono::milliseconds(static_cast<int64_t>(a.liveness_stall_seconds * 1000));
  backends::GgufBackendOptions& lo = o.llm;
  lo.engine.kv_cache_bytes = static_cast<size_t>(a.llm_kv_cache_mb) << 20;
  lo.engine.kv_type = *kv_type;
  lo.engine.max_batch_tokens = a.llm_max_batch_tokens;
  lo.engine.max_running = a.llm_max_sequences;
  lo.engine.draft.max_draft = a.llm_speculative_ngram;
  lo.engine.threads = a.threads;
  lo.max_token_backlog = a.llm_max_token_backlog;
  lo.prefix_cache_bytes = a.llm_prefix_cache_mb < 0 ? -1 : a.llm_prefix_cache_mb << 20;
  lo.prefix_cache_dir = a.llm_prefix_cache_dir;
  lo.prefix_cache_disk_bytes = a.llm_prefix_cache_disk_mb << 20;
  o.host = a.host;
  o.http_port = a.http_port;
  o.grpc_port = a.grpc_port;
  o.metrics_port = a.metrics_port;
  o.http_threads = a.http_threads;
  o.http_header_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.http_header_timeout_seconds * 1000));
  o.http_max_header_waiting = static_cast<size_t>(a.http_max_header_waiting);
  o.max_request_bytes = static_cast<size_t>(a.max_request_mb) << 20;
  o.control_mode_name = a.control_mode;
  o.fair_share = a.fair_share == "on";
  o.fair_share_slots = a.fair_share_slots;
  if (!a.api_keys.empty()) {
    auto keys = frontends::ApiKeys::Load(a.api_keys);  // its errors never quote a key
    if (!keys.ok()) {
      std::cerr << "error: --api-keys: " << keys.status().message() << "\n";
      return std::nullopt;
    }
    o.api_keys = std::shared_ptr<frontends::ApiKeys>(std::move(keys).value());
  }
  if (a.tls_cert.empty() != a.tls_key.empty()) {
    std::cerr << "error: " << (a.tls_cert.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key")
              << " (TLS takes both a certificate and its private key)\n";
    return std::nullopt;
  }
  if (!a.tls_client_ca.empty() && a.tls_cert.empty()) {
    std::cerr << "error: --tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)\n";
    return std::nullopt;
  }
  if (!a.tls_cert.empty()) {
    frontends::TlsFiles files{.cert_file = a.tls_cert, .key_file = a.tls_key, .client_ca_file = a.tls_client_ca,
                              .cert_name = "--tls-cert", .key_name = "--tls-key", .client_ca_name = "--tls-client-ca"};
    auto tls = frontends::TlsCredentials::Load(std::move(files));
    if (!tls.ok()) {
      std::cerr << "error: " << tls.status().message() << "\n";
      return std::nullopt;
    }
    o.tls = std::move(tls).value();
  }
  return o;
}

int RunServe(const ServeArgs& a) {
  serve::EventLog log(stderr);
  std::optional<server::ServerOptions> options = ToServerOptions(a);
  if (!options) return 2;
  // Signals go to this thread's sigwait only: block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto server = server::Server::Create(*options, &log);
  if (!server.ok()) {
    std::cerr << "error: " << server.status().message() << "\n";
    return 1;
  }
  if (!(*server)->Start().ok()) return 1;  // logged as server_failed

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    (*server)->ReloadTls();  // logged: tls_reloaded, tls_reload_failed or tls_reload_skipped
    (*server)->ReloadApiKeys();  // with --api-keys: api_keys_reloaded or api_keys_reload_failed
  }
  log.Info("signal", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"},
                      {"inflight", std::to_string((*server)->InflightRequests())}});
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(a.shutdown_seconds * 1000));
  const bool idle = (*server)->Shutdown(deadline);
  log.Info("server_stopped", {{"clean", idle ? "true" : "false"}});
  return idle ? 0 : 1;
}

}  // namespace

Runner AddServeCommand(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve a model repository over KServe v2 REST and gRPC (docs/SERVING.md)");
  cmd->add_option("--model-repository", a->repository, "Folder with <model>/config.pbtxt and <model>/<version>/model.onnx")
      ->required();
  cmd->add_option("--http-port", a->http_port, "REST port (0: any free port, -1: off)")->capture_default_str();
  cmd->add_option("--grpc-port", a->grpc_port, "gRPC port (0: any free port, -1: off)")->capture_default_str();
  cmd->add_option("--metrics-port", a->metrics_port, "Prometheus /metrics port (0: any, -1: off)")->capture_default_str();
  cmd->add_option("--host", a->host, "Address to bind")->capture_default_str();
  cmd->add_option("--api-keys", a->api_keys,
                  "File of API keys, one per line: KEY PERMISSIONS[,...] [rate=N/s] (permissions: infer, control, "
                  "metrics); requests then need 'Authorization: Bearer KEY' (health checks excepted); re-read on SIGHUP");
  cmd->add_option("--tls-cert", a->tls_cert,
                  "PEM certificate (chain) for TLS on the HTTP, metrics and gRPC ports; needs --tls-key; "
                  "re-read on SIGHUP");
  cmd->add_option("--tls-key", a->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--tls-client-ca", a->tls_client_ca,
                  "PEM CA certificate(s): clients must present a certificate signed by one (mutual TLS)");
  cmd->add_option("--model-control-mode", a->control_mode, "none | poll | explicit")->capture_default_str();
  cmd->add_option("--load-model", a->load_models, "Model to load at start in explicit mode ('*': all); repeatable");
  cmd->add_option("--repository-poll-secs", a->poll_seconds, "Poll mode: seconds between repository scans")
      ->capture_default_str()->check(CLI::Range(0.05, 3600.0));
  cmd->add_option("--max-inflight", a->max_inflight, "Requests in flight server-wide before 429 (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-inflight-mb", a->max_inflight_mb, "Request MiB in flight server-wide before 429 (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--model-max-inflight", a->model_max_inflight, "Requests in flight per model version (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--model-max-inflight-mb", a->model_max_inflight_mb, "Request MiB in flight per model version (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-request-mb", a->max_request_mb, "Largest request body (413 / RESOURCE_EXHAUSTED above)")
      ->capture_default_str()->check(CLI::Range(1, 2000));
  cmd->add_option("--threads", a->threads, "Intra-op threads per model (0: the CPUs this process may use)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  AddPrecisionOption(cmd, &a->precision)
      ->description("Default precision of every model (a model's config.pbtxt parameter \"precision\" overrides it): " +
                    cmd->get_option("--precision")->get_description());
  cmd->add_option("--http-threads", a->http_threads, "HTTP io threads")->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--http-header-timeout-secs", a->http_header_timeout_seconds,
                  "HTTP and metrics ports: close a connection whose request header is not complete this long after "
                  "it connected (or after part of its next keep-alive header arrived); slowloris protection")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--http-max-header-waiting", a->http_max_header_waiting,
                  "HTTP and metrics ports: connections waiting for a request header at once; one more closes the "
                  "one that has waited longest (metric inferloop_http_connections_closed_total)")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--fair-share", a->fair_share,
                  "on: models share the CPUs and the server's in-flight limit by their config's adaptive { cpu_share } "
                  "(a flooded model cannot starve a quiet one); off: batches of every model run as soon as an "
                  "instance is free, and the in-flight limit is first come, first served")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--fair-share-slots", a->fair_share_slots,
                  "With --fair-share on: batches running at once over every model (0: --threads, or the CPUs)")
      ->capture_default_str()->check(CLI::Range(0, 4096));
  cmd->add_option("--shutdown-timeout-secs", a->shutdown_seconds, "On SIGTERM: how long in-flight requests may take")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--liveness-stall-secs", a->liveness_stall_seconds,
                  "Live turns false when a scheduler made no progress this long")
      ->capture_default_str()->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--llm-kv-cache-mb", a->llm_kv_cache_mb, "LLM models: KV cache memory per model (MiB)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--llm-kv-type", a->llm_kv_type,
                  "LLM models: element type of the KV cache: f16, or q8_0 (about 1.9x the tokens in the same "
                  "memory; needs a head dim that is a multiple of 32)")
      ->capture_default_str();
  cmd->add_option("--llm-max-batch-tokens", a->llm_max_batch_tokens, "LLM models: tokens computed per step")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--llm-max-sequences", a->llm_max_sequences, "LLM models: sequences running at once")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--llm-speculative-ngram", a->llm_speculative_ngram,
                  "LLM models: speculative decoding by prompt lookup, up to N drafted tokens per sequence and step "
                  "(the same output as without; 0: off)")
      ->capture_default_str()->check(CLI::Range(0, 64));
  cmd->add_option("--llm-prefix-cache-mb", a->llm_prefix_cache_mb,
                  "LLM models: KV memory the prefix cache may keep for finished sequences (-1: all of the KV cache, "
                  "0: no prefix cache)")
      ->capture_default_str()->check(CLI::Range(int64_t{-1}, int64_t{1} << 30));
  cmd->add_option("--llm-prefix-cache-dir", a->llm_prefix_cache_dir,
                  "LLM models: a folder for the prefix cache's disk tier (none: no disk tier): KV blocks evicted "
                  "from memory, and every cached block at a graceful stop, are kept there per model and read back "
                  "when that is cheaper than computing them; a restarted server finds them");
  cmd->add_option("--llm-prefix-cache-disk-mb", a->llm_prefix_cache_disk_mb,
                  "LLM models: MiB of KV block files each model may keep in --llm-prefix-cache-dir (least recently "
                  "used deleted first)")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--llm-max-token-backlog", a->llm_max_token_backlog,
                  "LLM models: prompt tokens waiting before new requests get 429")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--idle-release-after", a->idle_release_after_seconds,
                  "Seconds without requests after which a model's arenas, scratch and cached plans are freed "
                  "(0: never)")
      ->capture_default_str()->check(CLI::Range(0.0, 86400.0 * 365));
  cmd->add_option("--memory-budget", a->memory_budget,
                  "Memory the serving models may hold together (bytes, or e.g. 512MiB, 4GiB; 0: no budget): over "
                  "it the least recently used models are unloaded and load again on their next request")
      ->capture_default_str();
  cmd->add_option("--response-cache-bytes", a->response_cache_bytes,
                  "Memory of the response cache, for models whose config.pbtxt says response_cache { enable: true } "
                  "(bytes, or e.g. 64MiB, 1GiB; 0: no response cache, such models are served uncached)")
      ->capture_default_str();
  cmd->add_option("--response-cache-dir", a->response_cache_dir,
                  "Folder of the response cache's disk tier (kept across restarts; default: no disk tier)");
  cmd->add_option("--response-cache-disk-bytes", a->response_cache_disk_bytes,
                  "Byte budget of the response cache's disk tier (e.g. 10GiB); least recently used entries go first")
      ->capture_default_str();
  return [a] { return RunServe(*a); };
}

}  // namespace inferloop::cli
