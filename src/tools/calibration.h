// Calibration statistics of one tensor and the calibrators that turn them into a quantization
// range (`inferloop quantize --method minmax|percentile|entropy`, docs/QUANTIZATION.md).
//
// A TensorHistogram keeps the exact min/max of every value seen and a histogram of |x| with
// kHistogramBins bins over [0, range]; when a larger |x| arrives the range doubles (adjacent bins
// merge), so values can be added chunk by chunk without a first pass for the range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inferloop/status.h"

namespace inferloop {

constexpr int kHistogramBins = 2048;

class TensorHistogram {
 public:
  // Adds finite values (NaN and inf are ignored).
  void Add(const float* v, int64_t n);
  bool empty() const { return count_ == 0; }
  int64_t count() const { return count_; }
  double min() const { return min_; }
  double max() const { return max_; }
  // Upper edge of the histogram: bin i covers [i, i+1) * range / bins.
  double range() const { return range_; }
  const std::vector<double>& bins() const { return bins_; }
  // Rebuilds from saved statistics (calibration_stats.h); bins.size() must be kHistogramBins.
  static Result<TensorHistogram> FromParts(int64_t count, double min, double max, double range,
                                           std::vector<double> bins);

 private:
  void Grow(double absmax);
  int64_t count_ = 0;
  double min_ = 0, max_ = 0, range_ = 0;
  std::vector<double> bins_;
};

enum class CalibrationMethod { kMinMax, kPercentile, kEntropy };
// "minmax" | "percentile" | "entropy"; anything else is an error naming the choices.
Result<CalibrationMethod> ParseCalibrationMethod(const std::string& s);
const char* CalibrationMethodName(CalibrationMethod m);

struct QuantRange {
  double min = 0, max = 0;
};

// min/max: the exact range seen.
QuantRange MinMaxRange(const TensorHistogram& h);
// percentile: |x| clipped at the `percentile` (0..100] of the |x| histogram (linear within a
// bin), range = [max(min, -t), min(max, t)].
QuantRange PercentileRange(const TensorHistogram& h, double percentile);
// Entropy (TensorRT-style KL divergence): for every candidate threshold bin i (from `levels` to
// kHistogramBins) the reference distribution P = bins[0..i) with the outliers added to its last
// bin is compared with Q = bins[0..i) merged into `levels` levels and spread back over the
// non-empty bins; the threshold t of least KL(P||Q) wins. Bin 0 (the zeros of a ReLU output) is
// counted like bin 1 so that the spike at 0 does not decide the threshold. levels = 256 for a non-negative tensor
// (uint8 covers [0, t]), else 128 (half the uint8 levels per side). Range as for percentile.
QuantRange EntropyRange(const TensorHistogram& h);
// The threshold EntropyRange picks (exposed for tests).
double EntropyThreshold(const TensorHistogram& h, int levels);

QuantRange ComputeRange(const TensorHistogram& h, CalibrationMethod m, double percentile);

}  // namespace inferloop
