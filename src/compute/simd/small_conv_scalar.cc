// The scalar instantiation of small_conv_impl.h (compiled with this set's -m flags, CMakeLists.txt):
// tiles of 8 output channels x 4 vectors of columns (1 x 4 for a single output channel).
#include "base/simd/vec_scalar.h"
#include "compute/simd/small_conv_impl.h"

IL_SMALL_CONV_INSTANTIATE(inferloop::simd::Isa::kScalar, inferloop::simd::scalar::Vec, 8, 4)
