#include "tools/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/status_macros.h"
#include "compute/tensor_cast.h"

namespace inferloop {

void StatsAccumulator::Add(const double* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[i];
    if (!std::isfinite(x)) {
      ++nonfinite_;
      continue;
    }
    if (count_ == 0 || x < min_) min_ = x;
    if (count_ == 0 || x > max_) max_ = x;
    sum_ += x;
    sq_ += x * x;
    ++count_;
  }
}

ValueStats StatsAccumulator::Get() const {
  ValueStats s;
  s.count = count_;
  s.nonfinite = nonfinite_;
  if (count_ == 0) return s;
  s.min = min_;
  s.max = max_;
  s.mean = sum_ / static_cast<double>(count_);
  s.std = std::sqrt(std::max(0.0, sq_ / static_cast<double>(count_) - s.mean * s.mean));
  return s;
}

void ErrorAccumulator::Add(const double* a, const double* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // The same NaN/inf on both sides agrees; anything else is a divergence.
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) nonfinite_ = true;
      continue;
    }
    dot_ += x * y;
    na_ += x * x;
    nb_ += y * y;
    const double d = std::fabs(x - y);
    max_abs_ = std::max(max_abs_, d);
    const double m = std::max(std::fabs(x), std::fabs(y));
    if (m > 0) max_rel_ = std::max(max_rel_, d / m);
  }
}

ErrorStats ErrorAccumulator::Get() const {
  ErrorStats e;
  if (nonfinite_) {
    e.cosine = std::numeric_limits<double>::quiet_NaN();
    e.max_abs = e.max_rel = std::numeric_limits<double>::infinity();
    return e;
  }
  if (na_ == 0 && nb_ == 0) e.cosine = 1.0;
  else if (na_ == 0 || nb_ == 0) e.cosine = 0.0;
  else e.cosine = std::clamp(dot_ / (std::sqrt(na_) * std::sqrt(nb_)), -1.0, 1.0);
  e.max_abs = max_abs_;
  e.max_rel = max_rel_;
  return e;
}

Result<std::vector<double>> TensorToDoubles(const Tensor& t) {
  if (t.dtype() == DataType::kString) return Status::InvalidArgument("string tensors have no numeric statistics");
  IL_ASSIGN_OR_RETURN(Tensor d, CastTensor(t, DataType::kDouble));
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.size());
}

Status ChannelStatsAccumulator::Add(const Tensor& t) {
  if (t.rank() != 4) return Status::InvalidArgument("per-channel statistics need an NCHW (rank-4) tensor, got " + ShapeToString(t.shape()));
  const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
  if (channels_.empty()) channels_.resize(static_cast<size_t>(c));
  if (static_cast<int64_t>(channels_.size()) != c)
    return Status::InvalidArgument("channel count " + std::to_string(c) + " differs from the earlier " + std::to_string(channels_.size()));
  IL_ASSIGN_OR_RETURN(std::vector<double> v, TensorToDoubles(t));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k) channels_[k].Add(v.data() + (i * c + k) * hw, hw);
  return Status::Ok();
}

std::vector<ValueStats> ChannelStatsAccumulator::Get() const {
  std::vector<ValueStats> out;
  for (const auto& a : channels_) out.push_back(a.Get());
  return out;
}

}  // namespace inferloop
