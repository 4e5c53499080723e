// Helpers shared by the matmul kernel family (matmul_*_kernels.cc). Internal to kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compute/broadcast.h"
#include "compute/kernel_registry.h"

namespace inferloop {
namespace matmul {

// Registration entry points of the files of this family (called by RegisterMatmulKernels).
void RegisterEinsumKernels(KernelRegistry& r);        // Einsum
void RegisterQuantMatmulKernels(KernelRegistry& r);   // MatMulInteger, QLinearMatMul

// C[M,N] = A[M,K] * B[K,N]; all row-major with leading dimensions lda/ldb/ldc. C is overwritten.
// C must not overlap A or B. Blocked i-k-j loop; accumulates in T.
template <typename T>
void GemmNN(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (N == 1) {  // matrix-vector: contiguous dot products
    for (int64_t i = 0; i < M; ++i) {
      const T* a = A + i * lda;
      T acc = T(0);
      for (int64_t k = 0; k < K; ++k) acc += a[k] * B[k * ldb];
      C[i * ldc] = acc;
    }
    return;
  }
  for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, T(0));
  constexpr int64_t kKB = 128, kNB = 512;
  for (int64_t j0 = 0; j0 < N; j0 += kNB) {
    const int64_t nb = std::min(kNB, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKB) {
      const int64_t kb = std::min(kKB, K - k0);
      for (int64_t i = 0; i < M; ++i) {
        T* __restrict c = C + i * ldc + j0;
        const T* a = A + i * lda + k0;
        const T* b = B + k0 * ldb + j0;
        int64_t k = 0;
        for (; k + 4 <= kb; k += 4) {
          const T a0 = a[k], a1 = a[k + 1], a2 = a[k + 2], a3 = a[k + 3];
          const T* __restrict b0 = b + k * ldb;
          const T* __restrict b1 = b0 + ldb;
          const T* __restrict b2 = b1 + ldb;
          const T* __restrict b3 = b2 + ldb;
          for (int64_t j = 0; j < nb; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
        }
        for (; k < kb; ++k) {
          const T a0 = a[k];
          const T* __restrict b0 = b + k * ldb;
          for (int64_t j = 0; j < nb; ++j) c[j] += a0 * b0[j];
        }
      }
    }
  }
}

// Shape logic of numpy.matmul: 1-D operands are promoted (and their dim dropped from the
// output), batch dims broadcast.
struct MatMulPlan {
  int64_t M = 0, K = 0, N = 0;
  Shape out_shape;
  Shape batch;                             // broadcast batch shape
  std::vector<int64_t> a_strides, b_strides;  // per batch dim, in whole matrices
  int64_t batch_count = 1;
  bool fold_a_batch = false;               // b is a single matrix and a is not broadcast: one GEMM
};

// Error message (empty on success) describing why the shapes do not multiply.
inline std::string PlanMatMul(const Shape& a, const Shape& b, MatMulPlan* p) {
  if (a.empty() || b.empty()) return "MatMul operands must have rank >= 1, got " + ShapeToString(a) + " and " + ShapeToString(b);
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  Shape ab = a1 ? Shape{} : Shape(a.begin(), a.end() - 2);
  Shape bb = b1 ? Shape{} : Shape(b.begin(), b.end() - 2);
  p->M = a1 ? 1 : a[a.size() - 2];
  p->K = a.back();
  const int64_t kb = b1 ? b[0] : b[b.size() - 2];
  p->N = b1 ? 1 : b.back();
  if (p->K != kb)
    return "inner dimensions do not match: " + ShapeToString(a) + " x " + ShapeToString(b) + " (" + std::to_string(p->K) +
           " vs " + std::to_string(kb) + ")";
  auto batch = BroadcastShapes({ab, bb});
  if (!batch.ok()) return "batch dimensions do not broadcast: " + ShapeToString(a) + " x " + ShapeToString(b);
  p->batch = *batch;
  p->a_strides = BroadcastStrides(ab, p->batch);
  p->b_strides = BroadcastStrides(bb, p->batch);
  p->batch_count = ShapeElementCount(p->batch);
  p->out_shape = p->batch;
  if (!a1) p->out_shape.push_back(p->M);
  if (!b1) p->out_shape.push_back(p->N);
  p->fold_a_batch = ShapeElementCount(bb) == 1 && ab.size() == p->batch.size() && ab == p->batch;
  return "";
}

// out = a @ b for a plan from PlanMatMul (out holds batch_count*M*N elements).
template <typename T>
void RunMatMul(const MatMulPlan& p, const T* a, const T* b, T* out) {
  const int64_t M = p.M, K = p.K, N = p.N;
  if (p.batch_count <= 0) return;
  if (p.fold_a_batch) {
    GemmNN<T>(p.batch_count * M, N, K, a, K, b, N, out, N);
    return;
  }
  if (p.batch.empty()) {
    GemmNN<T>(M, N, K, a, K, b, N, out, N);
    return;
  }
  ForEachBroadcast2(p.batch, p.a_strides, p.b_strides, [&](int64_t i, int64_t ia, int64_t ib) {
    GemmNN<T>(M, N, K, a + ia * M * K, K, b + ib * K * N, N, out + i * M * N, N);
  });
}

}  // namespace matmul
}  // namespace inferloop
