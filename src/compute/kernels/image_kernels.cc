// Registration of the image kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterImageKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
