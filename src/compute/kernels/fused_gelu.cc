// com.inferloop Gelu (docs/FUSED_OPS.md): Y = X * Phi(X) as ONNX Gelu-20, float32.
// approximate = "none" (erf form, default) or "tanh"; the vectorized float kernels
// (compute/simd) evaluate it, split over the run's thread pool.
#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/simd/float_kernels.h"

namespace inferloop {
namespace {

Result<std::unique_ptr<Kernel>> MakeGelu(const KernelInfo& info) {
  const std::string approx = info.GetString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return info.Invalid("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + approx + "\"");
  const simd::UnaryOp op = approx == "tanh" ? simd::UnaryOp::kGeluTanh : simd::UnaryOp::kGelu;
  return MakeKernel([op](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != DataType::kFloat)
      return ctx.Invalid(std::string("input must be float32, got ") + DataTypeName(x->dtype()));
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, x->shape()));
    simd::Unary(ctx.thread_pool(), op, x->data<float>(), y.data<float>(), x->size());
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  });
}

}  // namespace

void RegisterFusedGeluKernel(KernelRegistry& r) { r.Register("com.inferloop", "Gelu", 1, MakeGelu); }

}  // namespace inferloop
