// Vectorized per-tensor QuantizeLinear / DequantizeLinear between float32 and 8-bit integers, the
// graph edges of an INT8 model (compiled for AVX-512, AVX2 and baseline x86-64 and run for
// ActiveIsa(), quantize_linear_impl.h). Same results as the reference kernels in
// compute/kernels/quantize_kernels.cc: q = saturate(round_half_even(x / scale) + zp), NaN -> zp;
// x = (q - zp) * scale in float32.
#pragma once

#include <cstdint>

namespace inferloop {
namespace simd {

void QuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp);
void QuantizeToS8(const float* x, int8_t* y, int64_t n, float scale, int32_t zp);
void DequantizeU8(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp);
void DequantizeS8(const int8_t* x, float* y, int64_t n, float scale, int32_t zp);

// DynamicQuantizeLinear's pieces: *lo = min(0, x...), *hi = max(0, x...) (NaN ignored), and
// y = clamp(round_half_even(x / scale) + zp, 0, 255) with NaN -> 0.
void MinMaxWithZero(const float* x, int64_t n, float* lo, float* hi);
void DynamicQuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, float zp);

}  // namespace simd
}  // namespace inferloop
