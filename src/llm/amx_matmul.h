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
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "inferloop/status.h"
#include "llm/ggml_types.h"

namespace inferloop::llm {

struct WeightMatrix;
class Q8Rows;
struct LlmKernelTable;

class AmxPackedWeight {
 public:
  static constexpr int kGroupRows = 16;

  // Repacks `w` (Q8_0 or Q4_0, cols a multiple of 32); InvalidArgument for anything else.
  static Result<std::unique_ptr<AmxPackedWeight>> Pack(const WeightMatrix& w);

  GgmlType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return (rows_ + kGroupRows - 1) / kGroupRows; }
  int64_t blocks() const { return cols_ / 32; }
  // Bytes of one block of one group: 16 fp16 scales + 512 (Q8_0) or 256 (Q4_0) value bytes.
  int64_t block_bytes() const { return type_ == GgmlType::kQ8_0 ? 32 + 512 : 32 + 256; }
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

// Y[t * y_stride + r] = row r of `w` times activation row t, for every r in groups
// [group_begin, group_end) and t in [0, T). x.n() must equal w.cols(). Call only when
// AmxAvailable(). Uses (and releases) the calling thread's tile registers.
void AmxMatMul(const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y, int64_t y_stride, int64_t group_begin,
               int64_t group_end);

}  // namespace inferloop::llm
