#include "llm/weight_matrix.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "llm/amx_matmul.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

bool Computable(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: case GgmlType::kF16: case GgmlType::kBF16: case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: case GgmlType::kQ4_K: case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<WeightMatrix> ViewWeight(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensorInfo* t = file.FindTensor(name);
  if (t == nullptr) return Status::NotFound("model tensor '" + name + "' is missing");
  const bool shape_ok = (t->dims.size() == 2 && t->dims[0] == static_cast<uint64_t>(cols) &&
                         t->dims[1] == static_cast<uint64_t>(rows)) ||
                        (rows == 1 && t->dims.size() == 1 && t->dims[0] == static_cast<uint64_t>(cols));
  if (!shape_ok) {
    std::string dims;
    for (uint64_t d : t->dims) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    return Status::InvalidArgument("model tensor '" + name + "' has dims [" + dims + "], expected [" +
                                   std::to_string(cols) + (rows == 1 ? "" : "," + std::to_string(rows)) + "]");
  }
  if (!Computable(t->type)) {
    return Status::Unimplemented("model tensor '" + name + "' has type " + GgmlTypeName(t->type) +
                                 ", which is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");
  }
  WeightMatrix w;
  w.name = name;
  w.type = t->type;
  w.rows = rows;
  w.cols = cols;
  IL_ASSIGN_OR_RETURN(w.row_bytes, GgmlRowBytes(static_cast<uint32_t>(t->type), static_cast<uint64_t>(cols)));
  w.data = t->data;
  if (w.data.size() != w.row_bytes * static_cast<uint64_t>(rows)) {
    return Status::InvalidArgument("model tensor '" + name + "' holds " + std::to_string(w.data.size()) +
                                   " bytes, expected " + std::to_string(w.row_bytes * rows));
  }
  return w;
}

bool PackedGemmAvailable() { return AmxAvailable() || ActiveLlmKernels().gemm_g16_q4_0 != nullptr; }

bool PackForGemm(WeightMatrix& w) {
  if (w.type == GgmlType::kQ4_K || w.type == GgmlType::kQ6_K) {
    // Group products for K-quants come from the table (also with AMX: amx_matmul.h says why).
    const LlmKernelTable& k = ActiveLlmKernels();
    if ((w.type == GgmlType::kQ4_K ? k.gemm_g16_q4_k : k.gemm_g16_q6_k) == nullptr || w.cols % 256 != 0) return false;
  } else if (!PackedGemmAvailable() || (w.type != GgmlType::kQ8_0 && w.type != GgmlType::kQ4_0) || w.cols % 32 != 0) {
    return false;
  }
  auto packed = AmxPackedWeight::Pack(w);
  if (!packed.ok()) return false;
  w.packed = std::move(*packed);
  return true;
}

void ReadRow(const WeightMatrix& w, int64_t r, float* out) {
  if (w.type == GgmlType::kF32) {
    std::memcpy(out, w.Row(r).data(), w.cols * sizeof(float));
    return;
  }
  // The type was checked by ViewWeight, so this cannot fail.
  (void)DequantizeRow(w.type, w.Row(r), std::span<float>(out, w.cols));
}

namespace {

constexpr int64_t kUnitRows = AmxPackedWeight::kGroupRows;
// Activation rows per quantization chunk: fewer are quantized on the calling thread alone (a
// parallel region costs more than quantizing a few rows).
constexpr int64_t kQuantizeGrainRows = 8;

// Rows [begin, end) of `w` times the T activation rows.
void RowsTimes(const WeightMatrix& w, const float* X, const Q8Rows& xq, const Q8KRows& xk, int64_t T, float* Y,
               int64_t begin, int64_t end) {
  const LlmKernelTable& k = ActiveLlmKernels();
  const int64_t n = w.cols;
  // Unpack each weight block once for all activation rows. Used for one row too, so that a
  // token's numbers do not depend on how many others share its step (batch invariance).
  if (n % 64 == 0) {
    auto gemm = w.type == GgmlType::kQ4_0 ? k.gemm_q4_0 : w.type == GgmlType::kQ8_0 ? k.gemm_q8_0 : nullptr;
    if (gemm != nullptr) {
      gemm(w.Row(begin).data(), w.row_bytes, end - begin, xq, T, Y + begin, w.rows);
      return;
    }
    // K-quants with Q8_K activations (n % 256 == 0 for these types).
    auto gemm_k = w.type == GgmlType::kQ4_K ? k.gemm_q4_k : w.type == GgmlType::kQ6_K ? k.gemm_q6_k : nullptr;
    if (gemm_k != nullptr) {
      gemm_k(w.Row(begin).data(), w.row_bytes, end - begin, xk, T, Y + begin, w.rows);
      return;
    }
  }
  std::vector<float> row;
  for (int64_t r = begin; r < end; ++r) {
    const uint8_t* wr = w.Row(r).data();
    switch (w.type) {
      case GgmlType::kF32:
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_f32(reinterpret_cast<const float*>(wr), X + t * n, n);
        break;
      case GgmlType::kF16:
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_f16(reinterpret_cast<const uint16_t*>(wr), X + t * n, n);
        break;
      case GgmlType::kQ8_0:
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_q8_0(wr, xq.Row(t), n);
        break;
      case GgmlType::kQ4_0:
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_q4_0(wr, xq.Row(t), n);
        break;
      case GgmlType::kQ4_K:
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_q4_k(wr, xk.Row(t), n);
        break;
      case GgmlType::kQ6_K:
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_q6_k(wr, xk.Row(t), n);
        break;
      default:
        row.resize(n);
        ReadRow(w, r, row.data());
        for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_f32(row.data(), X + t * n, n);
        break;
    }
  }
}

// Groups [g0, g1) of a packed weight times the T activation rows: AMX tiles, or the table's
// group kernels (the same results); K-quants always the table's.
void PackedTimes(const AmxPackedWeight& w, const Q8Rows& xq, const Q8KRows& xk, int64_t T, float* Y, int64_t y_stride,
                 int64_t g0, int64_t g1) {
  if (w.k_quant()) {
    TableGroupMatMul(ActiveLlmKernels(), w, xk, T, Y, y_stride, g0, g1);
  } else if (AmxAvailable()) {
    AmxMatMul(w, xq, T, Y, y_stride, g0, g1);
  } else {
    TableGroupMatMul(ActiveLlmKernels(), w, xq, T, Y, y_stride, g0, g1);
  }
}

bool NeedsInt8(GgmlType t) { return t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0; }
bool NeedsQ8K(GgmlType t) { return t == GgmlType::kQ4_K || t == GgmlType::kQ6_K; }

}  // namespace

void MatMulMany(std::span<const WeightMatrix* const> ws, const float* X, int64_t T, std::span<float* const> Ys,
                ThreadPool* pool, MatMulScratch* scratch) {
  if (ws.empty()) return;
  const int64_t n = ws[0]->cols;
  MatMulScratch own;
  MatMulScratch& ms = scratch != nullptr ? *scratch : own;
  Q8Rows& xq = ms.xq;
  Q8KRows& xk = ms.xk;
  bool int8 = false, q8k = false;
  int64_t total = 0, units = 0;
  for (const WeightMatrix* w : ws) {
    int8 = int8 || NeedsInt8(w->type);
    q8k = q8k || NeedsQ8K(w->type);
    total += w->rows;
    units += (w->rows + kUnitRows - 1) / kUnitRows;
  }
  // The activation rows are quantized on the pool too (rows are independent): on the calling
  // thread alone this was about 6% of a 2-thread prefill profile with the other thread idle.
  if (int8) xq.Resize(T, n);
  if (q8k) xk.Resize(T, n);
  if (int8 || q8k) {
    ParallelFor(pool, T, kQuantizeGrainRows, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        if (int8) xq.Quantize(t, X + t * n);
        if (q8k) xk.Quantize(t, X + t * n);
      }
    });
  }
  // Work is split in units of 16 rows of one weight (an AMX group); global unit u runs through
  // the weights in order.
  auto run = [&](int64_t begin, int64_t end) {
    int64_t base = 0;
    for (size_t i = 0; i < ws.size() && begin < end; ++i) {
      const WeightMatrix& w = *ws[i];
      const int64_t units_i = (w.rows + kUnitRows - 1) / kUnitRows;
      const int64_t b = std::max(begin, base) - base, e = std::min(end, base + units_i) - base;
      if (b < e) {
        if (w.packed != nullptr) {
          PackedTimes(*w.packed, xq, xk, T, Ys[i], w.rows, b, e);
        } else {
          RowsTimes(w, X, xq, xk, T, Ys[i], b * kUnitRows, std::min(w.rows, e * kUnitRows));
        }
      }
      base += units_i;
    }
  };
  // Below ~256k multiply-adds a parallel region costs more than it saves.
  if (pool == nullptr || pool->num_threads() <= 1 || total * n * T < (1 << 18)) {
    run(0, units);
  } else {
    pool->ParallelFor(units, 1, run);
  }
}

void MatMul(const WeightMatrix& w, const float* X, int64_t T, float* Y, ThreadPool* pool, MatMulScratch* scratch) {
  const WeightMatrix* ws[1] = {&w};
  float* ys[1] = {Y};
  MatMulMany(ws, X, T, ys, pool, scratch);
}

}  // namespace inferloop::llm
