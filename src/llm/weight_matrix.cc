#include "llm/weight_matrix.h"

#include <cstring>
#include <vector>

#include "base/float_types.h"
#include "base/thread_pool.h"

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

float Dot(const float* a, const float* b, int64_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
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

// Reference path: every row is expanded to floats, then dotted. Correct for every supported
// type; the quantized-dot kernels replace it for speed.
void MatVec(const WeightMatrix& w, const float* x, float* y, ThreadPool* pool) {
  auto rows = [&](int64_t begin, int64_t end) {
    if (w.type == GgmlType::kF32) {
      for (int64_t r = begin; r < end; ++r) {
        y[r] = Dot(reinterpret_cast<const float*>(w.Row(r).data()), x, w.cols);
      }
      return;
    }
    std::vector<float> row(w.cols);
    for (int64_t r = begin; r < end; ++r) {
      ReadRow(w, r, row.data());
      y[r] = Dot(row.data(), x, w.cols);
    }
  };
  if (pool == nullptr || pool->num_threads() <= 1 || w.rows * w.cols < (1 << 15)) {
    rows(0, w.rows);
  } else {
    pool->ParallelFor(w.rows, 16, rows);
  }
}

}  // namespace inferloop::llm
