// Precision debugging: run two models on the same inputs and compare every intermediate tensor
// they share by name (`inferloop compare`, docs/QUANTIZATION.md).
//
// Intermediates are captured without touching the runtime's run path: the tool loads each model,
// exposes every main-graph node output as an extra graph output and builds the session with
// optimization level 0 (so names stay those of the file). Normal sessions pay nothing for it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

// Summary statistics of a set of values (NaN and +-inf are counted, not included).
struct ValueStats {
  int64_t count = 0;       // finite values seen
  int64_t nonfinite = 0;   // NaN or infinite values seen
  double min = 0, max = 0, mean = 0, std = 0;
};

// Accumulates ValueStats over several chunks (samples).
class StatsAccumulator {
 public:
  void Add(const double* v, int64_t n);
  ValueStats Get() const;

 private:
  int64_t count_ = 0, nonfinite_ = 0;
  double min_ = 0, max_ = 0, sum_ = 0, sq_ = 0;
};

// How far B is from A, elementwise.
struct ErrorStats {
  double cosine = 1.0;   // dot(a,b)/(|a||b|); 1 when both are all zero, 0 when only one is
  double max_abs = 0;    // max |a-b|
  double max_rel = 0;    // max |a-b| / max(|a|,|b|) (0 where both are 0): in [0, 2]
};

// Accumulates ErrorStats over several chunks of equal-length pairs (samples).
class ErrorAccumulator {
 public:
  void Add(const double* a, const double* b, int64_t n);
  ErrorStats Get() const;

 private:
  double dot_ = 0, na_ = 0, nb_ = 0, max_abs_ = 0, max_rel_ = 0;
  bool nonfinite_ = false;  // a NaN/inf on one side only: cosine and errors are NaN/inf
};

// Per-channel mean and standard deviation of NCHW tensors (channel = dimension 1, statistics over
// N, H, W of every tensor added). Tensors of another rank or channel count are an error.
class ChannelStatsAccumulator {
 public:
  Status Add(const Tensor& t);
  int channels() const { return static_cast<int>(channels_.size()); }
  std::vector<ValueStats> Get() const;

 private:
  std::vector<StatsAccumulator> channels_;
};

// A tensor's values as doubles (numeric and bool types); other types are an error.
Result<std::vector<double>> TensorToDoubles(const Tensor& t);

// One input sample: named tensors.
using Sample = std::vector<NamedValue>;

// Reads DATA: a folder of <input>.npy / <input>.pb (TensorProto; its name field, when set, names
// the input) files = one sample, or a folder of such folders = one sample per folder (sorted by
// name). Errors: not a folder, no tensor files, unreadable files.
Result<std::vector<Sample>> LoadSamples(const std::string& dir);

// A model loaded for capturing: every main-graph node output is returned by Run.
class CapturingModel {
 public:
  // Loads `path` at optimization level 0. `only`: capture just these names (empty = all); the
  // graph outputs are always captured.
  static Result<std::unique_ptr<CapturingModel>> Load(const std::string& path,
                                                       const std::vector<std::string>& only = {});
  // Captured tensor names in topological order (the file's node order where that is one),
  // graph outputs included.
  const std::vector<std::string>& names() const { return names_; }
  bool is_graph_output(const std::string& name) const;
  const std::vector<ValueInfo>& inputs() const { return session_->inputs(); }
  // Runs with the inputs of `sample` this model declares (others are ignored); a required input
  // the sample lacks is an error. Returns tensors in names() order (non-tensor values skipped).
  Result<std::vector<std::pair<std::string, Tensor>>> Run(const Sample& sample) const;

 private:
  std::unique_ptr<Session> session_;
  std::vector<std::string> names_;
  std::vector<std::string> graph_outputs_;
};

struct CompareOptions {
  double cosine_threshold = 0.99;   // a tensor with cosine below this diverges
  std::string calibration_dir;      // optional: DATA layout; input statistics compared to it
  std::vector<std::string> tensors; // capture only these (empty = every node output)
  double calibration_sigmas = 3.0;  // channel mean further than this many calibration std: flagged
};

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

// Runs both models on every sample of `data_dir` and compares. Errors: unloadable models,
// unreadable data, inputs the data lacks, shapes the models reject, no tensor in common.
Result<CompareReport> CompareModels(const std::string& model_a, const std::string& model_b,
                                    const std::string& data_dir, const CompareOptions& opts = {});

// Human-readable report (inputs, per-tensor table, verdict).
std::string FormatCompareReport(const CompareReport& r);
// The report as JSON (non-finite numbers as null).
std::string CompareReportToJson(const CompareReport& r);

}  // namespace inferloop
