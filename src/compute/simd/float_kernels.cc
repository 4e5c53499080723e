// float_kernels.h: splits work over the thread pool and calls the active instruction set's table.
#include "compute/simd/float_kernels.h"

#include <algorithm>

#include "base/thread_pool.h"
#include "compute/simd/simd_table.h"

namespace inferloop {
namespace simd {
namespace {

// Elements per chunk below which splitting costs more than it saves: memory-bound maps, and
// maps that spend tens of instructions per element.
constexpr int64_t kCheapGrain = 16384;
constexpr int64_t kCostlyGrain = 4096;

bool IsCostly(UnaryOp op) {
  switch (op) {
    case UnaryOp::kSigmoid: case UnaryOp::kTanh: case UnaryOp::kExp: case UnaryOp::kLog: case UnaryOp::kErf:
    case UnaryOp::kGelu: case UnaryOp::kGeluTanh:
      return true;
    default: return false;
  }
}

// Rows per chunk so that a chunk holds about `grain` elements.
int64_t RowGrain(int64_t row_len, int64_t grain) { return std::max<int64_t>(1, grain / std::max<int64_t>(1, row_len)); }

}  // namespace

void Unary(ThreadPool* pool, UnaryOp op, const float* x, float* y, int64_t n, UnaryArgs args) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, n, IsCostly(op) ? kCostlyGrain : kCheapGrain,
              [&](int64_t b, int64_t e) { t.unary(op, args, x + b, y + b, e - b); });
}

void Binary(ThreadPool* pool, BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, n, kCheapGrain, [&](int64_t lo, int64_t hi) { t.binary(op, a + lo, b + lo, y + lo, hi - lo); });
}

void BinaryScalarA(ThreadPool* pool, BinaryOp op, float a, const float* b, float* y, int64_t n) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, n, kCheapGrain, [&](int64_t lo, int64_t hi) { t.binary_scalar_a(op, a, b + lo, y + lo, hi - lo); });
}

void BinaryScalarB(ThreadPool* pool, BinaryOp op, const float* a, float b, float* y, int64_t n) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, n, kCheapGrain, [&](int64_t lo, int64_t hi) { t.binary_scalar_b(op, a + lo, b, y + lo, hi - lo); });
}

namespace {

constexpr int kMaxRank = 8;

// The broadcast as up to kMaxRank coalesced dims (outermost first): size-1 output dims are
// dropped and neighbours merged where each operand is either contiguous across both or
// broadcast along both. stride_a/b are element strides (0 = broadcast).
struct BroadcastPlan {
  int rank = 0;
  int64_t dims[kMaxRank];
  int64_t stride_a[kMaxRank];
  int64_t stride_b[kMaxRank];
};

bool PlanBroadcast(const int64_t* a_shape, int a_rank, const int64_t* b_shape, int b_rank, const int64_t* y_shape,
                   int y_rank, BroadcastPlan* p) {
  if (y_rank > kMaxRank || a_rank > y_rank || b_rank > y_rank) return false;
  // Per output dim, whether each operand varies along it; dims of size 1 are skipped.
  bool va[kMaxRank], vb[kMaxRank];
  int64_t sizes[kMaxRank];
  int k = 0;
  for (int d = 0; d < y_rank; ++d) {
    const int64_t n = y_shape[d];
    if (n == 1) continue;
    const int da = d - (y_rank - a_rank), db = d - (y_rank - b_rank);
    const int64_t an = da >= 0 ? a_shape[da] : 1, bn = db >= 0 ? b_shape[db] : 1;
    if ((an != n && an != 1) || (bn != n && bn != 1)) return false;
    const bool a_var = an == n, b_var = bn == n;
    if (k > 0 && va[k - 1] == a_var && vb[k - 1] == b_var) {
      sizes[k - 1] *= n;
    } else {
      va[k] = a_var;
      vb[k] = b_var;
      sizes[k] = n;
      ++k;
    }
  }
  p->rank = k;
  int64_t sa = 1, sb = 1;
  for (int d = k - 1; d >= 0; --d) {
    p->dims[d] = sizes[d];
    p->stride_a[d] = va[d] ? sa : 0;
    p->stride_b[d] = vb[d] ? sb : 0;
    if (va[d]) sa *= sizes[d];
    if (vb[d]) sb *= sizes[d];
  }
  return true;
}

}  // namespace

