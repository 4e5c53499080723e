// Registration of the misc kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterMiscKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
