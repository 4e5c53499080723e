// Registration of the control flow kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterControlFlowKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
