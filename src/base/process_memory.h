// The process's heap: the bytes in use, giving freed memory back, and which allocator serves it.
// The same calls whatever allocator the program runs on: glibc's malloc, gperftools' tcmalloc
// (linked into the `inferloop` binary, or LD_PRELOADed) or the sanitizers' allocator.
#pragma once

#include <cstdint>

namespace inferloop {

// Heap bytes allocated and not yet freed. glibc: mallinfo2's uordblks + hblkhd, over every
// arena and mmap'd chunk; tcmalloc: its generic.current_allocated_bytes; AddressSanitizer: its
// own counter. Unlike the resident size it does not count freed memory the allocator kept, nor
// code and library pages touched for the first time, so the difference across a model's load is
// what the load kept (weights, plans), not what its parsing passed through.
int64_t HeapBytesInUse();

// Returns freed heap memory to the operating system (glibc malloc_trim; tcmalloc
// ReleaseFreeMemory), so resident memory drops after a model is unloaded.
void ReleaseFreeMemoryToSystem();

// "tcmalloc", "asan" or "glibc": the allocator HeapBytesInUse reads (logged at server start).
const char* HeapAllocatorName();

}  // namespace inferloop
