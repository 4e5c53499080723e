#include "backends/ensemble/ensemble_backend.h"

#include "backends/ensemble/ensemble_model_version.h"
#include "base/status_macros.h"

namespace inferloop::backends {
namespace {

std::vector<double> StepBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

class EnsembleBackend final : public serve::ModelBackend {
 public:
  explicit EnsembleBackend(serve::MetricsRegistry* registry) {
    if (registry == nullptr) return;
    if (auto c = registry->AddCounter("inferloop_ensemble_step_total", "Ensemble steps by outcome (ran, skipped, failed).",
                                      {"model", "step", "outcome"});
        c.ok())
      families_.steps = *c;
    if (auto h = registry->AddHistogram("inferloop_ensemble_step_seconds",
                                        "Time from an ensemble step's start to its model's answer (queue and compute).",
                                        {"model", "step"}, StepBuckets());
        h.ok())
      families_.seconds = *h;
    if (auto h = registry->AddHistogram("inferloop_ensemble_request_seconds", "Ensemble requests, end to end.", {"model"},
                                        StepBuckets());
        h.ok())
      families_.requests = *h;
  }
  std::string kind() const override { return "ensemble"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform() == "ensemble";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    IL_ASSIGN_OR_RETURN(std::shared_ptr<EnsembleModelVersion> v, EnsembleModelVersion::Load(r, families_));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
  std::vector<std::string> Dependencies(const serve::ModelConfig& c) const override {
    std::vector<std::string> out;
    for (const auto& s : c.ensemble_scheduling().step()) out.push_back(s.model_name());
    return out;
  }

 private:
  EnsembleMetricFamilies families_;
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeEnsembleBackend(serve::MetricsRegistry* registry) {
  return std::make_shared<EnsembleBackend>(registry);
}

}  // namespace inferloop::backends
