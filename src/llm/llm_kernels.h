// Vector kernels of the LLM engine: dot products of one stored weight row (F32, F16, Q8_0, Q4_0,
// Q4_K, Q6_K) with an activation row, in AVX-512 VNNI, AVX2 and scalar versions chosen once from CPUID.
// INFERLOOP_ISA=avx512|avx2|scalar lowers the choice (as for the tensor kernels), so tests cover
// every path on one machine.
//
// Quantized weights are multiplied with activations quantized to int8 in blocks of 32 (Q8Row):
// per block, x ~= d * q with d = max|x| / 127, so a block's dot is d_w * d_x * sum(q_w * q_x),
// computed in int32.
//
// Q4_K and Q6_K weights (super-blocks of 256, sub-block scales of 32 resp. 16 values) are
// multiplied with activations quantized as llama.cpp's Q8_K instead (Q8KRow): one float scale per
// 256 values and the sums of each 16 values. Why not Q8Row: llama.cpp pairs these weight types
// with Q8_K, and what a greedy generation picks depends on how the activations were rounded:
// Q8Row's blocks of 32 with half-precision scales round differently from Q8_K's blocks of 256
// with a float scale, and on a Q4_K_M file that changes argmax choices within a few tokens
// (measured: the float reference path, also different, departs from llama.cpp after 3-8 tokens on
// tests/e2e's Q4_K_M fixture). With Q8_K every integer sum equals llama.cpp's exactly, and the
// K-quant dots of every table also add their float terms in the order of llama.cpp's x86 kernels
// (llm_kernels_scalar.cc describes it), so they equal llama.cpp's results bit for bit
// (tests/unit/llm/kquant_llama_cpp_test.cc checks against llama.cpp's own library). Q8_K
// quantization is one scalar function shared by every ISA (Q8KRows::Quantize), so all tables see
// the same int8 values.
#pragma once

#include <cstdint>
#include <vector>

namespace inferloop::llm {

// One activation row quantized in blocks of 32 (n a multiple of 32).
struct Q8Row {
  const int8_t* q = nullptr;   // n values
  const float* d = nullptr;    // n / 32 block scales
  const float* sum = nullptr;  // n / 32: d * sum(q) of each block (for weight zero offsets)
  const int32_t* qsum = nullptr;  // n / 32: sum(q) of each block
  // Per pair of blocks (64 values; only when n % 64 == 0), 16 lanes laid out as the 16 int32
  // sums of vpdpbusd: lanes 0-7 belong to the first block, 8-15 to the second.
  const int32_t* lane_nsum = nullptr;  // -sum(q) of the lane's block
  const float* lane_d = nullptr;       // d of the lane's block
  // The same per pair of blocks in Q4_0's nibble order: values as [b0 0-15, b1 0-15, b0 16-31,
  // b1 16-31], lanes 0-3 and 8-11 belonging to the first block, 4-7 and 12-15 to the second.
  const int8_t* q4 = nullptr;
  const int32_t* lane_nsum4 = nullptr;
  const float* lane_d4 = nullptr;
};

// What the quantized row sets below have in common: `rows` rows of `n` int8 values (64 bytes of
// slack at the end for vector loads), and one float scale per block of values.
class Int8RowStorage {
 public:
  int64_t n() const { return n_; }
  int64_t rows() const { return rows_; }

 protected:
  // Sizes q_ and d_ for `rows` rows of `n` values in blocks of `block`.
  void ResizeValues(int64_t rows, int64_t n, int64_t block);

  int64_t n_ = 0;
  int64_t rows_ = 0;
  std::vector<int8_t> q_;
  std::vector<float> d_;
};

// Owns the storage of `rows` quantized rows of `n` values each.
class Q8Rows : public Int8RowStorage {
 public:
  void Resize(int64_t rows, int64_t n);
  // Quantizes row `r` from `x` (n floats).
  void Quantize(int64_t r, const float* x);
  Q8Row Row(int64_t r) const;

