// quantize_linear.h: each function runs the loop instantiated for ActiveIsa() (quantize_linear_impl.h).
#include "compute/simd/quantize_linear.h"

#include "compute/simd/isa_dispatch.h"

namespace inferloop {
namespace simd {
namespace quantize_impl {
// Defined in quantize_linear_impl.h, instantiated by quantize_linear_{scalar,avx2,avx512}.cc.
template <Isa kIsa, typename T>
void Quantize(const float* x, T* y, int64_t n, float scale, int32_t zp, float lo, float hi);
template <Isa kIsa, typename T>
void Dequantize(const T* x, float* y, int64_t n, float scale, int32_t zp);
template <Isa kIsa>
void MinMaxWithZero(const float* x, int64_t n, float* lo, float* hi);
template <Isa kIsa>
void DynamicQuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, float zp);
}  // namespace quantize_impl

namespace {

template <typename T>
void Quantize(const float* x, T* y, int64_t n, float scale, int32_t zp, float lo, float hi) {
  CallForActiveIsa([&](auto isa) { quantize_impl::Quantize<decltype(isa)::value>(x, y, n, scale, zp, lo, hi); });
}

template <typename T>
void Dequantize(const T* x, float* y, int64_t n, float scale, int32_t zp) {
  CallForActiveIsa([&](auto isa) { quantize_impl::Dequantize<decltype(isa)::value>(x, y, n, scale, zp); });
}

}  // namespace

void MinMaxWithZero(const float* x, int64_t n, float* lo, float* hi) {
  CallForActiveIsa([&](auto isa) { quantize_impl::MinMaxWithZero<decltype(isa)::value>(x, n, lo, hi); });
}
void DynamicQuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, float zp) {
  CallForActiveIsa([&](auto isa) { quantize_impl::DynamicQuantizeToU8<decltype(isa)::value>(x, y, n, scale, zp); });
}

void QuantizeToU8(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp) { Quantize(x, y, n, scale, zp, 0.f, 255.f); }
void QuantizeToS8(const float* x, int8_t* y, int64_t n, float scale, int32_t zp) { Quantize(x, y, n, scale, zp, -128.f, 127.f); }
void DequantizeU8(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp) { Dequantize(x, y, n, scale, zp); }
void DequantizeS8(const int8_t* x, float* y, int64_t n, float scale, int32_t zp) { Dequantize(x, y, n, scale, zp); }

}  // namespace simd
}  // namespace inferloop
