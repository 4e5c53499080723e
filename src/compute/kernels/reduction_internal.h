// Helpers shared by the reduction kernel family (reduction_*_kernels.cc). Internal to kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "compute/kernel_registry.h"

namespace inferloop {
namespace reduction {

// Registration entry points of the files of this family (called by RegisterReductionKernels).
void RegisterArgCumTopKKernels(KernelRegistry& r);  // ArgMax, ArgMin, CumSum, TopK
void RegisterSoftmaxKernels(KernelRegistry& r);     // Softmax, LogSoftmax, Hardmax

// Normalizes `axis` into [0, rank); false if it is outside [-rank, rank).
inline bool NormalizeAxis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

// Product of shape[begin, end).
inline int64_t DimProduct(const Shape& s, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Converts a double to T without undefined behaviour: NaN -> 0 and out-of-range values clamp
// for integer T.
template <typename T>
T SafeCast(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

}  // namespace reduction
}  // namespace inferloop
