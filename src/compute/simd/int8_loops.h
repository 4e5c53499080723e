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

// y[i] = min(max(x[i] - shift, 0), 128), the part of x inside the window [shift, shift + 128];
// returns how many x[i] lie outside it (QConv / QMatMul without VNNI: dnnl_int8_window.cc).
int64_t ClampToWindow(const uint8_t* x, uint8_t* y, int64_t n, int32_t shift);

// One term of AddScaledS8Batch: y + y_offset, w + w_offset, r.
struct ScaledS8Term {
  int64_t y_offset;
  int64_t w_offset;
  float r;
};
// For each of the `count` terms t, in order: y[t.y_offset + i] += (t.r * w[t.w_offset + i]) * s[i]
// for i < n (the exact int8 path's correction, dnnl_int8_window.cc).
void AddScaledS8Batch(float* y, const int8_t* w, const float* s, const ScaledS8Term* terms, int64_t count, int64_t n);

}  // namespace simd
}  // namespace inferloop
