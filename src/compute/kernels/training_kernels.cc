// Registration of the training kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterTrainingKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
