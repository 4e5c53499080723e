// Registration of the elementwise kernel family. The kernels live in elementwise_unary.cc,
// elementwise_binary.cc and elementwise_misc.cc; shared machinery in elementwise_common.h.
#include "compute/kernels/elementwise_common.h"

namespace inferloop {

void RegisterElementwiseKernels(KernelRegistry& r) {
  elementwise::RegisterElementwiseUnary(r);
  elementwise::RegisterElementwiseBinary(r);
  elementwise::RegisterElementwiseMisc(r);
}

}  // namespace inferloop
