// Registration of the matmul kernel family: MatMul and Gemm here; Einsum in
// matmul_einsum_kernels.cc; MatMulInteger and QLinearMatMul in matmul_quant_kernels.cc.
#include <string>
#include <type_traits>
#include <vector>

#include "base/status_macros.h"
#include "compute/broadcast.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/dnnl_kernels.h"
#include "compute/kernels/matmul_internal.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

using matmul::GemmNN;

// float16/bfloat16 inputs run in float32; returns the tensor to compute with.
Result<Tensor> ComputeCopy(const Tensor& t) {
  if (IsFloat16Like(t.dtype())) return ToFloat32(t);
  return t;
}

Status ComputeMatMul(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(1));
  if (a->dtype() != b->dtype())
    return ctx.Invalid(std::string("A and B must have the same dtype, got ") + DataTypeName(a->dtype()) + " and " +
                       DataTypeName(b->dtype()));
  matmul::MatMulPlan plan;
  std::string err = matmul::PlanMatMul(a->shape(), b->shape(), &plan);
  if (!err.empty()) return ctx.Invalid(err);
  const DataType dt = a->dtype();
  IL_ASSIGN_OR_RETURN(Tensor ca, ComputeCopy(*a));
  IL_ASSIGN_OR_RETURN(Tensor cb, ComputeCopy(*b));
  const DataType cdt = ca.dtype();
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(cdt, plan.out_shape));
  IL_RETURN_IF_ERROR(DispatchNumeric(
      cdt,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        matmul::RunMatMul<T>(plan, ca.data<T>(), cb.data<T>(), out.data<T>());
        return Status::Ok();
      },
      "MatMul"));
  if (cdt != dt) {
    IL_ASSIGN_OR_RETURN(out, CastTensor(out, dt));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

struct GemmConfig {
  bool trans_a, trans_b;
  float alpha, beta;
};

// Row-major transpose of a rows x cols matrix.
template <typename T>
void Transpose2D(const T* src, int64_t rows, int64_t cols, T* dst) {
  constexpr int64_t kB = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kB)
    for (int64_t j0 = 0; j0 < cols; j0 += kB)
      for (int64_t i = i0; i < std::min(rows, i0 + kB); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kB); ++j) dst[j * rows + i] = src[i * cols + j];
}

template <typename T>
Status GemmTyped(KernelContext& ctx, const GemmConfig& g, const Tensor& a, const Tensor& b, const Tensor* c, int64_t M,
                 int64_t N, int64_t K, Tensor* result) {
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(a.dtype(), {M, N}));
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  Tensor ta, tb;
  if (g.trans_a) {
    IL_ASSIGN_OR_RETURN(ta, ctx.Allocate(a.dtype(), {M, K}));
    Transpose2D<T>(pa, K, M, ta.data<T>());
    pa = ta.data<T>();
  }
  if (g.trans_b) {
    IL_ASSIGN_OR_RETURN(tb, ctx.Allocate(b.dtype(), {K, N}));
    Transpose2D<T>(pb, N, K, tb.data<T>());
    pb = tb.data<T>();
  }
  T* py = y.data<T>();
  GemmNN<T>(M, N, K, pa, K, pb, N, py, N);
  using S = std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<std::is_same_v<T, float>, float, double>>;
  const S alpha = static_cast<S>(g.alpha), beta = static_cast<S>(g.beta);
  const int64_t n = M * N;
  if (g.alpha != 1.0f) {
    for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(alpha * static_cast<S>(py[i]));
  }
  if (c) {
    const T* pc = c->data<T>();
    std::vector<int64_t> cs = BroadcastStrides(c->shape(), {M, N});
    for (int64_t i = 0; i < M; ++i) {
      T* row = py + i * N;
      const T* crow = pc + i * cs[0];
      if (g.beta == 1.0f) {
        for (int64_t j = 0; j < N; ++j) row[j] += crow[j * cs[1]];
      } else {
        for (int64_t j = 0; j < N; ++j)
          row[j] = static_cast<T>(static_cast<S>(row[j]) + beta * static_cast<S>(crow[j * cs[1]]));
      }
    }
  }
  *result = std::move(y);
  return Status::Ok();
}

