// Shared helpers of the nn kernel family (nn_*.cc): float compute types, convolution/pooling
// geometry (auto_pad, pads, strides, dilations, ceil_mode) and a small blocked GEMM used by the
// im2col convolutions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel.h"
#include "compute/kernel_registry.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace nn {

void RegisterConvKernels(KernelRegistry& r);
void RegisterPoolKernels(KernelRegistry& r);
void RegisterNormKernels(KernelRegistry& r);

// ---------------------------------------------------------------------------------------------
// Float compute types: float16/bfloat16/float compute in float, double in double.

inline bool IsFloatLike(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}
inline DataType ComputeTypeOf(DataType t) { return t == DataType::kDouble ? DataType::kDouble : DataType::kFloat; }

// `t` converted to `to` (shares the buffer when already of that type).
inline Result<Tensor> ConvertTo(const Tensor& t, DataType to) {
  if (t.dtype() == to) return t;
  return CastTensor(t, to);
}

// Calls f(TypeTag<T>{}) with T = float or double, the compute type of float-like `t`;
// an Unimplemented error naming `what` for other dtypes.
template <typename F>
Status DispatchFloatCompute(DataType t, const char* what, F&& f) {
  if (!IsFloatLike(t)) return UnsupportedType(what, t);
  if (t == DataType::kDouble) return f(TypeTag<double>{});
  return f(TypeTag<float>{});
}

// Sets output i to `t` converted to dtype `want` (no-op conversion when equal).
inline Status SetOutputAs(KernelContext& ctx, int i, Tensor t, DataType want) {
  if (t.dtype() == want) {
    ctx.SetOutput(i, std::move(t));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor c, CastTensor(t, want));
  ctx.SetOutput(i, std::move(c));
  return Status::Ok();
}

inline std::string VecToString(const std::vector<int64_t>& v) { return ShapeToString(v); }

// Floor division for possibly negative numerators (positive d).
inline int64_t FloorDiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }
inline int64_t CeilDiv(int64_t a, int64_t d) { return -FloorDiv(-a, d); }

// ---------------------------------------------------------------------------------------------
// Window attributes shared by Conv*, pooling and DeformConv.

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape;  // may be empty (Conv: taken from W)
  std::vector<int64_t> strides;       // empty: all 1
  std::vector<int64_t> dilations;     // empty: all 1
  std::vector<int64_t> pads;          // empty: all 0; else begins then ends
  int64_t group = 1;
  bool ceil_mode = false;
};

// Reads and validates auto_pad, kernel_shape, strides, dilations, pads, group, ceil_mode.
// require_kernel: pooling ops need kernel_shape.
Result<WindowAttrs> ParseWindowAttrs(const KernelInfo& info, bool require_kernel);

// Resolved geometry for one call: nd spatial dims.
struct WindowGeom {
  int nd = 0;
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  int64_t in_size() const { return Prod(in); }
  int64_t out_size() const { return Prod(out); }
  int64_t kernel_size() const { return Prod(kernel); }
  static int64_t Prod(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  }
};

// Conv-style geometry (floor output size; SAME pads from the dilated kernel).
// `kernel` is the spatial kernel (from W or the attribute); errors when the window does not fit.
// pool_style: ceil_mode honoured and, for SAME, out = ceil(in / stride).
Result<WindowGeom> ResolveWindow(const KernelContext& ctx, const WindowAttrs& a, const Shape& in_spatial,
                                 const std::vector<int64_t>& kernel, bool pool_style);

// ---------------------------------------------------------------------------------------------
// GEMM: C[m, n] += sum_k A(m, k) * B[k * ldb + n], A(m, k) = A[m * a_m + k * a_k].
// Row-major B and C, A in any layout (strides), rows of C blocked by 4 for register reuse.
template <typename T>
void GemmAccumulate(int64_t M, int64_t N, int64_t K, const T* A, int64_t a_m, int64_t a_k, const T* B, int64_t ldb,
                    T* C, int64_t ldc) {
  constexpr int64_t kKc = 256, kNc = 1024;
  for (int64_t n0 = 0; n0 < N; n0 += kNc) {
    const int64_t n1 = std::min(N, n0 + kNc);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      const int64_t k1 = std::min(K, k0 + kKc);
      int64_t m = 0;
      for (; m + 4 <= M; m += 4) {
        T* c0 = C + m * ldc;
        T* c1 = c0 + ldc;
        T* c2 = c1 + ldc;
        T* c3 = c2 + ldc;
        for (int64_t k = k0; k < k1; ++k) {
          const T a0 = A[m * a_m + k * a_k], a1 = A[(m + 1) * a_m + k * a_k];
          const T a2 = A[(m + 2) * a_m + k * a_k], a3 = A[(m + 3) * a_m + k * a_k];
          const T* b = B + k * ldb;
          for (int64_t n = n0; n < n1; ++n) {
            const T bv = b[n];
            c0[n] += a0 * bv;
            c1[n] += a1 * bv;
            c2[n] += a2 * bv;
            c3[n] += a3 * bv;
          }
        }
      }
      for (; m < M; ++m) {
        T* c0 = C + m * ldc;
        for (int64_t k = k0; k < k1; ++k) {
          const T a0 = A[m * a_m + k * a_k];
          const T* b = B + k * ldb;
          for (int64_t n = n0; n < n1; ++n) c0[n] += a0 * b[n];
        }
      }
    }
  }
}

// Number of im2col columns per tile for a K-row column buffer (bounds scratch memory).
inline int64_t ColumnTile(int64_t K, int64_t N) {
  const int64_t budget = int64_t{1} << 21;  // elements
  int64_t t = std::max<int64_t>(64, budget / std::max<int64_t>(1, K));
  return std::min(t, std::max<int64_t>(1, N));
}

}  // namespace nn
}  // namespace inferloop