bool BinaryBroadcast(ThreadPool* pool, BinaryOp op, const float* a, const int64_t* a_shape, int a_rank, const float* b,
                     const int64_t* b_shape, int b_rank, float* y, const int64_t* y_shape, int y_rank) {
  BroadcastPlan p;
  if (!PlanBroadcast(a_shape, a_rank, b_shape, b_rank, y_shape, y_rank, &p)) return false;
  int64_t total = 1;
  for (int d = 0; d < y_rank; ++d) total *= y_shape[d];
  if (total <= 0) return true;
  if (p.rank == 0) {  // every dim is 1
    ActiveTable().binary_scalar_b(op, a, b[0], y, 1);
    return true;
  }
  const int r = p.rank;
  const int64_t len = p.dims[r - 1], ia = p.stride_a[r - 1], ib = p.stride_b[r - 1];
  if (r == 1) {
    if (ia && ib) Binary(pool, op, a, b, y, len);
    else if (ia) BinaryScalarB(pool, op, a, b[0], y, len);
    else BinaryScalarA(pool, op, a[0], b, y, len);
    return true;
  }
  const int64_t rows = total / len;
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, rows, RowGrain(len, kCheapGrain), [&](int64_t r0, int64_t r1) {
    // Odometer over the outer dims, started at row r0.
    int64_t idx[kMaxRank];
    int64_t oa = 0, ob = 0;
    int64_t rem = r0;
    for (int d = r - 2; d >= 0; --d) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      oa += idx[d] * p.stride_a[d];
      ob += idx[d] * p.stride_b[d];
    }
    for (int64_t row = r0; row < r1; ++row) {
      float* out = y + row * len;
      if (ia && ib) t.binary(op, a + oa, b + ob, out, len);
      else if (ia) t.binary_scalar_b(op, a + oa, b[ob], out, len);
      else t.binary_scalar_a(op, a[oa], b + ob, out, len);
      for (int d = r - 2; d >= 0; --d) {
        oa += p.stride_a[d];
        ob += p.stride_b[d];
        if (++idx[d] < p.dims[d]) break;
        oa -= p.stride_a[d] * p.dims[d];
        ob -= p.stride_b[d] * p.dims[d];
        idx[d] = 0;
      }
    }
  });
  return true;
}

void ChannelAffine(ThreadPool* pool, const float* x, float* y, int64_t rows, int64_t n, int64_t period,
                   const float* mean, const float* scale, const float* shift) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, rows, RowGrain(n, kCheapGrain), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % period;
      t.affine(x + r * n, y + r * n, n, mean[c], scale[c], shift[c]);
    }
  });
}

void SoftmaxRows(ThreadPool* pool, const float* x, float* y, int64_t rows, int64_t n, bool log) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, rows, RowGrain(n, kCostlyGrain),
              [&](int64_t r0, int64_t r1) { t.softmax_rows(x + r0 * n, y + r0 * n, r1 - r0, n, log); });
}

void SoftmaxStrided(ThreadPool* pool, const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  const KernelTable& t = ActiveTable();
  // Work items: (outer index, block of 64 columns).
  constexpr int64_t kCols = 64;
  const int64_t blocks = (inner + kCols - 1) / kCols;
  ParallelFor(pool, outer * blocks, RowGrain(n * kCols, kCostlyGrain), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t o = i / blocks, c = (i % blocks) * kCols;
      const int64_t off = o * n * inner + c;
      t.softmax_columns(x + off, y + off, n, inner, std::min(kCols, inner - c), log);
    }
  });
}

void LayerNormRows(ThreadPool* pool, const float* x, const float* scale, const float* bias, float* y, int64_t rows,
                   int64_t n, float epsilon, float* mean, float* inv_std) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, rows, RowGrain(n, kCheapGrain), [&](int64_t r0, int64_t r1) {
    t.layer_norm_rows(x + r0 * n, scale, bias, y + r0 * n, r1 - r0, n, epsilon, mean ? mean + r0 : nullptr,
                      inv_std ? inv_std + r0 : nullptr);
  });
}

void SumRows(ThreadPool* pool, const float* x, int64_t rows, int64_t n, double multiplier, float* out) {
  const KernelTable& t = ActiveTable();
  ParallelFor(pool, rows, RowGrain(n, kCheapGrain), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) out[r] = static_cast<float>(t.sum(x + r * n, n) * multiplier);
  });
}

double Sum(const float* x, int64_t n) { return ActiveTable().sum(x, n); }
float Max(const float* x, int64_t n) { return ActiveTable().max(x, n); }

void HalvingMax(const float* in, int64_t row_stride, int64_t depth_stride, bool three_d, float* out, int64_t out_rows,
                int64_t n) {
  ActiveTable().halving_max(in, row_stride, depth_stride, three_d, out, out_rows, n);
}

}  // namespace simd
}  // namespace inferloop
