#include "serve/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

namespace inferloop::serve {

int64_t ResidentMemoryBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<int64_t>(resident) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

void ReleaseFreeMemoryToSystem() { malloc_trim(0); }

}  // namespace inferloop::serve
