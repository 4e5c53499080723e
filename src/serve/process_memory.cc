#include "serve/process_memory.h"

#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
#define IL_ASAN_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IL_ASAN_HEAP 1
#endif
#endif
#ifdef IL_ASAN_HEAP
#include <sanitizer/allocator_interface.h>
#endif

namespace inferloop::serve {

int64_t HeapBytesInUse() {
#ifdef IL_ASAN_HEAP
  // AddressSanitizer serves malloc from its own allocator, which glibc's counters do not see.
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#endif
}

void ReleaseFreeMemoryToSystem() { malloc_trim(0); }

}  // namespace inferloop::serve
