// The scalar instantiation of small_conv_impl.h (compiled with this set's -m flags, CMakeLists.txt):
// tiles of 8 output channels x 4 vectors of columns.
#include "base/simd/vec_scalar.h"
#include "compute/simd/small_conv_impl.h"

namespace inferloop {
namespace simd {

void SmallConvRowsScalar(const SmallConvGeom& g, const float* padded, const float* packed, const float* z,
                        const SmallConvEpilogue& e, float* y, int64_t begin, int64_t end) {
  small_conv_impl::Rows<scalar::Vec, 8, 4>(g, padded, packed, z, e, y, begin, end);
}

}  // namespace simd
}  // namespace inferloop
