// A 2-D weight of a GGUF model as stored in the file (F32, F16, BF16 or a quantized block
// type), viewed in place, and products of it with float vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "inferloop/status.h"
#include "llm/ggml_types.h"
#include "llm/gguf_file.h"
#include "llm/llm_kernels.h"

namespace inferloop {
class ThreadPool;
}

namespace inferloop::llm {

class AmxPackedWeight;

struct WeightMatrix {
  std::string name;
  GgmlType type = GgmlType::kF32;
  int64_t rows = 0;       // output features (ggml ne[1])
  int64_t cols = 0;       // input features (ggml ne[0], the stored row length)
  uint64_t row_bytes = 0;
  std::span<const uint8_t> data;  // rows * row_bytes bytes inside the mapped file
  // The same weights repacked in 16-row groups (PackForGemm; the AMX tile layout, amx_matmul.h),
  // used by MatMul instead of `data`; null when not packed.
  std::shared_ptr<const AmxPackedWeight> packed;

  std::span<const uint8_t> Row(int64_t r) const { return data.subspan(r * row_bytes, row_bytes); }
};

// Views tensor `name` of `file` as a matrix of `rows` x `cols` (cols innermost). NotFound when
// the tensor is missing; InvalidArgument when its dims differ; Unimplemented when its type
// cannot be computed with (naming the type and the supported ones).
Result<WeightMatrix> ViewWeight(const GgufFile& file, const std::string& name, int64_t rows, int64_t cols);

// Y[t][r] = dot(row r of w, X[t]) for T activation rows X (T x w.cols, row-major) into Y
// (T x w.rows). Q8_0 and Q4_0 weights are multiplied in int8 with X quantized to 8-bit blocks,
// Q4_K and Q6_K with X quantized as Q8_K (llm_kernels.h); F32/F16 in float; other types expand
// each weight row to floats once for all T rows. Weight rows are split over `pool` (nullptr: this thread).
// `scratch` (may be null: then allocated for the call) holds the quantized activations between
// calls, so that a product no larger than an earlier one allocates nothing.
struct MatMulScratch;
void MatMul(const WeightMatrix& w, const float* X, int64_t T, float* Y, ThreadPool* pool,
            MatMulScratch* scratch = nullptr);
// Several products of the same activations in one parallel region (e.g. Q, K and V): Y[i] =
// X * ws[i]^T. All weights must have the same cols.
void MatMulMany(std::span<const WeightMatrix* const> ws, const float* X, int64_t T, std::span<float* const> Ys,
                ThreadPool* pool, MatMulScratch* scratch = nullptr);

// The activations of a product quantized for its weights' kernels (llm_kernels.h), kept by the
// caller between products. One per caller thread.
struct MatMulScratch {
  Q8Rows xq;
  Q8KRows xk;
};
inline void MatVec(const WeightMatrix& w, const float* x, float* y, ThreadPool* pool) { MatMul(w, x, 1, y, pool); }

// Whether PackForGemm repacks Q8_0 / Q4_0 weights on this CPU: with AMX (tiles), or when the
// active kernel table has group products (AVX-512 VNNI, AVX2; not the scalar table). Q4_K / Q6_K
// weights are repacked when the active table has their group products (the same tables).
bool PackedGemmAvailable();

// Repacks `w` in 16-row groups (amx_matmul.h) when PackedGemmAvailable() and its type is Q8_0 or
// Q4_0 (cols a multiple of 32), or when the active table has group products for its type Q4_K or
// Q6_K (cols a multiple of 256); returns whether it did. Products then use the AMX tiles or the
// table's gemm_g16 kernels, which give a token the same result whatever the batch and on every
// one of these paths. Q8_0 / Q4_0: not bit-identical to the unpacked kernels (one float fma per
// block of 32 instead of their lane order). Q4_K / Q6_K: bit-identical to the unpacked kernels
// (and so to llama.cpp's x86 dots: llm_kernels.h).
bool PackForGemm(WeightMatrix& w);

// Row `r` of `w` as floats (embedding lookup); out has w.cols elements.
void ReadRow(const WeightMatrix& w, int64_t r, float* out);

}  // namespace inferloop::llm
