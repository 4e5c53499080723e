// Registration of the elementwise kernel family.
#include "compute/broadcast.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"

namespace inferloop {
namespace {

template <typename T, typename Op>
Status BinaryOp(KernelContext& ctx, Op op) {
  const Tensor* a = ctx.input(0);
  const Tensor* b = ctx.input(1);
  IL_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes({a->shape(), b->shape()}));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(a->dtype(), out_shape));
  const T* pa = a->data<T>();
  const T* pb = b->data<T>();
  T* po = out.data<T>();
  ForEachBroadcast2(out_shape, BroadcastStrides(a->shape(), out_shape), BroadcastStrides(b->shape(), out_shape),
                    [&](int64_t i, int64_t ia, int64_t ib) { po[i] = op(pa[ia], pb[ib]); });
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& r) {
  r.Register("", "Add", 1, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
      return DispatchNumeric(a->dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        return BinaryOp<T>(ctx, [](T x, T y) { return static_cast<T>(x + y); });
      });
    });
  });
  r.Register("", "Identity", 1, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      const Value* v = ctx.input_value(0);
      if (!v) return ctx.Invalid("missing input");
      ctx.SetOutput(0, *v);
      return Status::Ok();
    });
  });
}

}  // namespace inferloop
