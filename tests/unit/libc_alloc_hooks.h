// Counting hooks over glibc's allocator, for the tests that count heap allocations in a steady
// state (runtime/session_no_alloc_test.cc, server/rest_infer_alloc_test.cc). Include it in exactly
// one source file of a test executable, outside any namespace; that file defines
// OnHeapAllocation(), called before every malloc, calloc, realloc, memalign, aligned_alloc and
// posix_memalign of the process (the executable's definitions take precedence over libc's).
// Not for sanitizer builds, whose runtimes own these functions.
#pragma once

#include <cerrno>
#include <cstddef>

void OnHeapAllocation();

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  OnHeapAllocation();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  OnHeapAllocation();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  OnHeapAllocation();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  OnHeapAllocation();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  OnHeapAllocation();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  OnHeapAllocation();
  void* p = __libc_memalign(a, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
}
