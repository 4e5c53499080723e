#include "compute/kernels/fused_attention_gemm.h"

#include <cstring>

// Vector types here are only ever used inside functions compiled for their instruction set.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "compute/simd/cpu_isa.h"

namespace inferloop {
namespace {

// W floats as one vector (GCC/clang vector extension); the target of the calling function
// decides the instructions.
template <int W>
struct Vec {
  typedef float type __attribute__((vector_size(W * sizeof(float))));
};

template <int W>
__attribute__((always_inline)) inline typename Vec<W>::type Load(const float* p) {
  typename Vec<W>::type v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <int W>
__attribute__((always_inline)) inline void Store(float* p, typename Vec<W>::type v) {
  std::memcpy(p, &v, sizeof(v));
}

// C[R rows][CV*W] = alpha * A[R][K] * B[K][CV*W] (rows beyond R untouched).
template <int W, int R, int CV>
__attribute__((always_inline)) inline void Tile(int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                                                int64_t ldb, float* C, int64_t ldc) {
  using V = typename Vec<W>::type;
  V acc[R][CV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) acc[r][c] = V{};
  for (int64_t k = 0; k < K; ++k) {
    V b[CV];
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) b[c] = Load<W>(B + k * ldb + c * W);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float a = A[r * lda + k];  // scalar * vector: a broadcast (V{} + a would add 0)
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) acc[r][c] += a * b[c];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) Store<W>(C + r * ldc + c * W, acc[r][c] * alpha);
}

// Columns [j0, N) that do not fill a tile, rows [i0, i0 + rows).
__attribute__((always_inline)) inline void EdgeColumns(int64_t i0, int64_t rows, int64_t j0, int64_t N, int64_t K,
                                                       float alpha, const float* A, int64_t lda, const float* B,
                                                       int64_t ldb, float* C, int64_t ldc) {
  for (int64_t i = i0; i < i0 + rows; ++i) {
    float* c = C + i * ldc;
    for (int64_t j = j0; j < N; ++j) c[j] = 0.f;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * lda + k];
      const float* b = B + k * ldb;
      for (int64_t j = j0; j < N; ++j) c[j] += a * b[j];
    }
    for (int64_t j = j0; j < N; ++j) c[j] *= alpha;
  }
}

// Rows [i, i + R) of C, in tiles of CV*W columns, then single vectors, then scalars.
template <int W, int R, int CV>
__attribute__((always_inline)) inline void RowBlock(int64_t i, int64_t N, int64_t K, float alpha, const float* A,
                                                    int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  const float* a = A + i * lda;
  float* c = C + i * ldc;
  int64_t j = 0;
  for (; j + CV * W <= N; j += CV * W) Tile<W, R, CV>(K, alpha, a, lda, B + j, ldb, c + j, ldc);
  for (; j + W <= N; j += W) Tile<W, R, 1>(K, alpha, a, lda, B + j, ldb, c + j, ldc);
  if (j < N) EdgeColumns(i, R, j, N, K, alpha, A, lda, B, ldb, C, ldc);
}

// Row blocks of RT rows (RT in 1..8), then 4, 2 and 1; RT * CV accumulators must fit the
// registers.
template <int W, int RT, int CV>
__attribute__((always_inline)) inline void Gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                                                int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  int64_t i = 0;
  for (; i + RT <= M; i += RT) RowBlock<W, RT, CV>(i, N, K, alpha, A, lda, B, ldb, C, ldc);
  if (RT > 4 && i + 4 <= M) {
    RowBlock<W, 4, CV>(i, N, K, alpha, A, lda, B, ldb, C, ldc);
    i += 4;
  }
  if (i + 2 <= M) {
    RowBlock<W, 2, CV>(i, N, K, alpha, A, lda, B, ldb, C, ldc);
    i += 2;
  }
  if (i < M) RowBlock<W, 1, CV>(i, N, K, alpha, A, lda, B, ldb, C, ldc);
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f"))) void GemmAvx512(int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                                                   int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  Gemm<16, 8, 2>(M, N, K, alpha, A, lda, B, ldb, C, ldc);  // 16 of the 32 zmm registers accumulate
}
__attribute__((target("avx2,fma"))) void GemmAvx2(int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                                                  int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  Gemm<8, 4, 2>(M, N, K, alpha, A, lda, B, ldb, C, ldc);  // 8 of the 16 ymm registers accumulate
}
#endif
void GemmBaseline(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                  float* C, int64_t ldc) {
  Gemm<4, 4, 2>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

}  // namespace

void AttentionGemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                   float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
#if defined(__x86_64__) || defined(__i386__)
  switch (simd::ActiveIsa()) {
    case simd::Isa::kAvx512: GemmAvx512(M, N, K, alpha, A, lda, B, ldb, C, ldc); return;
    case simd::Isa::kAvx2: GemmAvx2(M, N, K, alpha, A, lda, B, ldb, C, ldc); return;
    case simd::Isa::kScalar: break;
  }
#endif
  GemmBaseline(M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

}  // namespace inferloop
