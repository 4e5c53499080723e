// ModelAdaptation: one model version's adaptive loop state (docs/ADAPTIVE.md): its variant
// reports, its AdaptiveController (when a latency SLO is set), the pin, and the last decision.
// It is the version's AdaptiveControl (ModelVersion::Adaptive()): owned by the version, so it
// lives exactly as long as the version; the AdaptiveLoop drives Step() once per window.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "control/adaptive_controller.h"
#include "serve/adaptive_config.h"
#include "serve/adaptive_control.h"
#include "serve/served_model_version.h"

namespace inferloop::control {

class ModelAdaptation final : public serve::AdaptiveControl {
 public:
  // `reports`: PreparePrecisionVariants' result for `version` (variant 0 first; the usable ones
  // in the version's variant order). `version` owns this object.
  ModelAdaptation(serve::ServedModelVersion* version, serve::AdaptiveObjectives objectives,
                  std::vector<serve::VariantReport> reports);

  serve::AdaptiveState State() const override;
  Status Pin(const std::string& variant) override;
  void Free() override;

  // One window: observes the version's load window, decides, applies the knobs. Returns the
  // decision when it changed something or the SLO became (un)reachable (the loop logs those).
  std::optional<Decision> Step(double now_s);
  // The decision a Pin/Free made, for the loop to log (taken once).
  std::optional<Decision> TakeApiDecision();

  const serve::AdaptiveObjectives& objectives() const { return objectives_; }
  const std::string& variant_name(int usable_index) const;
  serve::ServedModelVersion* version() const { return version_; }

 private:
  void Apply(const Knobs& k);  // caller holds mu_
  void ApplyOrSetVariant(const Knobs& k);

  serve::ServedModelVersion* version_;
  const serve::AdaptiveObjectives objectives_;
  const std::vector<serve::VariantReport> reports_;
  std::vector<int> usable_;  // report index of each usable variant (= the version's variant index)

  mutable std::mutex mu_;
  std::optional<AdaptiveController> controller_;  // set when a latency SLO is set
  int pinned_ = -1;                               // version variant index; -1: free
  Decision last_;
  std::optional<Decision> api_decision_;
  double last_rate_ = 0, last_observed_ms_ = -1;
};

}  // namespace inferloop::control
