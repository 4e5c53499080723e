// The scalar instantiation of small_conv_impl.h (compiled with this set's -m flags, CMakeLists.txt):
// tiles of 8 output channels x 4 vectors of columns (1 x 4 for a single output channel).
#include "base/simd/vec_scalar.h"
#include "compute/simd/small_conv_impl.h"

namespace inferloop {
namespace simd {

void SmallConvRowsScalar(const SmallConvGeom& g, const float* padded, const float* packed, const float* z,
                        const SmallConvEpilogue& e, float* y, int64_t begin, int64_t end) {
  if (g.M == 1) {  // one output channel (a segmentation head): no empty lanes of weights
    small_conv_impl::Rows<scalar::Vec, 1, 4>(g, padded, packed, z, e, y, begin, end);
    return;
  }
  small_conv_impl::Rows<scalar::Vec, 8, 4>(g, padded, packed, z, e, y, begin, end);
}

void SmallUpConvRowsScalar(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e,
                          float* y, int64_t begin, int64_t end) {
  small_conv_impl::UpRows<scalar::Vec, 8, 4>(g, x, packed, e, y, begin, end);
}

}  // namespace simd
}  // namespace inferloop
