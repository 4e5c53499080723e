// The loops below are written for the auto-vectorizer: -O2's cheap cost model leaves them scalar.
#pragma GCC optimize("O3")
#include "compute/simd/quantize_linear.h"

#include <algorithm>

#include "compute/simd/isa_clones.h"

namespace inferloop {
namespace simd {
namespace {

template <typename T>
IL_ISA_CLONES void Quantize(const float* __restrict x, T* __restrict y, int64_t n, float scale,
                                                                                      int32_t zp, float lo, float hi) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: (v + kRound) - kRound rounds half to even for |v| < 2^22
  const float z = static_cast<float>(zp);
  const float lo_q = lo - z, hi_q = hi - z;  // clamp before rounding: the bounds are integers
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = v == v ? v : 0.f;  // NaN -> the zero point
    v = std::min(std::max(v, lo_q), hi_q);
    v = (v + kRound) - kRound;
    y[i] = static_cast<T>(static_cast<int32_t>(v + z));
  }
}

template <typename T>
IL_ISA_CLONES void Dequantize(const T* __restrict x, float* __restrict y, int64_t n, float scale,
                                                                                        int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void MinMaxImpl(const float* __restrict x, int64_t n, float* lo,
                                                                           float* hi) {
  float mn = 0.f, mx = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  *lo = mn;
  *hi = mx;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void DynQuantImpl(const float* __restrict x, uint8_t* __restrict y,
                                                                             int64_t n, float scale, float zp) {
  constexpr float kRound = 12582912.f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = std::min(std::max(v, -zp - 1.f), 256.f - zp);  // keeps the rounding trick exact; clamped below
    v = (v + kRound) - kRound + zp;
    v = v >= 0.f ? v : 0.f;  // also NaN
    v = v > 255.f ? 255.f : v;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
}

}  // namespace

void MinMaxWithZero(const float* x, int64_t n, float* lo, float* hi) { MinMaxImpl(x, n, lo, hi); }
void DynamicQuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, float zp) { DynQuantImpl(x, y, n, scale, zp); }

void QuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp) { Quantize(x, y, n, scale, zp, 0.f, 255.f); }
void QuantizeToS8(const float* x, int8_t* y, int64_t n, float scale, int32_t zp) { Quantize(x, y, n, scale, zp, -128.f, 127.f); }
void DequantizeU8(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp) { Dequantize(x, y, n, scale, zp); }
void DequantizeS8(const int8_t* x, float* y, int64_t n, float scale, int32_t zp) { Dequantize(x, y, n, scale, zp); }

}  // namespace simd
}  // namespace inferloop
