// Registration of the attention kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterAttentionKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
