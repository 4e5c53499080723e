// A model's adaptive-loop objectives (config.pbtxt `adaptive { ... }`, proto/model_config.proto
// ModelAdaptive; docs/ADAPTIVE.md), checked and with every default resolved.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/model_config.h"

namespace inferloop::serve {

struct AdaptiveObjectives {
  bool has_slo = false;          // latency_slo set: the controller runs for this model
  // Precision variants are prepared at load (latency_slo or variants set); the version's own
  // session then runs at variants[0], the most precise one listed.
  bool wants_variants = false;
  double slo_percentile = 99;    // (0, 100)
  double slo_ms = 0;             // > 0 when has_slo
  double max_accuracy_drop = 1;  // percentage points
  double cpu_share = 1;          // > 0
  std::vector<std::string> variants;  // candidate precisions, most precise first (empty list: all)
  bool hot = false;
  uint32_t max_instances = 0;                 // 0: from instance_group
  std::chrono::microseconds max_queue_delay{0};  // 0: the controller's default (a fraction of the SLO)
  std::string calibration_dir = "calibration";   // relative to the model folder
  std::string evaluation_dir = "evaluation";
  std::chrono::milliseconds window{2000};
};

// The precisions a variant may have, most precise first: "fp32", "bf16", "int8".
const std::vector<std::string>& AdaptiveVariantNames();

// Checks `config.adaptive` and resolves defaults. InvalidArgument naming the field for: a
// percentile outside (0, 100), milliseconds <= 0 or a percentile without milliseconds,
// max_accuracy_drop outside [0, 100], cpu_share <= 0 or > 1000, an unknown or repeated variant,
// window_ms < 100, folder names that leave the model
// folder, and the conflict of a latency SLO with a fixed `parameters { key: "precision" }`.
Result<AdaptiveObjectives> ReadAdaptiveObjectives(const ModelConfig& config);

// The model's `adaptive { cpu_share }` weight, 1 when unset (or not positive: a config that
// ReadAdaptiveObjectives refuses never serves). Cheap: read per request by fair admission.
double CpuShareWeight(const ModelConfig& config);

}  // namespace inferloop::serve
