#include "cli/omp_spin_limit.h"

#include <stdlib.h>
#include <unistd.h>

namespace inferloop::cli {

void LimitOmpSpinWait(char** argv) {
  if (getenv("GOMP_SPINCOUNT") != nullptr || getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kGompSpinCount, 0) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure
}

}  // namespace inferloop::cli
