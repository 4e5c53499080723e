// QConv: the INT8 2-D convolution of the QDQ fusion (semantics in dnnl_int8.cc), a oneDNN int8
// convolution, or a float32 one on CPUs without VNNI / AMX (NativeInt8).
#include <cstring>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_int8_common.h"
#include "compute/kernels/nn_common.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

namespace {

struct QConvPlan {
  bool f32 = false;  // float32 path (no VNNI / AMX): src and dst float copies in scratch
  Shape y_storage;
  dnnl::primitive prim;
  memory::desc src_md, dst_md, scratch_md, user_src_md, user_dst_md, bias_md;
  std::optional<ReorderPrim> src_in, dst_out;
  std::shared_ptr<dnnl::memory> wei;  // packed weights
  std::shared_ptr<std::vector<float>> bias_f32;  // f32 path
  ZeroPoints zp;
};

class QConvKernel final : public Kernel {
 public:
  QConvKernel(nn::WindowAttrs attrs, Activation act, bool nhwc, QParam x, std::vector<float> w_scale, OutQuant out, Tensor w,
              Tensor bias)
      : attrs_(std::move(attrs)), act_(act), nhwc_(nhwc), x_(x), w_scale_(std::move(w_scale)), out_(out), w_(std::move(w)),
        bias_(std::move(bias)) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != x_.type)
      return ctx.Invalid(std::string("X must be ") + DataTypeName(x_.type) + " like its zero point, got " + DataTypeName(x->dtype()));
    if (x->rank() != 4) return ctx.Invalid("X must be rank 4, got " + ShapeToString(x->shape()));
    ThreadScope threads(ctx);
    PlanKey key;
    key.AddShape(x->shape());
    key.Add(threads.threads());
    std::shared_ptr<const QConvPlan> plan = plans_.Find(key);
    if (!plan) {
      try {
        IL_ASSIGN_OR_RETURN(auto made, MakePlan(ctx, *x));
        plan = plans_.Insert(key, std::move(made));
      } catch (const dnnl::error& e) {
        return Status::Unimplemented(ctx.node().Describe() + ": oneDNN has no int8 convolution for this case: " + e.what());
      }
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(out_.float_out ? DataType::kFloat : out_.q.type, plan->y_storage));
    if (plan->f32) return RunF32(ctx, *plan, *x, &y);
    MemArg user_src(plan->user_src_md, x->raw_data()), src_tmp, user_dst(plan->user_dst_md, y.raw_data()), dst_tmp, bias, zs, zd;
    dnnl_memory_t src = user_src.get(), dst = user_dst.get();
    if (plan->src_in) {
      void* buf = ThreadScratch(0, plan->src_md.get_size());
      if (!buf) return Status::ResourceExhausted("QConv: out of memory for a reordered input");
      src_tmp = MemArg(plan->src_md, buf);
      IL_RETURN_IF_ERROR(RunReorder(*plan->src_in, src, src_tmp.get()));
      src = src_tmp.get();
    }
    if (plan->dst_out) {
      void* buf = ThreadScratch(2, plan->dst_md.get_size());
      if (!buf) return Status::ResourceExhausted("QConv: out of memory for a reordered output");
      dst_tmp = MemArg(plan->dst_md, buf);
      dst = dst_tmp.get();
    }
    ExecArgs args;
    args.Add(DNNL_ARG_SRC, src);
    args.Add(DNNL_ARG_WEIGHTS, plan->wei->get());
    args.Add(DNNL_ARG_DST, dst);
    if (bias_.defined()) {
      bias = MemArg(plan->bias_md, bias_.raw_data());
      args.Add(DNNL_ARG_BIAS, bias.get());
    }
    AddZeroPoints(plan->zp, args, &zs, &zd);
    IL_RETURN_IF_ERROR(Execute(plan->prim, plan->scratch_md, args, "QConv"));
    if (plan->dst_out) IL_RETURN_IF_ERROR(RunReorder(*plan->dst_out, dst, user_dst.get()));
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  // Float32 path: X dequantized into scratch, the float convolution (bias, activation), Y
  // quantized (or written as is for a float output). Layouts as the user's.
  Status RunF32(KernelContext& ctx, const QConvPlan& plan, const Tensor& x, Tensor* y) const {
    float* xf = static_cast<float*>(ThreadScratch(0, x.size() * sizeof(float)));
    const int64_t ny = y->size();
    float* yf = out_.float_out ? y->data<float>() : static_cast<float*>(ThreadScratch(2, ny * sizeof(float)));
    if (!xf || !yf) return Status::ResourceExhausted("QConv: out of memory for float copies");
    DequantizeTo(x.dtype(), x.raw_data(), xf, x.size(), x_, nullptr);  // the pool is claimed by ThreadScope
    MemArg src(plan.user_src_md, xf), dst(plan.user_dst_md, yf), bias;
    ExecArgs args;
    args.Add(DNNL_ARG_SRC, src.get());
    args.Add(DNNL_ARG_WEIGHTS, plan.wei->get());
    args.Add(DNNL_ARG_DST, dst.get());
    if (plan.bias_f32) {
      bias = MemArg(plan.bias_md, plan.bias_f32->data());
      args.Add(DNNL_ARG_BIAS, bias.get());
    }
    IL_RETURN_IF_ERROR(Execute(plan.prim, plan.scratch_md, args, "QConv"));
    if (!out_.float_out) QuantizeTo(yf, y->raw_data(), ny, out_.q, nullptr);
    ctx.SetOutput(0, std::move(*y));
    return Status::Ok();
  }

