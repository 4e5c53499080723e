// The report of `inferloop compare` (tools/model_compare.h): per-tensor comparison of two models,
// input statistics against the calibration set's, and its text and JSON forms.
#pragma once

#include <string>
#include <vector>

#include "inferloop/tensor.h"
#include "tools/tensor_stats.h"

namespace inferloop {

struct TensorComparison {
  std::string name;
  Shape shape;               // per sample (A's)
  bool is_output = false;    // a graph output of model A
  enum class Status { kCompared, kShapeMismatch, kTypeMismatch } status = Status::kCompared;
  std::string detail;        // for mismatches: "A float32[1,8] vs B float32[1,4]"
  ErrorStats error;
  ValueStats a, b;
  bool diverged = false;     // cosine < threshold (or non-finite)
};

struct ChannelCheck {
  int channel = 0;
  ValueStats data, calibration;
  bool flagged = false;      // |mean - calibration mean| > sigmas * calibration std
  double sigmas = 0;         // that distance in calibration std (inf when std is 0 and means differ)
};

struct InputReport {
  std::string name;
  Shape shape;                            // first sample's
  ValueStats stats;
  std::vector<ValueStats> channels;       // rank-4 (NCHW) inputs only
  bool has_calibration = false;
  ValueStats calibration_stats;
  std::vector<ChannelCheck> checks;       // with calibration: per channel (or one, whole tensor)
};

struct CompareReport {
  std::string model_a, model_b;
  int samples = 0;
  double cosine_threshold = 0.99;
  std::vector<InputReport> inputs;
  std::vector<TensorComparison> tensors;  // A's topological order
  int first_divergence = -1;              // index into tensors, -1 = none
  int only_in_a = 0, only_in_b = 0;       // captured names the other model lacks
  bool preprocessing_mismatch = false;    // some ChannelCheck flagged
};

// Human-readable report (inputs, per-tensor table, verdict).
std::string FormatCompareReport(const CompareReport& r);
// The report as JSON (non-finite numbers as null).
std::string CompareReportToJson(const CompareReport& r);

}  // namespace inferloop
