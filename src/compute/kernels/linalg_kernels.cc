// Registration of the linear-algebra kernel family: Det.
#include <cmath>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

// Determinant of an n x n row-major matrix by LU decomposition with partial pivoting, O(n^3).
double Determinant(std::vector<double> a, int64_t n) {
  double det = 1.0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c])) pivot = r;
    if (a[pivot * n + c] == 0.0) return 0.0;
    if (pivot != c) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
      det = -det;
    }
    const double p = a[c * n + c];
    det *= p;
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / p;
      if (f == 0.0) continue;
      for (int64_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
    }
  }
  return det;
}

Status DetCompute(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  const DataType t = x->dtype();
  if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kFloat16 && t != DataType::kBFloat16)
    return ctx.Invalid(std::string("Det needs a floating-point input, got ") + DataTypeName(t));
  if (x->rank() < 2 || x->dim(x->rank() - 1) != x->dim(x->rank() - 2))
    return ctx.Invalid("Det needs square matrices in the last two dimensions, got shape " + ShapeToString(x->shape()));
  const int64_t n = x->dim(x->rank() - 1);
  Shape out_shape(x->shape().begin(), x->shape().end() - 2);
  IL_ASSIGN_OR_RETURN(Tensor xd, CastTensor(*x, DataType::kDouble));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kDouble, out_shape));
  const int64_t batch = out.size();
  const double* src = xd.data<double>();
  for (int64_t b = 0; b < batch; ++b)
    out.data<double>()[b] = Determinant(std::vector<double>(src + b * n * n, src + (b + 1) * n * n), n);
  IL_ASSIGN_OR_RETURN(Tensor result, CastTensor(out, t));
  ctx.SetOutput(0, std::move(result));
  return Status::Ok();
}

}  // namespace

void RegisterLinalgKernels(KernelRegistry& r) {
  r.Register("", "Det", 11, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> { return MakeKernel(DetCompute); });
}

}  // namespace inferloop
