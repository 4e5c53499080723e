// The scalar instantiation of simd_impl.h. Defines only ScalarTable().
#include "compute/simd/simd_impl.h"
#include "base/simd/vec_scalar.h"

namespace inferloop {
namespace simd {
namespace {
constexpr KernelTable kTable = impl::MakeTable<scalar::Vec>();
}  // namespace

const KernelTable* ScalarTable() { return &kTable; }

}  // namespace simd
}  // namespace inferloop
