// The small dense GEMM behind com.inferloop MultiHeadAttention (fused_attention.cc):
// C[M,N] = alpha * A[M,K] * B[K,N], all row-major with leading dimensions, C overwritten.
// Register-tiled (up to 8 rows x 2 vectors of C per step) and compiled per instruction set
// (AVX-512, AVX2+FMA, baseline SSE), picked by compute/simd's ActiveIsa() at each call.
// Never allocates; thread-safe; single-threaded (callers split the work).
#pragma once

#include <cstdint>

namespace inferloop {

void AttentionGemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                   float* C, int64_t ldc);

}  // namespace inferloop
