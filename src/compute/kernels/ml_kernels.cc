// Registration of the ml kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterMlKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
