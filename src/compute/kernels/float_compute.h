// Helpers for kernels that compute float-family inputs in a compute type C (float for
// float/float16/bfloat16, double for double) and cast back: the compute dtype of C, a tensor as
// C, and a dot product of two C rows. Used by the attention and RNN kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "compute/tensor_cast.h"

namespace inferloop {
namespace float_compute {

// The DataType of compute type C (float or double).
template <typename C>
constexpr DataType ComputeDtype() {
  return std::is_same_v<C, double> ? DataType::kDouble : DataType::kFloat;
}

// `t` as a tensor of C (shares the buffer when it already is one).
template <typename C>
Result<Tensor> AsCompute(const Tensor& t) {
  if (t.dtype() == ComputeDtype<C>()) return t;
  return CastTensor(t, ComputeDtype<C>());
}

// Dot product with four partial sums (lets the compiler vectorize without -ffast-math).
template <typename C>
C Dot(const C* a, const C* b, int64_t n) {
  C s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += a[k] * b[k];
    s1 += a[k + 1] * b[k + 1];
    s2 += a[k + 2] * b[k + 2];
    s3 += a[k + 3] * b[k + 3];
  }
  for (; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace float_compute
}  // namespace inferloop