 private:
  std::vector<float> sum_;
  std::vector<int32_t> qsum_;
  std::vector<int32_t> lane_nsum_, lane_nsum4_;
  std::vector<float> lane_d_, lane_d4_;
  std::vector<int8_t> q4_;
};

// One activation row quantized as llama.cpp's Q8_K, for Q4_K / Q6_K weights (n a multiple of 256).
// Per block of 256: m = the value of largest magnitude (the first one), q = round(-127 / m * x)
// (ties to even, at most 127), d = 1 / (-127 / m), so x ~= d * q; an all-zero block has d = 0.
struct Q8KRow {
  const int8_t* q = nullptr;        // n values
  const float* d = nullptr;         // n / 256 block scales
  const int16_t* bsum = nullptr;    // n / 16: sum of each 16 consecutive q
  const int16_t* bsum32 = nullptr;  // n / 32: sum of each 32 consecutive q (bsum in pairs)
};

// Owns the storage of `rows` Q8_K rows of `n` values each (n % 256 == 0).
class Q8KRows : public Int8RowStorage {
 public:
  void Resize(int64_t rows, int64_t n);
  // Quantizes row `r` from `x` (n floats): the table's quantize_q8_k, the same bytes on every ISA.
  void Quantize(int64_t r, const float* x);
  Q8KRow Row(int64_t r) const {
    return {q_.data() + r * n_, d_.data() + r * n_ / 256, bsum_.data() + r * n_ / 16, bsum32_.data() + r * n_ / 32};
  }

