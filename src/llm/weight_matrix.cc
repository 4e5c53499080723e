#include "llm/weight_matrix.h"

#include <cstring>
#include <vector>

#include "base/float_types.h"
#include "base/thread_pool.h"
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

void ReadRow(const WeightMatrix& w, int64_t r, float* out) {
  if (w.type == GgmlType::kF32) {
    std::memcpy(out, w.Row(r).data(), w.cols * sizeof(float));
    return;
  }
  // The type was checked by ViewWeight, so this cannot fail.
  (void)DequantizeRow(w.type, w.Row(r), std::span<float>(out, w.cols));
}

void MatMul(const WeightMatrix& w, const float* X, int64_t T, float* Y, ThreadPool* pool) {
  const LlmKernelTable& k = ActiveLlmKernels();
  const int64_t n = w.cols;
  Q8Rows xq;
  const bool int8 = w.type == GgmlType::kQ8_0 || w.type == GgmlType::kQ4_0;
  if (int8) {
    xq.Resize(T, n);
    for (int64_t t = 0; t < T; ++t) xq.Quantize(t, X + t * n);
  }
  auto rows = [&](int64_t begin, int64_t end) {
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
        default:
          row.resize(n);
          ReadRow(w, r, row.data());
          for (int64_t t = 0; t < T; ++t) Y[t * w.rows + r] = k.dot_f32(row.data(), X + t * n, n);
          break;
      }
    }
  };
  // Below ~256k multiply-adds a parallel region costs more than it saves.
  if (pool == nullptr || pool->num_threads() <= 1 || w.rows * n * T < (1 << 18)) {
    rows(0, w.rows);
  } else {
    pool->ParallelFor(w.rows, 16, rows);
  }
}

}  // namespace inferloop::llm
