// Softmax, LogSoftmax, Hardmax (part of the reduction kernel family).
//
// Opset < 13: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] (axis default 1)
// and the op runs over each row. Opset >= 13: the op runs along `axis` alone (default -1).
// Both are "outer x n x inner" loops; the old semantics simply have inner == 1.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernels/reduction_internal.h"
#include "compute/simd/float_kernels.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace reduction {
namespace {

enum class SmKind { kSoftmax, kLogSoftmax, kHardmax };

template <typename T>
void SoftmaxTyped(const T* px, T* py, int64_t outer, int64_t n, int64_t inner, SmKind kind) {
  if (n == 0) return;
  std::vector<T> mx(inner), sum(inner);
  std::vector<int64_t> arg(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const T* x = px + o * n * inner;
    T* y = py + o * n * inner;
    for (int64_t i = 0; i < inner; ++i) {
      mx[i] = x[i];
      arg[i] = 0;
    }
    for (int64_t r = 1; r < n; ++r) {
      const T* row = x + r * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (row[i] > mx[i]) {
          mx[i] = row[i];
          arg[i] = r;
        }
      }
    }
    if (kind == SmKind::kHardmax) {
      std::fill(y, y + n * inner, T(0));
      for (int64_t i = 0; i < inner; ++i) y[arg[i] * inner + i] = T(1);
      continue;
    }
    std::fill(sum.begin(), sum.end(), T(0));
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + r * inner;
      T* out = y + r * inner;
      for (int64_t i = 0; i < inner; ++i) {
        T e = std::exp(row[i] - mx[i]);
        sum[i] += e;
        if (kind == SmKind::kSoftmax) out[i] = e;
      }
    }
    if (kind == SmKind::kSoftmax) {
      for (int64_t r = 0; r < n; ++r) {
        T* out = y + r * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] /= sum[i];
      }
    } else {
      for (int64_t i = 0; i < inner; ++i) sum[i] = mx[i] + std::log(sum[i]);
      for (int64_t r = 0; r < n; ++r) {
        const T* row = x + r * inner;
        T* out = y + r * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] = row[i] - sum[i];
      }
    }
  }
}

struct SmConfig {
  SmKind kind;
  int64_t axis;
  bool coerce_2d;
};

Status ComputeSoftmax(KernelContext& ctx, const SmConfig& c) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  const Shape& s = x->shape();
  const int64_t rank = x->rank();
  int64_t axis = c.axis;
  // Opset < 13 also accepts axis == rank: every element is then a row of its own.
  if (c.coerce_2d && axis == rank) {
  } else if (!NormalizeAxis(axis, rank)) {
    return ctx.Invalid("axis " + std::to_string(c.axis) + " is out of range for input of rank " + std::to_string(rank));
  }
  const int64_t outer = DimProduct(s, 0, axis);
  const int64_t n = c.coerce_2d ? DimProduct(s, axis, rank) : s[axis];
  const int64_t inner = c.coerce_2d ? 1 : DimProduct(s, axis + 1, rank);
  const DataType dt = x->dtype();
  if (dt == DataType::kFloat && c.kind != SmKind::kHardmax) {
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(dt, s));
    const bool log = c.kind == SmKind::kLogSoftmax;
    if (inner == 1) simd::SoftmaxRows(ctx.thread_pool(), x->data<float>(), out.data<float>(), outer, n, log);
    else simd::SoftmaxStrided(ctx.thread_pool(), x->data<float>(), out.data<float>(), outer, n, inner, log);
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  if (IsFloat16Like(dt)) {
    IL_ASSIGN_OR_RETURN(Tensor xf, ToFloat32(*x));
    IL_ASSIGN_OR_RETURN(Tensor yf, ctx.Allocate(DataType::kFloat, s));
    SoftmaxTyped<float>(xf.data<float>(), yf.data<float>(), outer, n, inner, c.kind);
    IL_ASSIGN_OR_RETURN(Tensor out, CastTensor(yf, dt));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, s));
  IL_RETURN_IF_ERROR(DispatchFloating(
      dt,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SoftmaxTyped<T>(x->data<T>(), out.data<T>(), outer, n, inner, c.kind);
        return Status::Ok();
      },
      ctx.node().op_type.c_str()));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& r) {
  const std::pair<const char*, SmKind> ops[] = {
      {"Softmax", SmKind::kSoftmax}, {"LogSoftmax", SmKind::kLogSoftmax}, {"Hardmax", SmKind::kHardmax}};
  for (const auto& [name, kind] : ops) {
    r.Register("", name, 1, [kind = kind](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
      SmConfig c;
      c.kind = kind;
      c.coerce_2d = info.opset() < 13;
      c.axis = info.GetInt("axis", c.coerce_2d ? 1 : -1);
      return MakeKernel([c](KernelContext& ctx) { return ComputeSoftmax(ctx, c); });
    });
  }
}

}  // namespace reduction
}  // namespace inferloop
