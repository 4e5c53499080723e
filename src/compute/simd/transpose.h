// Fast permutation of a dense row-major array of fixed-size elements (Transpose and friends).
//
// Dims of size 1 are dropped and input dims that stay neighbours in the output are merged, so
// e.g. [B,S,H,D] -> [B,H,S,D] becomes copies of contiguous D-element runs, and a permutation
// that moves the innermost dim becomes a batch of cache-tiled 2-D transposes. Work is split
// over `pool` (nullptr: calling thread only). Allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inferloop {

class ThreadPool;

namespace simd {

// out = in permuted by perm (output dim d is input dim perm[d]); in_shape has `rank` dims and
// `perm` must be a permutation of [0, rank). Returns false, writing nothing, when rank > 8 or
// elem_size is not 1, 2, 4, 8 or 16: the caller then uses its generic path.
bool TransposeBytes(ThreadPool* pool, const void* in, void* out, size_t elem_size, const int64_t* in_shape,
                    const int64_t* perm, int rank);

}  // namespace simd
}  // namespace inferloop
