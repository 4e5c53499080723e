// The avx512 instantiation of small_conv_impl.h (compiled with this set's -m flags, CMakeLists.txt):
// tiles of 8 output channels x 2 vectors of columns (1 x 4 for a single output channel).
// GCC 12 reports the intrinsics' own _mm512_undefined_ps() pass-through operands as
// (maybe-)uninitialized; they are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "base/simd/vec_avx512.h"
#include "compute/simd/small_conv_impl.h"

namespace inferloop {
namespace simd {

void SmallConvRowsAvx512(const SmallConvGeom& g, const float* padded, const float* packed, const float* z,
                        const SmallConvEpilogue& e, float* y, int64_t begin, int64_t end) {
  if (g.M == 1) {  // one output channel (a segmentation head): no empty lanes of weights
    small_conv_impl::Rows<avx512::Vec, 1, 4>(g, padded, packed, z, e, y, begin, end);
    return;
  }
  small_conv_impl::Rows<avx512::Vec, 8, 2>(g, padded, packed, z, e, y, begin, end);
}

void SmallUpConvRowsAvx512(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e,
                          float* y, int64_t begin, int64_t end) {
  small_conv_impl::UpRows<avx512::Vec, 8, 2>(g, x, packed, e, y, begin, end);
}

}  // namespace simd
}  // namespace inferloop
