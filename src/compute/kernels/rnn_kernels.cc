// Registration of the rnn kernel family.
#include "compute/kernel_registry.h"

namespace inferloop {

void RegisterRnnKernels(KernelRegistry& r) { (void)r; }

}  // namespace inferloop
