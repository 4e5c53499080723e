// Registration of the cast kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterCastKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
