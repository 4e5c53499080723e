// Registration of the signal kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterSignalKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
