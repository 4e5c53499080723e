// Internal to src/compute/simd: the loops of int8_loops.h, written once for the auto-vectorizer
// as templates on the instruction set.
//
// int8_loops_scalar.cc, int8_loops_avx2.cc and int8_loops_avx512.cc each include this header,
// compiled with their set's -m flags (CMakeLists.txt) and `#pragma GCC optimize("O3")` (-O2's
// cheap cost model leaves these loops scalar), and instantiate it for their Isa with
// IL_INT8_LOOPS_INSTANTIATE. int8_loops.cc declares the templates and calls the ActiveIsa() one;
// nothing else includes this header.
//
// Everything here is a template on the Isa, and nothing calls the standard library (min and max
// are spelled out): as in simd_impl.h, a shared inline function would be emitted by every unit,
// each with its own -m flags, and the linker would keep any one of them. The AVX units are
// compiled with -ffp-contract=off, so every instruction set gives the scalar unit's results.
#pragma once

#include <cstdint>

#include "compute/simd/cpu_isa.h"
#include "compute/simd/int8_loops.h"

namespace inferloop {
namespace simd {
namespace int8_impl {

template <Isa kIsa, typename TA, typename TB, typename TY>
void AddRequant(const TA* __restrict a, const TB* __restrict b, TY* __restrict y, int64_t n, float fa, float fb,
                float c, float lo, float hi) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: adding and subtracting rounds half to even
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(a[i]) * fa + static_cast<float>(b[i]) * fb + c;
    v = v < lo ? lo : v;  // std::min(std::max(v, lo), hi) spelled out
    v = hi < v ? hi : v;
    v = (v + kRound) - kRound;
    y[i] = static_cast<TY>(static_cast<int32_t>(v));
  }
}

template <Isa kIsa, typename T>
void MaxInto(T* __restrict acc, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] < x[i] ? x[i] : acc[i];
}

template <Isa kIsa, typename T>
void SumInto(int32_t* __restrict acc, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

template <Isa kIsa>
int64_t ClampToWindow(const uint8_t* __restrict x, uint8_t* __restrict y, int64_t n, int32_t shift) {
  int32_t outside = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = static_cast<int32_t>(x[i]) - shift;
    int32_t c = v < 0 ? 0 : v;
    c = 128 < c ? 128 : c;
    outside += c != v;
    y[i] = static_cast<uint8_t>(c);
  }
  return outside;
}

template <Isa kIsa>
void AddScaledS8(float* __restrict y, const int8_t* __restrict w, const float* __restrict s, float r, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += (r * static_cast<float>(w[i])) * s[i];
}

template <Isa kIsa>
void AddScaledS8Batch(float* y, const int8_t* w, const float* s, const ScaledS8Term* terms, int64_t count, int64_t n) {
  // The terms pick rows of w (and y) at random: the rows of the term 8 ahead are prefetched
  // (measured on the QDQ ResNet-50 on an AVX2 EPYC: the loads of w were half of this loop's time).
  constexpr int64_t kAhead = 8;
  for (int64_t t = 0; t < count; ++t) {
    if (t + kAhead < count) {
      const int8_t* wn = w + terms[t + kAhead].w_offset;
      const float* yn = y + terms[t + kAhead].y_offset;
      for (int64_t i = 0; i < n; i += 64) __builtin_prefetch(wn + i);
      for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(yn + i, 1);
    }
    AddScaledS8<kIsa>(y + terms[t].y_offset, w + terms[t].w_offset, s, terms[t].r, n);
  }
}

}  // namespace int8_impl
}  // namespace simd
}  // namespace inferloop

#define IL_INT8_ADD_REQUANT(ISA, TA, TB, TY)                                                                   \
  template void inferloop::simd::int8_impl::AddRequant<ISA, TA, TB, TY>(const TA*, const TB*, TY*, int64_t, float, \
                                                                        float, float, float, float);
// Every loop for the types int8_loops.h promises, for `isa` (an Isa).
#define IL_INT8_LOOPS_INSTANTIATE(isa)                                                       \
  IL_INT8_ADD_REQUANT(isa, uint8_t, uint8_t, uint8_t)                                        \
  IL_INT8_ADD_REQUANT(isa, uint8_t, uint8_t, int8_t)                                         \
  IL_INT8_ADD_REQUANT(isa, uint8_t, int8_t, uint8_t)                                         \
  IL_INT8_ADD_REQUANT(isa, uint8_t, int8_t, int8_t)                                          \
  IL_INT8_ADD_REQUANT(isa, int8_t, uint8_t, uint8_t)                                         \
  IL_INT8_ADD_REQUANT(isa, int8_t, uint8_t, int8_t)                                          \
  IL_INT8_ADD_REQUANT(isa, int8_t, int8_t, uint8_t)                                          \
  IL_INT8_ADD_REQUANT(isa, int8_t, int8_t, int8_t)                                           \
  template void inferloop::simd::int8_impl::MaxInto<isa, uint8_t>(uint8_t*, const uint8_t*, int64_t); \
  template void inferloop::simd::int8_impl::MaxInto<isa, int8_t>(int8_t*, const int8_t*, int64_t);    \
  template void inferloop::simd::int8_impl::SumInto<isa, uint8_t>(int32_t*, const uint8_t*, int64_t); \
  template void inferloop::simd::int8_impl::SumInto<isa, int8_t>(int32_t*, const int8_t*, int64_t); \
  template int64_t inferloop::simd::int8_impl::ClampToWindow<isa>(const uint8_t*, uint8_t*, int64_t, int32_t); \
  template void inferloop::simd::int8_impl::AddScaledS8Batch<isa>(float*, const int8_t*, const float*,             \
                                                                  const inferloop::simd::ScaledS8Term*, int64_t, int64_t);
