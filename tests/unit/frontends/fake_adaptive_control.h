// FakeAdaptiveControl: a serve::AdaptiveControl for the frontend tests, with three variants:
// "fp32" and "int8" usable (fp32 in force), "bf16" skipped ("this CPU has no BF16 instructions").
// Pin follows the AdaptiveControl contract (InvalidArgument for an unknown name,
// FailedPrecondition for an unusable one) and every Pin/Free is recorded ("" for Free).
// AdaptiveCalls() answers the InferenceService's adaptive calls for the fakes' models.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "serve/adaptive_control.h"

namespace inferloop::frontends::testing {

class FakeAdaptiveControl : public serve::AdaptiveControl {
 public:
  FakeAdaptiveControl(std::string model, int64_t version) {
    state_.model = std::move(model);
    state_.version = version;
    state_.controller = true;
    state_.slo_percentile = 99;
    state_.slo_ms = 50;
    state_.max_accuracy_drop = 1;
    state_.cpu_share = 2;
    state_.variant = "fp32";
    state_.reason = "p99 41.2 ms within the SLO of 50 ms";
    state_.preferred_batch_size = 8;
    state_.max_queue_delay_us = 500;
    state_.instances = 2;
    state_.arrival_rate = 120.5;
    state_.observed_latency_ms = 41.25;
    serve::VariantReport fp32;
    fp32.name = "fp32";
    fp32.usable = true;
    fp32.source = "model.onnx";
    fp32.accuracy_measured = true;
    fp32.accuracy_drop = 0;
    fp32.metric = "top-1 accuracy";
    fp32.memory_bytes = 104857600;
    fp32.latency_ms = {{1, 4.5}, {8, 20.25}};
    serve::VariantReport bf16;
    bf16.name = "bf16";
    bf16.skipped_reason = "this CPU has no BF16 instructions";
    serve::VariantReport int8;
    int8.name = "int8";
    int8.usable = true;
    int8.source = "calibration/";
    int8.accuracy_measured = true;
    int8.accuracy_drop = 0.375;
    int8.metric = "top-1 accuracy";
    int8.memory_bytes = 26214400;
    int8.latency_ms = {{1, 1.5}, {8, 7.75}};
    state_.variants = {fp32, bf16, int8};
  }

  serve::AdaptiveState State() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  Status Pin(const std::string& variant) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& v : state_.variants) {
      if (v.name != variant) continue;
      if (!v.usable) return Status::FailedPrecondition("variant '" + variant + "' is not usable: " + v.skipped_reason);
      pins_.push_back(variant);
      state_.pinned = variant;
      state_.variant = variant;
      state_.reason = "pinned to " + variant;
      return Status::Ok();
    }
    return Status::InvalidArgument("'" + variant + "' is not a variant of model '" + state_.model + "'");
  }
  void Free() override {
    std::lock_guard<std::mutex> lock(mu_);
    pins_.push_back("");
    state_.pinned.clear();
    state_.reason = "freed";
  }

  // Every Pin that succeeded and every Free (""), in call order.
  std::vector<std::string> pins() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pins_;
  }
  // Replaces the state (the test's own variants, knobs, non-finite values...).
  void SetState(serve::AdaptiveState state) {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = std::move(state);
  }

 private:
  mutable std::mutex mu_;
  serve::AdaptiveState state_;
  std::vector<std::string> pins_;
};

// The adaptive calls of an InferenceService fake: `known` is the fake's own model/version check;
// models in `controls` have variants, other known ones answer FailedPrecondition.
class AdaptiveCalls {
 public:
  std::map<std::string, std::shared_ptr<FakeAdaptiveControl>> controls;  // set before the server starts

  Result<serve::AdaptiveState> State(const Status& known, const std::string& model) {
    IL_ASSIGN_OR_RETURN(FakeAdaptiveControl * control, Find(known, model));
    return control->State();
  }
  Status Pin(const Status& known, const std::string& model, const std::string& variant) {
    IL_ASSIGN_OR_RETURN(FakeAdaptiveControl * control, Find(known, model));
    if (variant.empty()) {
      control->Free();
      return Status::Ok();
    }
    return control->Pin(variant);
  }

 private:
  Result<FakeAdaptiveControl*> Find(const Status& known, const std::string& model) {
    IL_RETURN_IF_ERROR(known);
    auto it = controls.find(model);
    if (it == controls.end()) return Status::FailedPrecondition("model '" + model + "' has no adaptive variants");
    return it->second.get();
  }
};

}  // namespace inferloop::frontends::testing
