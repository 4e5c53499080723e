// The avx512 instantiation of simd_impl.h (compiled with -mavx512f/bw/vl/dq). Defines only Avx512Table().
// GCC 12 reports the intrinsics' own _mm512_undefined_ps() pass-through operands as
// maybe-uninitialized; they are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "compute/simd/simd_impl.h"
#include "base/simd/vec_avx512.h"

namespace inferloop {
namespace simd {
namespace {
constexpr KernelTable kTable = impl::MakeTable<avx512::Vec>();
}  // namespace

const KernelTable* Avx512Table() { return &kTable; }

}  // namespace simd
}  // namespace inferloop
