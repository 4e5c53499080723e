// Vectorized 8-bit elementwise loops of the INT8 kernels (compute/kernels/dnnl_int8*.cc),
// compiled for AVX-512, AVX2 and baseline x86-64 and run for ActiveIsa() (int8_loops_impl.h).
// Defined for T, TA, TB, TY each uint8_t or int8_t.
#pragma once

#include <cstdint>

namespace inferloop {
namespace simd {

// y[i] = round_half_even(clamp(a[i] * fa + b[i] * fb + c, lo, hi)), with lo and hi integers
// inside TY's range (QAdd's requantization).
template <typename TA, typename TB, typename TY>
void AddRequant(const TA* a, const TB* b, TY* y, int64_t n, float fa, float fb, float c, float lo, float hi);

// acc[i] = max(acc[i], x[i]).
template <typename T>
void MaxInto(T* acc, const T* x, int64_t n);

// acc[i] += x[i].
template <typename T>
void SumInto(int32_t* acc, const T* x, int64_t n);

}  // namespace simd
}  // namespace inferloop