  Result<std::shared_ptr<const QConvPlan>> MakePlan(KernelContext& ctx, const Tensor& x) const {
    const int64_t N = x.dim(0), C = nhwc_ ? x.dim(3) : x.dim(1);
    const int64_t H = nhwc_ ? x.dim(1) : x.dim(2), W = nhwc_ ? x.dim(2) : x.dim(3);
    const int64_t M = w_.dim(0), G = attrs_.group;
    if (C != w_.dim(1) * G || M % G != 0) return ctx.Invalid("X's " + std::to_string(C) + " channels do not fit W " + ShapeToString(w_.shape()) + " with group " + std::to_string(G));
    std::vector<int64_t> kernel = {w_.dim(2), w_.dim(3)};
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) return ctx.Invalid("kernel_shape does not match W");
    IL_ASSIGN_OR_RETURN(nn::WindowGeom g, nn::ResolveWindow(ctx, attrs_, Shape{H, W}, kernel, /*pool_style=*/false));
    auto plan = std::make_shared<QConvPlan>();
    const memory::dims xd = {N, C, H, W}, yd = {N, M, g.out[0], g.out[1]};
    plan->y_storage = nhwc_ ? Shape{N, g.out[0], g.out[1], M} : Shape{N, M, g.out[0], g.out[1]};
    const dt ydt = out_.float_out ? dt::f32 : DnnlType(out_.q.type);
    plan->user_src_md = memory::desc(xd, DnnlType(x_.type), nhwc_ ? tag::nhwc : tag::nchw);
    plan->user_dst_md = memory::desc(yd, ydt, nhwc_ ? tag::nhwc : tag::nchw);
    memory::dims wd = G > 1 ? memory::dims{G, M / G, C / G, kernel[0], kernel[1]} : memory::dims{M, C, kernel[0], kernel[1]};
    const memory::desc user_wei_md(wd, dt::s8, G > 1 ? tag::goihw : tag::oihw);
    plan->bias_md = memory::desc({M}, dt::s32, tag::a);
    const memory::desc src_md(xd, DnnlType(x_.type), tag::nhwc), dst_md(yd, ydt, tag::nhwc), wei_any(wd, dt::s8, tag::any);
    plan->zp.src = x_.zp;
    plan->zp.dst = out_.float_out ? 0 : out_.q.zp;
    using F = dnnl::convolution_forward;
    const memory::dims strides = {g.strides[0], g.strides[1]}, dil = {g.dilations[0] - 1, g.dilations[1] - 1},
                       pl = {g.pad_begin[0], g.pad_begin[1]}, pr = {g.pad_end[0], g.pad_end[1]};
    const auto fwd = dnnl::prop_kind::forward_inference;
    if (!Int8ProductsExact(w_)) {
      plan->f32 = true;
      const tag t = nhwc_ ? tag::nhwc : tag::nchw;
      plan->user_src_md = memory::desc(xd, dt::f32, t);
      plan->user_dst_md = memory::desc(yd, dt::f32, t);
      plan->bias_md = memory::desc({M}, dt::f32, tag::a);
      const memory::desc wf_user(wd, dt::f32, G > 1 ? tag::goihw : tag::oihw), wf_any(wd, dt::f32, tag::any);
      dnnl::post_ops po;
      AppendActivation(act_, po);
      const auto desc = bias_.defined()
                            ? F::desc(fwd, dnnl::algorithm::convolution_direct, plan->user_src_md, wf_any, plan->bias_md, plan->user_dst_md, strides, dil, pl, pr)
                            : F::desc(fwd, dnnl::algorithm::convolution_direct, plan->user_src_md, wf_any, plan->user_dst_md, strides, dil, pl, pr);
      F::primitive_desc pd(desc, MakeAttr(po), Engine());
      plan->prim = F(pd);
      plan->scratch_md = pd.scratchpad_desc();
      auto wf = DequantWeights(w_, w_scale_, /*per_row=*/true, M);
      if (bias_.defined()) plan->bias_f32 = std::make_shared<std::vector<float>>(DequantBias(bias_, w_scale_, x_.scale));
      // The input is dequantized with x_scale, the weights with w_scale: the product is the float graph's.
      plan->wei = std::make_shared<dnnl::memory>(pd.weights_desc(), Engine());
      dnnl::memory user_w(wf_user, Engine(), wf.data());
      IL_RETURN_IF_ERROR(RunReorder(MakeReorder(wf_user, pd.weights_desc()), user_w.get(), plan->wei->get()));
      return std::shared_ptr<const QConvPlan>(plan);
    }
    const auto attr = QuantAttr(OutputScales(x_.scale, w_scale_, out_), 1 << 1, x_.zp, out_, act_);
    const auto desc = bias_.defined()
                          ? F::desc(fwd, dnnl::algorithm::convolution_direct, src_md, wei_any, plan->bias_md, dst_md, strides, dil, pl, pr)
                          : F::desc(fwd, dnnl::algorithm::convolution_direct, src_md, wei_any, dst_md, strides, dil, pl, pr);
    F::primitive_desc pd(desc, attr, Engine());
    plan->prim = F(pd);
    plan->src_md = pd.src_desc();
    plan->dst_md = pd.dst_desc();
    plan->scratch_md = pd.scratchpad_desc();
    if (plan->src_md != plan->user_src_md) plan->src_in = MakeReorder(plan->user_src_md, plan->src_md);
    if (plan->dst_md != plan->user_dst_md) plan->dst_out = MakeReorder(plan->dst_md, plan->user_dst_md);
    plan->wei = std::make_shared<dnnl::memory>(pd.weights_desc(), Engine());
    dnnl::memory user_w(user_wei_md, Engine(), const_cast<void*>(w_.raw_data()));
    const ReorderPrim r = MakeReorder(user_wei_md, pd.weights_desc());
    IL_RETURN_IF_ERROR(RunReorder(r, user_w.get(), plan->wei->get()));
    return std::shared_ptr<const QConvPlan>(plan);
  }

  // W is cloned at creation and Compute never reads it (the session may drop its copy). Not the
  // int32 bias: shape inference reads small integer constants.
  bool KeepsOwnCopyOfConstant(int i) const override { return i == 3; }

  nn::WindowAttrs attrs_;
  Activation act_;
  bool nhwc_;
  QParam x_;
  std::vector<float> w_scale_;
  OutQuant out_;
  Tensor w_, bias_;
  mutable ShapeCache<QConvPlan> plans_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> MakeQConv(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, false));
  IL_ASSIGN_OR_RETURN(Activation act, ActivationFromInfo(info));
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  IL_ASSIGN_OR_RETURN(QParam x, ConstQParam(info, 1, 2, DataType::kUInt8, "x"));
  const Tensor* w = info.constant_input(3);
  if (!w || w->dtype() != DataType::kInt8 || w->rank() != 4) return info.Invalid("W must be a rank-4 int8 constant");
  IL_ASSIGN_OR_RETURN(auto ws, WeightScales(info, 4, 5, w->dim(0)));
  IL_ASSIGN_OR_RETURN(OutQuant out, ParseOut(info, 6, 7));
  IL_ASSIGN_OR_RETURN(Tensor bias, ConstBias(info, 8, w->dim(0)));
  if (attrs.group < 1) return info.Invalid("group must be positive");
  return std::unique_ptr<Kernel>(std::make_unique<QConvKernel>(std::move(attrs), act, nhwc, x, std::move(ws), out, w->Clone(), std::move(bias)));
}

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
