// Internal to src/compute/simd: the loops of quantize_linear.h, written once for the
// auto-vectorizer as templates on the instruction set.
//
// quantize_linear_scalar.cc, quantize_linear_avx2.cc and quantize_linear_avx512.cc each include
// this header, compiled with their set's -m flags (CMakeLists.txt) and `#pragma GCC
// optimize("O3")` (-O2's cheap cost model leaves these loops scalar), and instantiate it for their
// Isa with IL_QUANTIZE_LOOPS_INSTANTIATE. quantize_linear.cc declares the templates and calls the
// ActiveIsa() one; nothing else includes this header.
//
// Everything here is a template on the Isa, and nothing calls the standard library (min and max
// are spelled out): as in simd_impl.h, a shared inline function would be emitted by every unit,
// each with its own -m flags, and the linker would keep any one of them. The AVX units are
// compiled with -ffp-contract=off, so every instruction set gives the scalar unit's results.
#pragma once

#include <cstdint>

#include "compute/simd/cpu_isa.h"

namespace inferloop {
namespace simd {
namespace quantize_impl {

// y = saturate(round_half_even(x / scale) + zp) to [lo, hi], NaN -> zp.
template <Isa kIsa, typename T>
void Quantize(const float* __restrict x, T* __restrict y, int64_t n, float scale, int32_t zp, float lo, float hi) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: (v + kRound) - kRound rounds half to even for |v| < 2^22
  const float z = static_cast<float>(zp);
  const float lo_q = lo - z, hi_q = hi - z;  // clamp before rounding: the bounds are integers
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = v == v ? v : 0.f;  // NaN -> the zero point
    v = v < lo_q ? lo_q : v;  // std::min(std::max(v, lo_q), hi_q) spelled out
    v = hi_q < v ? hi_q : v;
    v = (v + kRound) - kRound;
    y[i] = static_cast<T>(static_cast<int32_t>(v + z));
  }
}

template <Isa kIsa, typename T>
void Dequantize(const T* __restrict x, float* __restrict y, int64_t n, float scale, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
}

template <Isa kIsa>
void MinMaxWithZero(const float* __restrict x, int64_t n, float* lo, float* hi) {
  float mn = 0.f, mx = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  *lo = mn;
  *hi = mx;
}

template <Isa kIsa>
void DynamicQuantizeToU8(const float* __restrict x, uint8_t* __restrict y, int64_t n, float scale, float zp) {
  constexpr float kRound = 12582912.f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = v < -zp - 1.f ? -zp - 1.f : v;  // keeps the rounding trick exact; clamped below
    v = 256.f - zp < v ? 256.f - zp : v;
    v = (v + kRound) - kRound + zp;
    v = v >= 0.f ? v : 0.f;  // also NaN
    v = v > 255.f ? 255.f : v;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
}

}  // namespace quantize_impl
}  // namespace simd
}  // namespace inferloop

// Every loop for the types quantize_linear.h uses, for `isa` (an Isa).
#define IL_QUANTIZE_LOOPS_INSTANTIATE(isa)                                                                             \
  template void inferloop::simd::quantize_impl::Quantize<isa, uint8_t>(const float*, uint8_t*, int64_t, float,         \
                                                                       int32_t, float, float);                         \
  template void inferloop::simd::quantize_impl::Quantize<isa, int8_t>(const float*, int8_t*, int64_t, float, int32_t, \
                                                                      float, float);                                   \
  template void inferloop::simd::quantize_impl::Dequantize<isa, uint8_t>(const uint8_t*, float*, int64_t, float,       \
                                                                         int32_t);                                     \
  template void inferloop::simd::quantize_impl::Dequantize<isa, int8_t>(const int8_t*, float*, int64_t, float,         \
                                                                        int32_t);                                      \
  template void inferloop::simd::quantize_impl::MinMaxWithZero<isa>(const float*, int64_t, float*, float*);            \
  template void inferloop::simd::quantize_impl::DynamicQuantizeToU8<isa>(const float*, uint8_t*, int64_t, float, float);
