#include "base/process_memory.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

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

namespace inferloop {
namespace {

// gperftools' C entry points (gperftools/malloc_extension_c.h), looked up at run time: present
// when tcmalloc serves this process's malloc (the `inferloop` binary links it; a program may also
// LD_PRELOAD it), absent otherwise, so this library needs no link to it.
struct Tcmalloc {
  int (*get_numeric_property)(const char* name, size_t* value) = nullptr;
  void (*release_free_memory)() = nullptr;
};

const Tcmalloc& TcmallocApi() {
  static const Tcmalloc api = [] {
    Tcmalloc t;
    t.get_numeric_property =
        reinterpret_cast<int (*)(const char*, size_t*)>(dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
    t.release_free_memory = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
    return t;
  }();
  return api;
}

}  // namespace

int64_t HeapBytesInUse() {
#ifdef IL_ASAN_HEAP
  // AddressSanitizer serves malloc from its own allocator, which glibc's counters do not see.
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  if (const auto get = TcmallocApi().get_numeric_property) {
    size_t v = 0;
    if (get("generic.current_allocated_bytes", &v)) return static_cast<int64_t>(v);
  }
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#endif
}

void ReleaseFreeMemoryToSystem() {
  if (const auto release = TcmallocApi().release_free_memory) release();
  malloc_trim(0);  // glibc's own heap (a no-op when tcmalloc serves malloc)
}

const char* HeapAllocatorName() {
#ifdef IL_ASAN_HEAP
  return "asan";
#else
  return TcmallocApi().get_numeric_property ? "tcmalloc" : "glibc";
#endif
}

}  // namespace inferloop