Status ComputeGemm(KernelContext& ctx, const GemmConfig& g) {
  IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(1));
  const Tensor* c = ctx.input(2);
  if (a->rank() != 2 || b->rank() != 2)
    return ctx.Invalid("A and B must be 2-D, got " + ShapeToString(a->shape()) + " and " + ShapeToString(b->shape()));
  const DataType dt = a->dtype();
  if (b->dtype() != dt || (c && c->dtype() != dt))
    return ctx.Invalid(std::string("A, B and C must have the same dtype, got ") + DataTypeName(dt) + ", " +
                       DataTypeName(b->dtype()) + (c ? std::string(", ") + DataTypeName(c->dtype()) : ""));
  const int64_t M = g.trans_a ? a->dim(1) : a->dim(0);
  const int64_t K = g.trans_a ? a->dim(0) : a->dim(1);
  const int64_t Kb = g.trans_b ? b->dim(1) : b->dim(0);
  const int64_t N = g.trans_b ? b->dim(0) : b->dim(1);
  if (K != Kb)
    return ctx.Invalid("inner dimensions do not match: A " + ShapeToString(a->shape()) + (g.trans_a ? " (transposed)" : "") +
                       ", B " + ShapeToString(b->shape()) + (g.trans_b ? " (transposed)" : ""));
  if (c) {
    const Shape& cs = c->shape();
    bool ok = cs.size() <= 2;
    const Shape want = {M, N};
    for (size_t i = 0; ok && i < cs.size(); ++i) {
      int64_t w = want[2 - cs.size() + i];
      ok = cs[i] == 1 || cs[i] == w;
    }
    if (!ok)
      return ctx.Invalid("C of shape " + ShapeToString(cs) + " does not broadcast to the output shape " +
                         ShapeToString(want));
  }
  IL_ASSIGN_OR_RETURN(Tensor ca, ComputeCopy(*a));
  IL_ASSIGN_OR_RETURN(Tensor cb, ComputeCopy(*b));
  Tensor cc;
  if (c) {
    IL_ASSIGN_OR_RETURN(cc, ComputeCopy(*c));
  }
  Tensor y;
  IL_RETURN_IF_ERROR(DispatchNumeric(
      ca.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        return GemmTyped<T>(ctx, g, ca, cb, c ? &cc : nullptr, M, N, K, &y);
      },
      "Gemm"));
  if (y.dtype() != dt) {
    IL_ASSIGN_OR_RETURN(y, CastTensor(y, dt));
  }
  ctx.SetOutput(0, std::move(y));
  return Status::Ok();
}

}  // namespace

void RegisterMatmulKernels(KernelRegistry& r) {
  const KernelFactory matmul = [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) { return ComputeMatMul(ctx); });
  };
  const KernelFactory gemm = [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    GemmConfig g;
    g.trans_a = info.GetInt("transA", 0) != 0;
    g.trans_b = info.GetInt("transB", 0) != 0;
    g.alpha = info.GetFloat("alpha", 1.0f);
    g.beta = info.GetFloat("beta", 1.0f);
    if (info.opset() < 11 && !info.has_input(2)) return info.Invalid("input C is required before opset 11");
    return MakeKernel([g](KernelContext& ctx) { return ComputeGemm(ctx, g); });
  };
  // float32 runs on oneDNN (dnnl_matmul.cc); these scalar kernels keep the rest.
  r.Register("", "MatMul", 1, [matmul](const KernelInfo& i) { return dnnl_kernels::MakeMatMul(i, matmul); });
  r.Register("", "Gemm", 1, [gemm](const KernelInfo& i) { return dnnl_kernels::MakeGemm(i, gemm); });
  r.Register("com.inferloop", "FusedMatMul", 1, [matmul](const KernelInfo& i) { return dnnl_kernels::MakeFusedMatMul(i, matmul); });
  r.Register("com.inferloop", "FusedGemm", 1, [gemm](const KernelInfo& i) { return dnnl_kernels::MakeFusedGemm(i, gemm); });
  matmul::RegisterEinsumKernels(r);
  matmul::RegisterQuantMatmulKernels(r);
}

}  // namespace inferloop
