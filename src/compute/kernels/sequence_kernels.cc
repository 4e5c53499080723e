// Registration of the sequence kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterSequenceKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
