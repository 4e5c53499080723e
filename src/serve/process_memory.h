// The process's resident memory, read from /proc/self/statm (Linux).
#pragma once

#include <cstdint>

namespace inferloop::serve {

// Resident set size in bytes; 0 when it cannot be read.
int64_t ResidentMemoryBytes();

// Returns freed heap memory to the operating system (glibc malloc_trim), so resident memory
// drops after a model is unloaded.
void ReleaseFreeMemoryToSystem();

}  // namespace inferloop::serve
