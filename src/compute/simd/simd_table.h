// Internal to src/compute/simd: the per-instruction-set function table behind float_kernels.h.
//
// simd_scalar.cc, simd_avx2.cc and simd_avx512.cc each instantiate simd_impl.h for one vector
// type; the AVX translation units are compiled with -mavx2/-mavx512* and must only be entered
// through these tables after cpu_isa.cc checked the CPU. They define nothing else.
#pragma once

#include <cstdint>

#include "compute/simd/float_kernels.h"

namespace inferloop {
namespace simd {

struct KernelTable {
  void (*unary)(UnaryOp op, const UnaryArgs& args, const float* x, float* y, int64_t n);
  void (*binary)(BinaryOp op, const float* a, const float* b, float* y, int64_t n);
  void (*binary_scalar_a)(BinaryOp op, float a, const float* b, float* y, int64_t n);
  void (*binary_scalar_b)(BinaryOp op, const float* a, float b, float* y, int64_t n);
  // y = (x - mean) * scale + shift.
  void (*affine)(const float* x, float* y, int64_t n, float mean, float scale, float shift);
  double (*sum)(const float* x, int64_t n);
  float (*max)(const float* x, int64_t n);
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t n, bool log);
  // Softmax along n rows of stride `stride`, for columns [0, cols).
  void (*softmax_columns)(const float* x, float* y, int64_t n, int64_t stride, int64_t cols, bool log);
  void (*layer_norm_rows)(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t n,
                          float epsilon, float* mean, float* inv_std);
  // out[c * out_stride + r] = in[r * in_stride + c] for r < rows, c < cols; 32-bit elements.
  void (*transpose32)(const uint32_t* in, int64_t in_stride, uint32_t* out, int64_t out_stride, int64_t rows,
                      int64_t cols);
  void (*halving_max)(const float* in, int64_t row_stride, int64_t depth_stride, bool three_d, float* out,
                      int64_t out_rows, int64_t n);
};

const KernelTable* ScalarTable();
// Call these two (and their functions) only when the CPU has AVX2 + FMA / AVX-512 F, BW, VL, DQ.
const KernelTable* Avx2Table();
const KernelTable* Avx512Table();

// The table of ActiveIsa().
const KernelTable& ActiveTable();

}  // namespace simd
}  // namespace inferloop
