// int8_loops.h: each loop runs the instantiation for ActiveIsa() (int8_loops_impl.h).
#include "compute/simd/int8_loops.h"

#include "compute/simd/isa_dispatch.h"

namespace inferloop {
namespace simd {
namespace int8_impl {
// Defined in int8_loops_impl.h, instantiated by int8_loops_{scalar,avx2,avx512}.cc.
template <Isa kIsa, typename TA, typename TB, typename TY>
void AddRequant(const TA* a, const TB* b, TY* y, int64_t n, float fa, float fb, float c, float lo, float hi);
template <Isa kIsa, typename T>
void MaxInto(T* acc, const T* x, int64_t n);
template <Isa kIsa, typename T>
void SumInto(int32_t* acc, const T* x, int64_t n);
template <Isa kIsa>
int64_t ClampToWindow(const uint8_t* x, uint8_t* y, int64_t n, int32_t shift);
template <Isa kIsa>
void AddScaledS8Batch(float* y, const int8_t* w, const float* s, const ScaledS8Term* terms, int64_t count, int64_t n);
}  // namespace int8_impl

template <typename TA, typename TB, typename TY>
void AddRequant(const TA* a, const TB* b, TY* y, int64_t n, float fa, float fb, float c, float lo, float hi) {
  CallForActiveIsa([&](auto isa) { int8_impl::AddRequant<decltype(isa)::value>(a, b, y, n, fa, fb, c, lo, hi); });
}

template <typename T>
void MaxInto(T* acc, const T* x, int64_t n) {
  CallForActiveIsa([&](auto isa) { int8_impl::MaxInto<decltype(isa)::value>(acc, x, n); });
}

template <typename T>
void SumInto(int32_t* acc, const T* x, int64_t n) {
  CallForActiveIsa([&](auto isa) { int8_impl::SumInto<decltype(isa)::value>(acc, x, n); });
}

int64_t ClampToWindow(const uint8_t* x, uint8_t* y, int64_t n, int32_t shift) {
  int64_t outside = 0;
  // Chunks keep the vectorized loop's int32 count from overflowing.
  for (int64_t b = 0; b < n; b += int64_t{1} << 30) {
    const int64_t len = n - b < (int64_t{1} << 30) ? n - b : int64_t{1} << 30;
    CallForActiveIsa([&](auto isa) { outside += int8_impl::ClampToWindow<decltype(isa)::value>(x + b, y + b, len, shift); });
  }
  return outside;
}

void AddScaledS8Batch(float* y, const int8_t* w, const float* s, const ScaledS8Term* terms, int64_t count, int64_t n) {
  CallForActiveIsa([&](auto isa) { int8_impl::AddScaledS8Batch<decltype(isa)::value>(y, w, s, terms, count, n); });
}

#define IL_ADD_REQUANT(TA, TB, TY) \
  template void AddRequant<TA, TB, TY>(const TA*, const TB*, TY*, int64_t, float, float, float, float, float);
IL_ADD_REQUANT(uint8_t, uint8_t, uint8_t)
IL_ADD_REQUANT(uint8_t, uint8_t, int8_t)
IL_ADD_REQUANT(uint8_t, int8_t, uint8_t)
IL_ADD_REQUANT(uint8_t, int8_t, int8_t)
IL_ADD_REQUANT(int8_t, uint8_t, uint8_t)
IL_ADD_REQUANT(int8_t, uint8_t, int8_t)
IL_ADD_REQUANT(int8_t, int8_t, uint8_t)
IL_ADD_REQUANT(int8_t, int8_t, int8_t)
#undef IL_ADD_REQUANT

template void MaxInto<uint8_t>(uint8_t*, const uint8_t*, int64_t);
template void MaxInto<int8_t>(int8_t*, const int8_t*, int64_t);
template void SumInto<uint8_t>(int32_t*, const uint8_t*, int64_t);
template void SumInto<int8_t>(int32_t*, const int8_t*, int64_t);

}  // namespace simd
}  // namespace inferloop