 private:
  std::vector<int16_t> bsum_;
  std::vector<int16_t> bsum32_;
};

struct LlmKernelTable {
  const char* name;
  float (*dot_f32)(const float* w, const float* x, int64_t n);
  float (*dot_f16)(const uint16_t* w, const float* x, int64_t n);
  float (*dot_q8_0)(const uint8_t* w, const Q8Row& x, int64_t n);  // n % 32 == 0
  float (*dot_q4_0)(const uint8_t* w, const Q8Row& x, int64_t n);  // n % 32 == 0
  void (*quantize_q8)(const float* x, int64_t n, int8_t* q, float* d, float* sum);
  // y += a * x for half-float x (attention's weighted sum of cached values).
  void (*axpy_f16)(float a, const uint16_t* x, float* y, int64_t n);
  // Floats to half floats, rounding to nearest even (what the KV cache stores).
  void (*to_f16)(const float* x, uint16_t* y, int64_t n);
  // Matrix products for several activation rows at once (prefill, batched decode): for weight
  // rows [0, rows) of `w` (row_bytes apart) and activation rows [0, T) of `x` (n % 64 == 0),
  // Y[t * y_stride + r] = dot(row r, x row t). Each weight block is unpacked once for up to 8
  // activation rows. Null when the table has none (the dot kernels are used per row).
  void (*gemm_q8_0)(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Rows& x, int64_t T, float* Y,
                    int64_t y_stride);
  void (*gemm_q4_0)(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Rows& x, int64_t T, float* Y,
                    int64_t y_stride);
  // y += a * x for x in Q8_0 blocks (attention's weighted sum of a Q8_0 KV cache's values),
  // n % 32 == 0: each value is dequantized to v = d * q in float, then y = fma(v, a, y).
  void (*axpy_q8_0)(float a, const uint8_t* x, float* y, int64_t n);
  // K-quant weights times Q8_K activations (n % 256 == 0): one row, and the batched form as above
  // (null when the table has none; then the dots are used per row and activation row).
  float (*dot_q4_k)(const uint8_t* w, const Q8KRow& x, int64_t n);
  float (*dot_q6_k)(const uint8_t* w, const Q8KRow& x, int64_t n);
  void (*gemm_q4_k)(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8KRows& x, int64_t T, float* Y,
                    int64_t y_stride);
  void (*gemm_q6_k)(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8KRows& x, int64_t T, float* Y,
                    int64_t y_stride);
  // Products with Q8_0 / Q4_0 weights repacked at load in groups of 16 rows (amx_matmul.h's layout:
  // per block of 32 values, the 16 rows' fp16 scales, then value k of row i at byte
  // (k / 4) * 64 + i * 4 + k % 4; Q4_0 keeps two values per byte, value j and j + 16), so that one
  // broadcast of 4 activation bytes feeds 16 rows (AVX-512 VNNI) or 8 (AVX2). `groups` consecutive
  // groups from `w`; writes Y[t * y_stride + r] for r in [0, rows) (rows <= 16 * groups; the last
  // group may be partial) and t in [0, T). Per (row, token) the result is exactly
  //   acc = 0; for each block b: acc = fma(float(dot_b), d_w[b] * d_x[b], acc)
  // with dot_b the exact int32 dot of the block: the AMX kernels' result, whatever T is (batch
  // invariance). Null when the table has none (weights are then not repacked).
  void (*gemm_g16_q8_0)(const uint8_t* w, int64_t groups, int64_t rows, const Q8Rows& x, int64_t T, float* Y,
                        int64_t y_stride);
  void (*gemm_g16_q4_0)(const uint8_t* w, int64_t groups, int64_t rows, const Q8Rows& x, int64_t T, float* Y,
                        int64_t y_stride);
  // Products with Q4_K / Q6_K weights repacked at load in groups of 16 rows (amx_pack.cc), the
  // same call as above with Q8_K activations: one "block" per super-block of 256 values. A 64-byte
  // "column vector" holds 4 bytes of each of the 16 rows (row i at bytes 4i..4i+3) for the 4
  // values of one 4-value column; column l (0..7) of a super-block is the values at positions p
  // with p % 32 in [4l, 4l + 4). Per super-block of a group:
  //   Q4_K (2368 bytes): [0, 32) the rows' fp16 d; [32, 64) fp16 dmin; [64, 192) the 6-bit
  //     scales, sub-block s of row i at 64 + 16s + i; [192, 320) the mins in pairs, mins 2j and
  //     2j+1 of row i at 192 + 32j + 2i; [320, 2368) the nibbles: column vector (c, l) at
  //     320 + 64 (4l + c) holds the file's bytes 32c + 4l .. 32c + 4l + 3 (low nibble: sub-block
  //     2c, high: 2c + 1).
  //   Q6_K (3360 bytes): [0, 32) fp16 d; [32, 288) the int8 scales in pairs, scales 2k and 2k + 1
  //     of row i at 32 + 32k + 2i; [288, 3360) column l's 384-byte step at 288 + 384l: first the
  //     top 2 bits, vector (j, l) for j = 0, 1 at 288 + 384l + 64j, bits 2u..2u+1 of byte e those
  //     of position 32 (4j + u) + 4l + e; then the low 4 bits, vector (j, l) for j = 0..3 at
  //     288 + 384l + 128 + 64j, holding those of positions 32 (2j) + 4l + e (low nibble) and
  //     32 (2j + 1) + 4l + e (high).
  //   The vectors are in the order the tiles read them, so a super-block is one sequential
  //     stream. Ordered by j first (8j + l), the reads jumped 512 bytes within a step, and one
  //     AMD EPYC core streamed a 65536 x 2048 Q4_K matrix at 1 token in 8.3-10.1 ms against
  //     4.9-5.7 ms in reading order (bench_llm_matmul, busy machine). Q6_K's top bits after all
  //     the low bits (two streams) took 4.8-5.7 ms against 3.2-4.5 ms interleaved (6 alternating
  //     runs, 2026-12-03).
  // Per (row, token), whatever T is and on every table that has them: per super-block b the
  // exact int32 totals over its sub-blocks s (scales sc_s, Q4_K mins m_s, weights q_i, activation
  // values x_i, the activation's sums xs_s over each sub-block),
  //   Q4_K: tot = sum_s sc_s * sum_(i in s) q_i x_i,  mins = sum_s m_s * xs_s,
  //         acc = fma(c - a * b rounded once with a = dmin_b, b = float(mins), c = d_b * float(tot),
  //                   d_x[b], acc)
  //   Q6_K: tot = sum_s sc_s * sum_(i in s) (q_i - 32) x_i,  acc = fma(d_b * float(tot), d_x[b], acc)
  // from acc = 0. Within float rounding of dot_q4_k / dot_q6_k (llama.cpp's eight lanes, a float
  // fma per lane), not their bits: summing a sub-block before its scale takes one multiply
  // instruction per 64 products (vpdpbusd; AVX2 vpmaddubsw with int16 adds) instead of two.
  void (*gemm_g16_q4_k)(const uint8_t* w, int64_t groups, int64_t rows, const Q8KRows& x, int64_t T, float* Y,
                        int64_t y_stride);
  void (*gemm_g16_q6_k)(const uint8_t* w, int64_t groups, int64_t rows, const Q8KRows& x, int64_t T, float* Y,
                        int64_t y_stride);
  // One activation row as llama.cpp's quantize_row_q8_K (n % 256 == 0), what Q8KRows::Quantize
  // stores: per super-block of 256, m = the first value of the largest magnitude (NaN ignored),
  // q = nearbyint(x * (-127 / m)) bounded to [-127, 127] (NaN -> 0), d = 1 / (-127 / m), and
  // bsum = the sums of the q in 16-value blocks; an all-zero super-block gives d = 0 and zeros.
  // Every table gives the same bytes.
  void (*quantize_q8_k)(const float* x, int64_t n, int8_t* q, float* d, int16_t* bsum);
  // Attention's steps for the query heads that share one key/value head, over `rows` cached rows
  // (x_stride / w_stride apart), each row converted once for all heads. dot_f16_rows: out[g *
  // out_stride + r] = dot_f16(w + r * w_stride, x + g * n, n) for r < rows, g < heads.
  // axpy_f16_rows: for rows r = 0, 1, ... in order and g < heads, axpy_f16(a[g * a_stride + r],
  // x + r * x_stride, y + g * n, n) (the weighted sum of the cached values). Each result is bit for
  // bit that of the single calls.
  void (*dot_f16_rows)(const uint16_t* w, int64_t w_stride, int rows, const float* x, int64_t n, int heads, float* out,
                       int64_t out_stride);
  void (*axpy_f16_rows)(const float* a, int64_t a_stride, const uint16_t* x, int64_t x_stride, int rows, float* y,
                        int64_t n, int heads);
  // dot_q8_0_rows: out[g * out_stride + r] = dot_q8_0(w + r * w_stride, x[g], n) for r < rows,
  // g < heads (w_stride in bytes; a Q8_0 KV cache's key rows), each bit for bit the single call's:
  // one call per block of cached rows instead of one per (row, head).
  void (*dot_q8_0_rows)(const uint8_t* w, int64_t w_stride, int rows, const Q8Row* x, int heads, int64_t n, float* out,
                        int64_t out_stride);
  // axpy_q8_0(a[g], x, y + g * n, n) for g < heads, x dequantized once for all heads; each
  // head's result bit for bit the single call's.
  void (*axpy_q8_0_heads)(const float* a, const uint8_t* x, float* y, int64_t n, int heads);
  // Attention's weights from one head's n >= 1 scores s, mx their maximum: s[j] = e_j / sum(e) with
  // e_j = exp(s[j] - mx) (base/simd/vec_exp.h, within 2 ulp), each rounded to half precision (what
  // the F16 cache's values are summed with) and stored back as a float.
  void (*softmax_weights_f16)(float* s, int64_t n, float mx);
  // Attention's scores scaled in place, s[j] *= scale, returning the largest of them (NaN scores
  // are passed over; -inf when all are NaN).
  float (*scale_max)(float* s, int64_t n, float scale);
  // The feed-forward gate: y[i] = g / (1 + e) * up[i] with g = gate[i], e = exp(-g) (vec_exp.h,
  // within 2 ulp), as llama.cpp's vector SiLU computes it. y may be gate or up (in place).
  void (*swiglu)(const float* gate, const float* up, float* y, int64_t n);
};

// The table in use (detected ISA lowered by INFERLOOP_ISA).
const LlmKernelTable& ActiveLlmKernels();
// All tables this CPU can run, best first (tests compare them).
std::vector<const LlmKernelTable*> AvailableLlmKernels();

// Per-ISA tables (llm_kernels_*.cc); nullptr when not compiled in.
const LlmKernelTable* ScalarLlmKernels();
const LlmKernelTable* Avx2LlmKernels();
const LlmKernelTable* Avx512VnniLlmKernels();

}  // namespace inferloop::llm
