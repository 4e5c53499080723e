// com.inferloop ReorderToNchwc / ReorderFromNchwc: float32 tensors between the plain NCHW layout
// and a channel-blocked layout (attribute layout: NCHW16c when absent, or NCHW8c;
// graph/channel_block.h, docs/DNNL_KERNELS.md) that FusedConv and the pools with that layout take,
// as oneDNN reorders (the blocked side's padded channels are zero).
#include <string>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernels/dnnl_common.h"
#include "graph/channel_block.h"

namespace inferloop {
namespace dnnl_kernels {
namespace {

struct LayoutPlan {
  Shape y_shape;
  ReorderPrim reorder;
  memory::desc from_md, to_md;
};

class LayoutKernel final : public Kernel {
 public:
  // to_blocked: NCHW -> blocked by `block`; else blocked -> NCHW with `channels` channels.
  LayoutKernel(bool to_blocked, int64_t channels, int64_t block)
      : to_blocked_(to_blocked), channels_(channels), block_(block) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != DataType::kFloat) return UnsupportedType(to_blocked_ ? "ReorderToNchwc" : "ReorderFromNchwc", x->dtype());
    ThreadScope threads(ctx);
    PlanKey key;
    key.AddShape(x->shape());
    key.Add(threads.threads());
    std::shared_ptr<const LayoutPlan> plan = plans_.Find(key);
    if (!plan) {
      IL_ASSIGN_OR_RETURN(plan, MakePlan(ctx, *x));
      plan = plans_.Insert(key, plan);
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, plan->y_shape));
    if (y.size() > 0) {
      MemArg from(plan->from_md, x->raw_data()), to(plan->to_md, y.raw_data());
      IL_RETURN_IF_ERROR(RunReorder(plan->reorder, from.get(), to.get()));
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  Result<std::shared_ptr<const LayoutPlan>> MakePlan(KernelContext& ctx, const Tensor& x) const {
    Shape logical = x.shape();
    if (to_blocked_) {
      if (x.rank() < 3 || x.rank() > 5)
        return ctx.Invalid("X must be [N, C, spatial (1 to 3 dims)...], got " + ShapeToString(x.shape()));
    } else {
      if (x.rank() < 4 || x.rank() > 6 || !IsBlockedStorage(x.shape(), channels_, block_)) {
        const std::string b = std::to_string(block_);
        return ctx.Invalid("X must be the " + ChannelBlockedLayoutName(block_) + " storage [N, ceil(" + std::to_string(channels_) +
                           " / " + b + "), spatial..., " + b + "] of a tensor with attribute channels = " +
                           std::to_string(channels_) + ", got " + ShapeToString(x.shape()));
      }
      logical.pop_back();
      logical[1] = channels_;
    }
    auto plan = std::make_shared<LayoutPlan>();
    const int rank = static_cast<int>(logical.size());
    const memory::desc plain(Dims(logical), dt::f32, PlainTag(rank)), blocked(Dims(logical), dt::f32, BlockedTag(rank, block_));
    plan->from_md = to_blocked_ ? plain : blocked;
    plan->to_md = to_blocked_ ? blocked : plain;
    plan->y_shape = to_blocked_ ? BlockedShape(logical, block_) : logical;
    try {
      plan->reorder = MakeReorder(plan->from_md, plan->to_md);
    } catch (const dnnl::error& e) {
      return Status::Internal(ctx.node().Describe() + ": oneDNN has no reorder for this layout change: " + e.what());
    }
    return std::shared_ptr<const LayoutPlan>(plan);
  }

  bool to_blocked_;
  int64_t channels_;
  int64_t block_;
  mutable ShapeCache<LayoutPlan> plans_;
};

// The reorders' block (NCHW16c without the attribute: graph/channel_block.h NodeChannelBlock).
Result<int64_t> ReorderBlock(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const int64_t block, BlockedLayoutFromInfo(info));
  if (block == 0) return info.Invalid("attribute layout must be NCHW8c or NCHW16c, not NCHW");
  return block;
}

}  // namespace

Result<std::unique_ptr<Kernel>> MakeReorderToNchwc(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const int64_t block, ReorderBlock(info));
  return std::unique_ptr<Kernel>(std::make_unique<LayoutKernel>(true, 0, block));
}

Result<std::unique_ptr<Kernel>> MakeReorderFromNchwc(const KernelInfo& info) {
  const int64_t channels = info.GetInt("channels", 0);
  if (channels <= 0) return info.Invalid("attribute channels (the logical channel count, > 0) is required");
  IL_ASSIGN_OR_RETURN(const int64_t block, ReorderBlock(info));
  return std::unique_ptr<Kernel>(std::make_unique<LayoutKernel>(false, channels, block));
}

}  // namespace dnnl_kernels
}  // namespace inferloop
