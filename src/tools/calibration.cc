#include "tools/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace inferloop {

void TensorHistogram::Grow(double absmax) {
  if (bins_.empty()) bins_.assign(kHistogramBins, 0.0);
  if (range_ == 0) {
    // Only zeros so far (all in bin 0): the first non-zero magnitude sets the range exactly.
    range_ = absmax;
    return;
  }
  while (range_ < absmax) {
    // Double the range: old bins 2k and 2k+1 become new bin k.
    for (int k = 0; k < kHistogramBins / 2; ++k) bins_[k] = bins_[2 * k] + bins_[2 * k + 1];
    std::fill(bins_.begin() + kHistogramBins / 2, bins_.end(), 0.0);
    range_ *= 2;
  }
}

void TensorHistogram::Add(const float* v, int64_t n) {
  if (bins_.empty()) bins_.assign(kHistogramBins, 0.0);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, absmax = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[i];
    if (!std::isfinite(x)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    absmax = std::max(absmax, std::fabs(x));
    ++finite;
  }
  if (finite == 0) return;
  if (count_ == 0) {
    min_ = lo;
    max_ = hi;
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
  }
  count_ += finite;
  if (absmax > range_) Grow(absmax);
  const double scale = range_ > 0 ? kHistogramBins / range_ : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[i];
    if (!std::isfinite(x)) continue;
    const int b = std::min(kHistogramBins - 1, static_cast<int>(std::fabs(x) * scale));
    bins_[b] += 1;
  }
}

Result<TensorHistogram> TensorHistogram::FromParts(int64_t count, double min, double max, double range,
                                                   std::vector<double> bins) {
  if (bins.size() != static_cast<size_t>(kHistogramBins))
    return Status::InvalidArgument("histogram has " + std::to_string(bins.size()) + " bins, expected " +
                                   std::to_string(kHistogramBins));
  if (count < 0 || range < 0 || min > max) return Status::InvalidArgument("inconsistent histogram statistics");
  TensorHistogram h;
  h.count_ = count;
  h.min_ = min;
  h.max_ = max;
  h.range_ = range;
  h.bins_ = std::move(bins);
  return h;
}

Result<CalibrationMethod> ParseCalibrationMethod(const std::string& s) {
  if (s == "minmax") return CalibrationMethod::kMinMax;
  if (s == "percentile") return CalibrationMethod::kPercentile;
  if (s == "entropy") return CalibrationMethod::kEntropy;
  return Status::InvalidArgument("unknown calibration method '" + s + "' (choose minmax, percentile or entropy)");
}

const char* CalibrationMethodName(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::kMinMax: return "minmax";
    case CalibrationMethod::kPercentile: return "percentile";
    case CalibrationMethod::kEntropy: return "entropy";
  }
  return "?";
}

namespace {

QuantRange Clipped(const TensorHistogram& h, double t) {
  QuantRange r;
  r.min = std::max(h.min(), -t);
  r.max = std::min(h.max(), t);
  if (r.min > r.max) r.min = r.max = 0;
  return r;
}

}  // namespace

QuantRange MinMaxRange(const TensorHistogram& h) { return QuantRange{h.min(), h.max()}; }

QuantRange PercentileRange(const TensorHistogram& h, double percentile) {
  if (h.empty() || h.range() == 0) return MinMaxRange(h);
  const auto& bins = h.bins();
  double total = 0;
  for (double b : bins) total += b;
  const double target = std::clamp(percentile, 0.0, 100.0) / 100.0 * total;
  const double width = h.range() / kHistogramBins;
  double cum = 0;
  double t = h.range();
  for (int i = 0; i < kHistogramBins; ++i) {
    if (bins[i] > 0 && cum + bins[i] >= target) {
      const double frac = std::clamp((target - cum) / bins[i], 0.0, 1.0);
      t = (i + frac) * width;
      break;
    }
    cum += bins[i];
  }
  return Clipped(h, t);
}

double EntropyThreshold(const TensorHistogram& h, int levels) {
  // Bin 0 holds the exact zeros of a ReLU output (often most values): a spike that would dominate
  // the divergence and favour thresholds that only serve it; it counts like its neighbour.
  std::vector<double> bins = h.bins();
  const int n = static_cast<int>(bins.size());
  if (h.empty() || h.range() == 0 || n < 2 || levels <= 0 || levels >= n) return h.range();
  bins[0] = bins[1];
  std::vector<double> suffix(n + 1, 0.0);
  for (int i = n - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + bins[i];
  double best_kl = std::numeric_limits<double>::infinity();
  int best_i = n;
  std::vector<double> p(n), q(n);
  for (int i = levels; i <= n; ++i) {
    // Reference: the first i bins, the clipped outliers added to the last one.
    double psum = 0;
    for (int j = 0; j < i; ++j) p[j] = bins[j];
    p[i - 1] += suffix[i];
    for (int j = 0; j < i; ++j) psum += p[j];
    if (psum <= 0) continue;
    // Candidate: bins[0..i) merged into `levels` groups, each group's mass spread evenly over its
    // non-empty bins (of the reference, so the last bin with the outliers counts as non-empty).
    std::fill(q.begin(), q.begin() + i, 0.0);
    double qsum = 0;
    for (int g = 0; g < levels; ++g) {
      const int start = static_cast<int>(static_cast<int64_t>(g) * i / levels);
      const int end = static_cast<int>(static_cast<int64_t>(g + 1) * i / levels);
      double mass = 0;
      int nonzero = 0;
      for (int j = start; j < end; ++j) {
        mass += bins[j];
        if (p[j] > 0) ++nonzero;
      }
      if (nonzero == 0) continue;
      for (int j = start; j < end; ++j)
        if (p[j] > 0) q[j] = mass / nonzero;
      qsum += mass;
    }
    double kl = 0;
    for (int j = 0; j < i; ++j) {
      if (p[j] <= 0) continue;
      const double pj = p[j] / psum;
      // A bin the candidate leaves empty (its group held only outliers): a large but finite penalty.
      const double qj = qsum > 0 && q[j] > 0 ? q[j] / qsum : 1e-12;
      kl += pj * std::log(pj / qj);
    }
    if (kl < best_kl - 1e-12) {
      best_kl = kl;
      best_i = i;
    }
  }
  return best_i * (h.range() / n);
}

QuantRange EntropyRange(const TensorHistogram& h) {
  if (h.empty() || h.range() == 0) return MinMaxRange(h);
  const int levels = h.min() >= 0 ? 256 : 128;
  return Clipped(h, EntropyThreshold(h, levels));
}

QuantRange ComputeRange(const TensorHistogram& h, CalibrationMethod m, double percentile) {
  switch (m) {
    case CalibrationMethod::kMinMax: return MinMaxRange(h);
    case CalibrationMethod::kPercentile: return PercentileRange(h, percentile);
    case CalibrationMethod::kEntropy: return EntropyRange(h);
  }
  return MinMaxRange(h);
}

}  // namespace inferloop
