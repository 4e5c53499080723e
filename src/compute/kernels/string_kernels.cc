// Registration of the string kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterStringKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
