// Registration of the nn kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterNnKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
