// InferenceServer: the InferenceService over a model repository (ModelManager), with global
// admission control, metrics, liveness and readiness, and graceful shutdown. The frontends
// (src/frontends) call it; `inferloop serve` (src/cli/cmd_serve.cc) wires them together.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "serve/admission_control.h"
#include "serve/event_log.h"
#include "serve/inference_service.h"
#include "serve/model_manager.h"
#include "serve/response_cache.h"
#include "serve/serve_metrics.h"

namespace inferloop::serve {

struct InferenceServerOptions {
  ModelManagerOptions manager;       // its metrics_for / on_version_removed / log / resolver are set by the server
  AdmissionLimits global_limits;     // over every model; 0 = unlimited
  // Live turns false when a model's scheduler has made no progress for this long (a batch
  // running, or requests waiting with every instance idle).
  std::chrono::milliseconds liveness_stall_limit{60000};
  // Caller threads that may run a fast model's request inline at once (see
  // DynamicBatcher::TryRunInline); `inferloop serve` uses HTTP io threads - 1, so one io thread
  // is always free to read requests. 0: never.
  int inline_slots = 0;
  // Weighted fair admission (FairAdmission, admission_control.h): while the server holds half its
  // in-flight limit, a model is held to its cpu_share of it. Off: first come, first served.
  bool fair_admission = true;
  // The server's one response cache (for models whose config.pbtxt enables it; docs/SERVING.md),
  // created with the server; nullopt: none (such models are served uncached).
  std::optional<ResponseCacheOptions> response_cache;
};

class InferenceServer final : public InferenceService, public ModelResolver {
 public:
  // `log` may be null and must outlive the server. Errors: the response cache's (bad options, a
  // cache folder that cannot be used), the model manager's.
  static Result<std::unique_ptr<InferenceServer>> Create(InferenceServerOptions options, EventLog* log);
  ~InferenceServer() override;

  // Loads the startup models (blocking); the first load error, with the server still usable.
  Status LoadStartupModels();

  // Shutdown, step 1: not ready, new requests refused with Unavailable; queued and running ones
  // still finish. Step 2: WaitIdle until nothing is in flight (or the deadline passes: false).
  void BeginShutdown();
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  int64_t InflightRequests() const { return gate_->inflight_requests(); }

  bool Live() override;
  bool Ready() override;
  ServerMetadata GetServerMetadata() override;
  Result<bool> ModelReady(const std::string& model, const std::string& version) override;
  Result<ModelMetadata> GetModelMetadata(const std::string& model, const std::string& version) override;
  Result<std::string> GetModelConfigJson(const std::string& model, const std::string& version) override;
  void Infer(InferRequest request, RequestContext context, InferCallback done) override;
  std::vector<ModelIndexEntry> RepositoryIndex(bool ready_only) override;
  void LoadModel(const std::string& model, StatusCallback done) override;
  void UnloadModel(const std::string& model, StatusCallback done) override;
  Result<std::vector<ModelStatistics>> GetStatistics(const std::string& model, const std::string& version) override;
  std::string MetricsText() override;
  Result<AdaptiveState> GetAdaptiveState(const std::string& model, const std::string& version) override;
  Status PinVariant(const std::string& model, const std::string& version, const std::string& variant) override;

  // ModelResolver (ensembles find their steps' models through this).
  Result<std::shared_ptr<ModelVersion>> Find(const std::string& model, int64_t version) override;
  // Every version serving now (for the text-generation router and tests).
  std::vector<std::shared_ptr<ModelVersion>> Serving(const std::string& model = "") { return manager_->Serving(model); }
  // The model manager (the idle policy reads its usage and unloads idle models through it).
  ModelManager& models() { return *manager_; }

 private:
  struct PendingInfer;
  InferenceServer(InferenceServerOptions options, EventLog* log);
  // The version's AdaptiveControl (kept alive by `holder`); FailedPrecondition when it has none.
  Result<AdaptiveControl*> FindAdaptive(const std::string& model, const std::string& version,
                                        std::shared_ptr<ModelVersion>& holder);
  // Hands `p` to the version found (a version draining: looks again, up to 5 attempts); a model
  // unloaded while idle is loaded on demand first; an error answers it.
  void Dispatch(PendingInfer p, Result<std::shared_ptr<ModelVersion>> found, int attempt);

  InferenceServerOptions options_;
  EventLog* log_;
  std::shared_ptr<AdmissionGate> gate_;
  FairAdmission fair_;  // the server gate, shared between models by their cpu_share
  ServeMetrics metrics_;
  std::shared_ptr<ResponseCache> response_cache_;  // null: none
  std::unique_ptr<ModelManager> manager_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace inferloop::serve
