// The avx2 instantiation of small_conv_impl.h (compiled with this set's -m flags, CMakeLists.txt):
// tiles of 4 output channels x 2 vectors of columns.
#include "base/simd/vec_avx2.h"
#include "compute/simd/small_conv_impl.h"

namespace inferloop {
namespace simd {

void SmallConvRowsAvx2(const SmallConvGeom& g, const float* padded, const float* packed, const float* z,
                        const SmallConvEpilogue& e, float* y, int64_t begin, int64_t end) {
  small_conv_impl::Rows<avx2::Vec, 4, 2>(g, padded, packed, z, e, y, begin, end);
}

}  // namespace simd
}  // namespace inferloop
