// The loops below are written for the auto-vectorizer: -O2's cheap cost model leaves them scalar.
#pragma GCC optimize("O3")
#include "compute/simd/int8_loops.h"

#include <algorithm>

#include "compute/simd/isa_clones.h"

namespace inferloop {
namespace simd {

template <typename TA, typename TB, typename TY>
IL_ISA_CLONES void AddRequant(const TA* __restrict a, const TB* __restrict b, TY* __restrict y, int64_t n, float fa,
                              float fb, float c, float lo, float hi) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: adding and subtracting rounds half to even
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(a[i]) * fa + static_cast<float>(b[i]) * fb + c;
    v = std::min(std::max(v, lo), hi);
    v = (v + kRound) - kRound;
    y[i] = static_cast<TY>(static_cast<int32_t>(v));
  }
}

template <typename T>
IL_ISA_CLONES void MaxInto(T* __restrict acc, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
}

template <typename T>
IL_ISA_CLONES void SumInto(int32_t* __restrict acc, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
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
