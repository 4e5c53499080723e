// Software prefetch of a byte range, one request per 64-byte line, for the LLM kernels and the
// KV attention: into the L1 (PrefetchBytes) or the L2 only (PrefetchBytesL2, for a farther
// look-ahead). Prefetches never fault, so asking past the end of a buffer is harmless. Loops are
// unrolled where `bytes` is a constant. Always inlined: GCC deletes calls it did not inline to a
// function that only prefetches (it has no side effects as GCC sees it); a caller that wraps
// these must be always_inline too (llm_kernels_impl.h PrefetchEighthAhead). In an anonymous
// namespace, as llm_kernels_impl.h: units built with other -m flags never share a copy.
#pragma once

#include <cstdint>

namespace inferloop::llm {
namespace {

__attribute__((always_inline)) inline void PrefetchBytes(const void* p, int bytes) {
  #pragma GCC unroll 16
  for (int k = 0; k < bytes; k += 64) __builtin_prefetch(static_cast<const uint8_t*>(p) + k, 0, 3);
}

__attribute__((always_inline)) inline void PrefetchBytesL2(const void* p, int bytes) {
  #pragma GCC unroll 16
  for (int k = 0; k < bytes; k += 64) __builtin_prefetch(static_cast<const uint8_t*>(p) + k, 0, 2);
}

}  // namespace
}  // namespace inferloop::llm
