// Tensor statistics for precision debugging (`inferloop compare`, calibration checks): summary
// statistics of values, elementwise error of B against A, and per-channel statistics of NCHW
// tensors. Each accumulates over several chunks (samples) and gives the same result as one pass
// over their concatenation.
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace inferloop
