// Registration of the random kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterRandomKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
