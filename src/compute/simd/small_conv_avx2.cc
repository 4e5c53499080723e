// The avx2 instantiation of small_conv_impl.h (compiled with this set's -m flags, CMakeLists.txt):
// tiles of 4 output channels x 2 vectors of columns (1 x 4 for a single output channel).
#include "base/simd/vec_avx2.h"
#include "compute/simd/small_conv_impl.h"

IL_SMALL_CONV_INSTANTIATE(inferloop::simd::Isa::kAvx2, inferloop::simd::avx2::Vec, 4, 2)
