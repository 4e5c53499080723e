// The process's memory: the heap in use (glibc), and giving freed heap back.
#pragma once

#include <cstdint>

namespace inferloop::serve {

// Heap bytes allocated and not yet freed, over every malloc arena and mmap'd chunk (glibc
// mallinfo2: uordblks + hblkhd). Unlike the resident size it does not count freed memory malloc
// kept, nor code and library pages touched for the first time, so the difference across a
// model's load is what the load kept (weights, plans), not what its parsing passed through.
int64_t HeapBytesInUse();

// Returns freed heap memory to the operating system (glibc malloc_trim), so resident memory
// drops after a model is unloaded.
void ReleaseFreeMemoryToSystem();

}  // namespace inferloop::serve
