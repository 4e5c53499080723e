// AdaptiveControl: what the adaptive loop (src/control, docs/ADAPTIVE.md) exposes about one model
// version that has precision variants: its state (variants prepared at load, the knobs in force,
// the last decision and its reason) and the pin/free calls of the REST and gRPC APIs.
// ModelVersion::Adaptive() returns it, or null for versions without variants.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::serve {

// One precision variant of a model, as prepared (or skipped) at load.
struct VariantReport {
  std::string name;            // "fp32", "bf16", "int8"
  bool usable = false;         // prepared, warmed and within the accuracy bound
  std::string skipped_reason;  // why not usable (no BF16 on this CPU, no calibration set, over the bound, ...)
  std::string source;          // where it came from ("model.onnx", "bf16 session", "calibration/", "model.qdq.onnx")
  bool accuracy_measured = false;
  double accuracy_drop = 0;    // percentage points of `metric` against fp32 (when measured)
  std::string metric;          // "top-1 accuracy" (labels) or "top-1 agreement with fp32"
  int64_t memory_bytes = 0;    // heap bytes its session kept at load
  std::vector<std::pair<int, double>> latency_ms;  // batch size -> median ms of one run, measured at load
};

struct AdaptiveState {
  std::string model;
  int64_t version = 0;
  bool controller = false;  // a latency SLO is set: the controller moves the knobs
  double slo_percentile = 0, slo_ms = 0;
  double max_accuracy_drop = 0;
  double cpu_share = 1;
  std::string variant;  // in force now
  std::string pinned;   // the pinned variant; empty when free
  std::string reason;   // why the knobs are what they are (the last decision's reason)
  bool slo_unreachable = false;
  int preferred_batch_size = 0;  // 0: not batching
  int64_t max_queue_delay_us = 0;
  int instances = 1;
  double arrival_rate = 0;             // requests/s over the last window
  double observed_latency_ms = -1;     // at slo_percentile over the last window; < 0 when none
  std::vector<VariantReport> variants;
};

class AdaptiveControl {
 public:
  virtual ~AdaptiveControl() = default;
  virtual AdaptiveState State() const = 0;
  // Holds the model at `variant` whatever the load (batching knobs still adapt). InvalidArgument
  // for a name that is not a variant of the model, FailedPrecondition for one that is not usable
  // (the message says why).
  virtual Status Pin(const std::string& variant) = 0;
  // Lets the controller choose again.
  virtual void Free() = 0;
};

}  // namespace inferloop::serve
