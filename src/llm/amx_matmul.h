// Q8_0 / Q4_0 weight products on AMX int8 tiles (Intel Sapphire Rapids and later).
//
// The file's blocks (32 values and one fp16 scale per block and row) are repacked once, at load,
// into groups of 16 rows: per block, the 16 rows' scales followed by their values laid out as an
// AMX "B" tile (value k of row n at byte (k / 4) * 64 + n * 4 + k % 4; Q4_0 keeps its nibbles,
// two values per byte, and is unpacked to int8 per step). A product then multiplies up to 16
// activation rows (int8, quantized in blocks of 32 as Q8Rows) with one block of 16 weight rows
// per tile instruction, giving each (row, token, block) its exact int32 dot, and accumulates
//   y[t][r] += (d_w[r][b] * d_x[t][b]) * dot_b
// in float, block after block. That order does not depend on how many tokens share the call, so
// a token's result is the same alone or batched (batch invariance), for decode and prefill alike.
// Without AMX the same packed weights feed the AVX-512 VNNI and AVX2 tables' group products
// (llm_kernels.h gemm_g16_*), which give the same bits; with AMX, steps of up to 8 tokens use the
// VNNI ones too.
//
// Q4_K and Q6_K weights are repacked in the same 16-row groups, one "block" per super-block of
// 256 values (layouts: llm_kernels.h gemm_g16_q4_k / gemm_g16_q6_k), and multiplied by the
// AVX-512 VNNI or AVX2 table's group kernels, also with AMX: they sum each sub-block before its
// scale, the same bits on both tables (llm_kernels.h gemm_g16_q4_k). An AMX tile kernel that gave
// the per-row dots' eight lanes (one K=32 product per lane with scale * value split into two byte
// digits) measured slower than the VNNI kernel of the time (git history: the commit "AMX tile
// kernel for Q4_K / Q6_K" and its revert).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "inferloop/status.h"
#include "llm/ggml_types.h"

namespace inferloop::llm {

struct WeightMatrix;
class Q8Rows;
class Q8KRows;
struct LlmKernelTable;

class AmxPackedWeight {
 public:
  static constexpr int kGroupRows = 16;

  // Repacks `w` (Q8_0 or Q4_0 with cols a multiple of 32, Q4_K or Q6_K with cols a multiple of
  // 256); InvalidArgument for anything else.
  static Result<std::unique_ptr<AmxPackedWeight>> Pack(const WeightMatrix& w);

  GgmlType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return (rows_ + kGroupRows - 1) / kGroupRows; }
  bool k_quant() const { return type_ == GgmlType::kQ4_K || type_ == GgmlType::kQ6_K; }
  // Blocks of 32 values (Q8_0, Q4_0) or super-blocks of 256 (Q4_K, Q6_K) per row.
  int64_t blocks() const { return cols_ / (k_quant() ? 256 : 32); }
  // Bytes of one block of one group: 16 fp16 scales + 512 (Q8_0) or 256 (Q4_0) value bytes;
  // Q4_K 2368, Q6_K 3360 (llm_kernels.h gemm_g16_q4_k / gemm_g16_q6_k).
  int64_t block_bytes() const {
    switch (type_) {
      case GgmlType::kQ8_0: return 32 + 512;
      case GgmlType::kQ4_0: return 32 + 256;
      case GgmlType::kQ4_K: return 2368;
      default: return 3360;
    }
  }
  const uint8_t* group(int64_t g) const { return data_.get() + g * blocks() * block_bytes(); }
  uint64_t bytes() const { return static_cast<uint64_t>(groups() * blocks() * block_bytes()); }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  GgmlType type_ = GgmlType::kQ8_0;
  int64_t rows_ = 0, cols_ = 0;
  std::unique_ptr<uint8_t[], Free> data_;
};

// True when this CPU has AMX-INT8 (and AVX-512 VNNI), the OS granted this process the tile state
// (Linux arch_prctl), and INFERLOOP_ISA does not lower the choice below "amx".
bool AmxAvailable();

// The same product with kernel table `k`'s group kernels (gemm_g16_q8_0 / gemm_g16_q4_0, which
// must not be null) instead of tiles: the same results.
void TableGroupMatMul(const LlmKernelTable& k, const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y,
                      int64_t y_stride, int64_t group_begin, int64_t group_end);

// The same for Q4_K / Q6_K weights (gemm_g16_q4_k / gemm_g16_q6_k, not null) and Q8_K activations.
void TableGroupMatMul(const LlmKernelTable& k, const AmxPackedWeight& w, const Q8KRows& x, int64_t T, float* Y,
                      int64_t y_stride, int64_t group_begin, int64_t group_end);

// Y[t * y_stride + r] = row r of `w` (Q8_0 or Q4_0) times activation row t, for every r in groups
// [group_begin, group_end) and t in [0, T). x.n() must equal w.cols(). Call only when
// AmxAvailable(). Uses (and releases) the calling thread's tile registers.
void AmxMatMul(const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y, int64_t y_stride, int64_t group_begin,
               int64_t group_end);

}  // namespace inferloop::llm
