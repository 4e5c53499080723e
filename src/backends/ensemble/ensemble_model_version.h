// EnsembleModelVersion: one version of an ensemble (backends/ensemble/ensemble_backend.h). Each
// request runs the plan's steps as a DAG: a step starts once every step it reads from has ended,
// so independent steps run concurrently; each step is a request to its model's serving version
// (that model's own scheduler: batching, priorities, admission), found again at that moment so a
// hot reload of a member is followed. Tensors pass between steps without copies (a step's output
// tensor is the next step's input). A conditional step whose condition does not hold, or one
// that reads a tensor no step produced (its producer was skipped) into an input its model does
// not mark optional, is skipped: its outputs are absent, or take their skipped_value. (An
// optional input whose producer was skipped is left out of the step's request.) The first step that fails fails the request with its
// status code and a message naming the step; steps still running are ignored.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "backends/ensemble/ensemble_plan.h"
#include "serve/metrics_registry.h"

namespace inferloop::backends {

// Per-step metrics of the ensemble backend (null families: no metrics).
struct EnsembleMetricFamilies {
  serve::CounterFamily* steps = nullptr;        // inferloop_ensemble_step_total{model,step,outcome}
  serve::HistogramFamily* seconds = nullptr;    // inferloop_ensemble_step_seconds{model,step}
  serve::HistogramFamily* requests = nullptr;   // inferloop_ensemble_request_seconds{model}
};

class EnsembleModelVersion final : public serve::ModelVersion {
 public:
  static Result<std::shared_ptr<EnsembleModelVersion>> Load(const serve::VersionLoadRequest& request,
                                                            const EnsembleMetricFamilies& metrics);
  ~EnsembleModelVersion() override;

  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const serve::ModelConfig& config() const override { return config_; }
  bool Infer(serve::InferRequest&& request, serve::RequestContext&& context, serve::InferCallback&& done,
             serve::AdmissionTicket&& server_ticket) override;
  void Drain() override;
  serve::ModelMetadata Metadata() const override;
  serve::ModelStatistics Statistics() const override;
  int64_t MemoryBytes() const override { return 0; }
  bool Ready() const override { return !draining_.load(); }
  std::string NotReadyReason() const override { return draining_.load() ? "draining" : ""; }
  std::vector<std::string> Dependencies() const override;

  struct Run;
  struct Shared;  // statistics, metric series, in-flight count (outlive runs)
  EnsembleModelVersion(std::string name, int64_t version);  // internal: use Load()

 private:
  Status CheckRequest(const serve::InferRequest& r) const;

  const std::string name_;
  const int64_t version_;
  serve::ModelConfig config_;
  EnsemblePlan plan_;
  serve::ModelResolver* models_ = nullptr;
  std::shared_ptr<Shared> shared_;
  std::atomic<bool> draining_{false};
};

}  // namespace inferloop::backends
