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

IL_SMALL_CONV_INSTANTIATE(inferloop::simd::Isa::kAvx512, inferloop::simd::avx512::Vec, 8, 2)
