// The avx2 instantiation of simd_impl.h (compiled with -mavx2 -mfma). Defines only Avx2Table().
#include "compute/simd/simd_impl.h"
#include "base/simd/vec_avx2.h"

namespace inferloop {
namespace simd {
namespace {
constexpr KernelTable kTable = impl::MakeTable<avx2::Vec>();
}  // namespace

const KernelTable* Avx2Table() { return &kTable; }

}  // namespace simd
}  // namespace inferloop
