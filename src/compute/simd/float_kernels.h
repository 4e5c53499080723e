// Vectorized, multi-threaded float32 kernels: elementwise math, softmax, layer normalization,
// row reductions. Each call runs on the instruction set chosen by cpu_isa.h (AVX-512, AVX2 or
// portable scalar code) and splits large inputs over `pool` (nullptr: the calling thread only).
//
// Accuracy: arithmetic ops, Sqrt, Reciprocal and the piecewise-linear activations are exact
// (IEEE results, NaN propagates like the ONNX reference kernels). Exp, Log, Tanh, Sigmoid and
// Erf are polynomial approximations within a few ulp of the correctly rounded result over the
// whole float range, with IEEE behaviour at 0, infinities and NaN; results do not depend on
// the instruction set beyond the last bit (FMA contraction).
//
// Output buffers may alias their input exactly (in place) but must not partially overlap.
#pragma once

#include <cstdint>

namespace inferloop {

class ThreadPool;

namespace simd {

enum class UnaryOp : int {
  kRelu,         // max(x, 0)
  kLeakyRelu,    // x < 0 ? alpha * x : x
  kClip,         // min(max(x, alpha), beta); bounds must not be NaN
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kErf,
  kSqrt,
  kReciprocal,   // 1 / x
  kNeg,
  kAbs,
  kSquare,       // x * x
  kHardSigmoid,  // clamp(alpha * x + beta, 0, 1)
  kHardSwish,    // x * clamp(x / 6 + 0.5, 0, 1)
  kGelu,         // 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh,     // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
};
struct UnaryArgs {
  float alpha = 0.f;
  float beta = 0.f;
};

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv };

// y[i] = op(x[i]).
void Unary(ThreadPool* pool, UnaryOp op, const float* x, float* y, int64_t n, UnaryArgs args = {});

// y[i] = op(a[i], b[i]); BinaryScalarA: op(a, b[i]); BinaryScalarB: op(a[i], b).
void Binary(ThreadPool* pool, BinaryOp op, const float* a, const float* b, float* y, int64_t n);
void BinaryScalarA(ThreadPool* pool, BinaryOp op, float a, const float* b, float* y, int64_t n);
void BinaryScalarB(ThreadPool* pool, BinaryOp op, const float* a, float b, float* y, int64_t n);

// Numpy-broadcasting y = op(a, b): shapes are given outermost first (ranks may differ; the
// output shape must be their broadcast). Returns false, touching nothing, when the shapes are
// outside what this path handles (rank above 8): the caller then uses its generic loop.
bool BinaryBroadcast(ThreadPool* pool, BinaryOp op, const float* a, const int64_t* a_shape, int a_rank, const float* b,
                     const int64_t* b_shape, int b_rank, float* y, const int64_t* y_shape, int y_rank);

// y = (x - mean) * scale + shift over rows of `n` floats: row r uses element
// r % period of mean/scale/shift (BatchNormalization: period = channels, n = spatial size).
void ChannelAffine(ThreadPool* pool, const float* x, float* y, int64_t rows, int64_t n, int64_t period,
                   const float* mean, const float* scale, const float* shift);

// Softmax (or LogSoftmax) of each of `rows` contiguous rows of n floats, max-subtracted.
void SoftmaxRows(ThreadPool* pool, const float* x, float* y, int64_t rows, int64_t n, bool log);
// Softmax along the middle axis of [outer, n, inner] (inner > 1): stride `inner` between the
// n elements of one softmax.
void SoftmaxStrided(ThreadPool* pool, const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log);

// LayerNormalization of `rows` rows of n floats: y = (x - mean) / sqrt(var + eps) * scale + bias
// (bias may be null). mean / inv_std (may be null) receive each row's statistics.
void LayerNormRows(ThreadPool* pool, const float* x, const float* scale, const float* bias, float* y, int64_t rows,
                   int64_t n, float epsilon, float* mean, float* inv_std);

// out[r] = multiplier * (sum of row r), rows of n contiguous floats (accumulated in double
// per block, so long rows keep their precision).
void SumRows(ThreadPool* pool, const float* x, int64_t rows, int64_t n, double multiplier, float* out);

// MaxPool's 2 x 2 (three_d false) or 2 x 2 x 2 window with stride 2 over one plane: `out_rows`
// rows of n outputs (out, row after row), output row r from input rows
//   rows = {in + 2r * row_stride, + row_stride, and for 3-D + depth_stride, + depth_stride + row_stride}:
// out[r * n + j] is rows[0][2j], replaced in turn by each of rows[0][2j + 1], rows[k][2j],
// rows[k][2j + 1] (k = 1, 2, 3) that is greater: the first of equal values wins, and a NaN only
// as the window's first value. Each input row holds at least 2n floats. Single-threaded.
void HalvingMax(const float* in, int64_t row_stride, int64_t depth_stride, bool three_d, float* out, int64_t out_rows,
                int64_t n);

// Single-threaded reductions over n floats: the sum (in double) and the maximum (-inf when
// n == 0; NaN when any element is NaN).
double Sum(const float* x, int64_t n);
float Max(const float* x, int64_t n);

}  // namespace simd
}  // namespace inferloop
