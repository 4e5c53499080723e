#include "compute/simd/transpose.h"

#include <algorithm>
#include <cstring>

#include "base/thread_pool.h"
#include "compute/simd/simd_table.h"

namespace inferloop {
namespace simd {
namespace {

constexpr int kMaxRank = 8;
constexpr int64_t kTile = 16;
constexpr int64_t kGrainBytes = 64 * 1024;  // bytes per parallel chunk, at least

struct Elem16 {
  uint64_t lo, hi;
};

// The permutation after dropping size-1 dims and merging neighbours: output dim d has
// size[d] elements at input element stride in_stride[d] (output strides are row-major).
struct Plan {
  int rank = 0;
  int64_t size[kMaxRank];
  int64_t in_stride[kMaxRank];
};

Plan MakePlan(const int64_t* in_shape, const int64_t* perm, int rank) {
  // Input dims kept (size > 1), renumbered; output order over the kept dims.
  int keep_index[kMaxRank];
  int64_t in_sizes[kMaxRank];
  int n_in = 0;
  for (int d = 0; d < rank; ++d) {
    keep_index[d] = in_shape[d] == 1 ? -1 : n_in;
    if (in_shape[d] != 1) in_sizes[n_in++] = in_shape[d];
  }
  int order[kMaxRank];  // output position -> kept input dim
  int n_out = 0;
  for (int d = 0; d < rank; ++d)
    if (keep_index[perm[d]] >= 0) order[n_out++] = keep_index[perm[d]];
  int64_t in_strides[kMaxRank];
  int64_t s = 1;
  for (int d = n_in - 1; d >= 0; --d) {
    in_strides[d] = s;
    s *= in_sizes[d];
  }
  // Merge output neighbours that are input neighbours in the same order.
  Plan p;
  for (int k = 0; k < n_out; ++k) {
    const int d = order[k];
    if (p.rank > 0 && k > 0 && order[k - 1] + 1 == d) {
      p.size[p.rank - 1] *= in_sizes[d];
      p.in_stride[p.rank - 1] = in_strides[d];
    } else {
      p.size[p.rank] = in_sizes[d];
      p.in_stride[p.rank] = in_strides[d];
      ++p.rank;
    }
  }
  return p;
}

// Odometer over output dims [0, n) of a plan: the input offset of the current index.
struct Odometer {
  const Plan& p;
  int n;
  int64_t idx[kMaxRank];
  int64_t in_off = 0;
  Odometer(const Plan& plan, int dims, int64_t start) : p(plan), n(dims) {
    for (int d = n - 1; d >= 0; --d) {
      idx[d] = start % p.size[d];
      start /= p.size[d];
      in_off += idx[d] * p.in_stride[d];
    }
  }
  void Next() {
    for (int d = n - 1; d >= 0; --d) {
      in_off += p.in_stride[d];
      if (++idx[d] < p.size[d]) return;
      in_off -= p.in_stride[d] * p.size[d];
      idx[d] = 0;
    }
  }
};

// Innermost input dim stays innermost: copies of contiguous runs.
void CopyRuns(ThreadPool* pool, const uint8_t* in, uint8_t* out, size_t es, const Plan& p) {
  const int r = p.rank;
  const int64_t run = p.size[r - 1];
  const size_t run_bytes = static_cast<size_t>(run) * es;
  int64_t runs = 1;
  for (int d = 0; d < r - 1; ++d) runs *= p.size[d];
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / static_cast<int64_t>(run_bytes));
  ParallelFor(pool, runs, grain, [&](int64_t b, int64_t e) {
    Odometer od(p, r - 1, b);
    for (int64_t i = b; i < e; ++i) {
      std::memcpy(out + static_cast<size_t>(i) * run_bytes, in + static_cast<size_t>(od.in_off) * es, run_bytes);
      od.Next();
    }
  });
}

// Output rows of at most kNarrow columns are copied kNarrowTile input rows at a time, with the
// column count a compile-time constant (the NCHW -> NHWC transpose of a 3-channel 224x224 u8
// image: 198 us as 16 x 16 tiles at 2 threads on an AMD EPYC, see NarrowRows).
constexpr int64_t kNarrow = 4;
constexpr int64_t kNarrowTile = 1024;

template <typename T, int kJ>
void NarrowRowsN(const T* src, T* dst, int64_t i0, int64_t i1, int64_t in_stride_j, int64_t out_stride_i) {
  for (int64_t i = i0; i < i1; ++i) {
    T* drow = dst + i * out_stride_i;
    for (int j = 0; j < kJ; ++j) drow[j] = src[i + j * in_stride_j];
  }
}

// out[i * out_stride_i + j] = in[i + j * in_stride_j] for i in [i0, i1), j < nj <= kNarrow.
template <typename T>
void NarrowRows(const T* src, T* dst, int64_t i0, int64_t i1, int64_t nj, int64_t in_stride_j, int64_t out_stride_i) {
  switch (nj) {
    case 1: return NarrowRowsN<T, 1>(src, dst, i0, i1, in_stride_j, out_stride_i);
    case 2: return NarrowRowsN<T, 2>(src, dst, i0, i1, in_stride_j, out_stride_i);
    case 3: return NarrowRowsN<T, 3>(src, dst, i0, i1, in_stride_j, out_stride_i);
    default: return NarrowRowsN<T, 4>(src, dst, i0, i1, in_stride_j, out_stride_i);
  }
}

// The innermost input dim moves: for every index of the other dims, a 2-D transpose
// out[i * out_stride_i + j] = in[i + j * in_stride_j], i over the input's innermost dim (size
// ni, at output position pos_i), j over the output's innermost dim (size nj), in kTile squares.
template <typename T>
void TransposeTiles(ThreadPool* pool, const T* in, T* out, const Plan& p) {
  const int r = p.rank;
  int pos_i = 0;
  while (p.in_stride[pos_i] != 1) ++pos_i;
  const int64_t ni = p.size[pos_i], nj = p.size[r - 1], in_stride_j = p.in_stride[r - 1];
  int64_t out_stride_i = 1;
  for (int d = pos_i + 1; d < r; ++d) out_stride_i *= p.size[d];
  // The other dims, as their own plan (with output strides) for an odometer.
  Plan batch;
  int64_t batch_out_stride[kMaxRank];
  int64_t os = 1;
  int64_t out_strides[kMaxRank];
  for (int d = r - 1; d >= 0; --d) {
    out_strides[d] = os;
    os *= p.size[d];
  }
  for (int d = 0; d < r - 1; ++d) {
    if (d == pos_i) continue;
    batch.size[batch.rank] = p.size[d];
    batch.in_stride[batch.rank] = p.in_stride[d];
    batch_out_stride[batch.rank] = out_strides[d];
    ++batch.rank;
  }
  int64_t batches = 1;
  for (int d = 0; d < batch.rank; ++d) batches *= batch.size[d];
  // With few output columns a 16 x 16 tile is mostly loop overhead: tiles of kNarrowTile rows.
  const int64_t tile = nj <= kNarrow ? kNarrowTile : kTile;
  const int64_t i_blocks = (ni + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / static_cast<int64_t>(tile * nj * sizeof(T)));
  ParallelFor(pool, batches * i_blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t rem = w / i_blocks, in_off = 0, out_off = 0;
      for (int d = batch.rank - 1; d >= 0; --d) {
        const int64_t k = rem % batch.size[d];
        rem /= batch.size[d];
        in_off += k * batch.in_stride[d];
        out_off += k * batch_out_stride[d];
      }
      const int64_t i0 = (w % i_blocks) * tile, i1 = std::min(ni, i0 + tile);
      const T* src = in + in_off;
      T* dst = out + out_off;
      if constexpr (sizeof(T) == 4) {  // vector 8 x 8 blocks
        ActiveTable().transpose32(src + i0, in_stride_j, dst + i0 * out_stride_i, out_stride_i, nj, i1 - i0);
        continue;
      }
      if (nj <= kNarrow) {  // few output columns (NCHW -> NHWC of an image): whole rows per i
        NarrowRows(src, dst, i0, i1, nj, in_stride_j, out_stride_i);
        continue;
      }
      for (int64_t j0 = 0; j0 < nj; j0 += kTile) {
        const int64_t j1 = std::min(nj, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          T* drow = dst + i * out_stride_i;
          for (int64_t j = j0; j < j1; ++j) drow[j] = src[i + j * in_stride_j];
        }
      }
    }
  });
}

}  // namespace

bool TransposeBytes(ThreadPool* pool, const void* in, void* out, size_t elem_size, const int64_t* in_shape,
                    const int64_t* perm, int rank) {
  if (rank > kMaxRank || rank < 0) return false;
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8 && elem_size != 16) return false;
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= in_shape[d];
  if (total <= 0) return true;
  const Plan p = MakePlan(in_shape, perm, rank);
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  if (p.rank <= 1 || p.in_stride[p.rank - 1] == 1) {
    Plan runs = p;
    if (p.rank == 0) {  // a single element
      runs.rank = 1;
      runs.size[0] = 1;
      runs.in_stride[0] = 1;
    }
    CopyRuns(pool, src, dst, elem_size, runs);
    return true;
  }
  switch (elem_size) {
    case 1: TransposeTiles(pool, static_cast<const uint8_t*>(in), static_cast<uint8_t*>(out), p); break;
    case 2: TransposeTiles(pool, static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), p); break;
    case 4: TransposeTiles(pool, static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), p); break;
    case 8: TransposeTiles(pool, static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), p); break;
    default: TransposeTiles(pool, static_cast<const Elem16*>(in), static_cast<Elem16*>(out), p); break;
  }
  return true;
}

}  // namespace simd
}  // namespace inferloop
