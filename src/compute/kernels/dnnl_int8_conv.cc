// QConv: the INT8 2-D convolution of the QDQ fusion (semantics in dnnl_int8.cc), a oneDNN int8
// convolution. On CPUs without VNNI / AMX (NativeInt8) with full-range weights: u8 inputs split
// (the window split, dnnl_int8_common.h), s8 ones computed in float32.
#include <algorithm>
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
  // The window split (dnnl_int8_common.h): X's window goes to `prim`, or to `prim_corr` (the
  // correction, shaped like Y in NHWC, as its first post-op) when some of X's values lie outside.
  bool window = false;
  int32_t shift = 0;
  dnnl::primitive prim_corr;
  memory::desc scratch_corr_md, corr_md;
  std::vector<float> scales;     // the output scale of each output channel
  int64_t N = 0, C = 0, H = 0, W = 0, M = 0, G = 1, OH = 0, OW = 0, KH = 0, KW = 0;
  int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, pad[2] = {0, 0};
};

class QConvKernel final : public Kernel {
 public:
  QConvKernel(nn::WindowAttrs attrs, Activation act, bool nhwc, QParam x, std::vector<float> w_scale, OutQuant out, Tensor w,
              Tensor bias)
      : attrs_(std::move(attrs)), act_(act), nhwc_(nhwc), x_(x), w_scale_(std::move(w_scale)), out_(out), w_(std::move(w)),
        bias_(std::move(bias)) {
    const int64_t G = attrs_.group, M = w_.dim(0), cg = w_.dim(1), KH = w_.dim(2), KW = w_.dim(3);
    if (!UseWindowSplit(x_.type, w_) || G < 1 || M % G != 0) return;
    // W as [KH][KW][C][M / G] for the window split's correction: tap (kh, kw) and input channel c
    // -> the weights of c's group's outputs, contiguous.
    const int64_t C = cg * G, mg = M / G;
    w_by_tap_.resize(static_cast<size_t>(w_.size()));
    const int8_t* wp = w_.data<int8_t>();  // [M, C / G, KH, KW]
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw)
        for (int64_t ci = 0; ci < C; ++ci)
          for (int64_t j = 0; j < mg; ++j) {
            const int64_t m = (ci / cg) * mg + j;
            w_by_tap_[((kh * KW + kw) * C + ci) * mg + j] = wp[((m * cg + ci % cg) * KH + kh) * KW + kw];
          }
  }

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
        Result<std::shared_ptr<const QConvPlan>> made =
            PlanWithWindowFallback(UseWindowSplit(x_.type, w_), [&](bool window_ok) { return MakePlan(ctx, *x, window_ok); });
        if (!made.ok()) return made.status();
        plan = plans_.Insert(key, std::move(*made));
      } catch (const dnnl::error& e) {
        return Status::Unimplemented(ctx.node().Describe() + ": oneDNN has no int8 convolution for this case: " + e.what());
      }
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(out_.float_out ? DataType::kFloat : out_.q.type, plan->y_storage));
    if (plan->f32) return RunF32(ctx, *plan, *x, &y);
    const void* x_data = x->raw_data();
    const dnnl::primitive* prim = &plan->prim;
    const memory::desc* scratch_md = &plan->scratch_md;
    MemArg corr;
    if (plan->window) {
      std::vector<WindowOutlier> outliers;
      x_data = WindowOf(*x, plan->shift, threads, &outliers);
      if (x_data == nullptr) return Status::ResourceExhausted("QConv: out of memory for the input's window");
      if (!outliers.empty()) {
        float* c = ZeroedCorrection(plan->N * plan->OH * plan->OW * plan->M, threads);
        if (c == nullptr) return Status::ResourceExhausted("QConv: out of memory for the correction");
        AddCorrections(*plan, outliers, threads, c);
        corr = MemArg(plan->corr_md, c);
        prim = &plan->prim_corr;
        scratch_md = &plan->scratch_corr_md;
      }
    }
    MemArg user_src(plan->user_src_md, x_data), src_tmp, user_dst(plan->user_dst_md, y.raw_data()), dst_tmp, bias, zs, zd;
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
    if (corr) args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, corr.get());
    IL_RETURN_IF_ERROR(Execute(*prim, *scratch_md, args, "QConv"));
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

  // Adds each outlier's products to the zeroed correction c ([N, OH, OW, M], scaled like the
  // accumulator): x's value at (n, h, w, ci) meets tap (kh, kw) of output (oh, ow) where
  // oh * stride - pad + kh * dilation = h (and likewise for w). The terms (outlier, tap) are
  // listed once (runs of outliers in parallel), then added by AddCorrectionTerms.
  void AddCorrections(const QConvPlan& p, const std::vector<WindowOutlier>& outliers, const ThreadScope& threads, float* c) const {
    const int64_t mg = p.M / p.G, cg = p.C / p.G;
    // terms[part][g]: the terms of the part-th run of outliers (in order) in group g.
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads.threads(), static_cast<int64_t>(outliers.size()) / 64));
    std::vector<std::vector<std::vector<simd::ScaledS8Term>>> terms(static_cast<size_t>(parts));
    const int64_t per = (static_cast<int64_t>(outliers.size()) + parts - 1) / parts;
    threads.ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t part = b; part < e; ++part) {
        auto& by_group = terms[static_cast<size_t>(part)];
        by_group.resize(static_cast<size_t>(p.G));
        const int64_t lo = part * per, hi = std::min<int64_t>(static_cast<int64_t>(outliers.size()), lo + per);
        if (p.G == 1) by_group[0].reserve(static_cast<size_t>(std::max<int64_t>(0, hi - lo) * p.KH * p.KW));
        for (int64_t k = lo; k < hi; ++k) {
          const WindowOutlier& o = outliers[static_cast<size_t>(k)];
          int64_t i = o.index, n, ci, h, w;
          if (nhwc_) {
            ci = i % p.C, i /= p.C, w = i % p.W, i /= p.W, h = i % p.H, n = i / p.H;
          } else {
            w = i % p.W, i /= p.W, h = i % p.H, i /= p.H, ci = i % p.C, n = i / p.C;
          }
          const int64_t g = ci / cg;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t th = h + p.pad[0] - kh * p.dil[0];
            if (th < 0 || th % p.stride[0] != 0 || th / p.stride[0] >= p.OH) continue;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              const int64_t tw = w + p.pad[1] - kw * p.dil[1];
              if (tw < 0 || tw % p.stride[1] != 0 || tw / p.stride[1] >= p.OW) continue;
              by_group[static_cast<size_t>(g)].push_back({((n * p.OH + th / p.stride[0]) * p.OW + tw / p.stride[1]) * p.M + g * mg,
                                                           ((kh * p.KW + kw) * p.C + ci) * mg, static_cast<float>(o.residual)});
            }
          }
        }
      }
    });
    // Each group's output channels, its terms in outlier order.
    for (int64_t g = 0; g < p.G; ++g) {
      std::vector<const std::vector<simd::ScaledS8Term>*> lists;
      for (const auto& by_group : terms) lists.push_back(&by_group[static_cast<size_t>(g)]);
      AddCorrectionTerms(c, w_by_tap_.data(), p.scales.data() + g * mg, mg, lists, threads);
    }
  }

  Result<std::shared_ptr<const QConvPlan>> MakePlan(KernelContext& ctx, const Tensor& x, bool window_ok) const {
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
    plan->zp.dst = out_.float_out ? 0 : out_.q.zp;
    using F = dnnl::convolution_forward;
    const memory::dims strides = {g.strides[0], g.strides[1]}, dil = {g.dilations[0] - 1, g.dilations[1] - 1},
                       pl = {g.pad_begin[0], g.pad_begin[1]}, pr = {g.pad_end[0], g.pad_end[1]};
    const auto fwd = dnnl::prop_kind::forward_inference;
    plan->window = window_ok && !w_by_tap_.empty();
    if (!Int8ProductsExact(w_) && !plan->window) {
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
    plan->shift = plan->window ? WindowShift(x_.zp) : 0;
    plan->zp.src = x_.zp - plan->shift;
    const std::vector<float> scales = OutputScales(x_.scale, w_scale_, out_);
    const auto desc = bias_.defined()
                          ? F::desc(fwd, dnnl::algorithm::convolution_direct, src_md, wei_any, plan->bias_md, dst_md, strides, dil, pl, pr)
                          : F::desc(fwd, dnnl::algorithm::convolution_direct, src_md, wei_any, dst_md, strides, dil, pl, pr);
    F::primitive_desc pd(desc, QuantAttr(scales, 1 << 1, plan->zp.src, out_, act_), Engine());
    plan->prim = F(pd);
    if (plan->window) {
      plan->corr_md = memory::desc(yd, dt::f32, tag::nhwc);
      F::primitive_desc pdc(desc, QuantAttr(scales, 1 << 1, plan->zp.src, out_, act_, &plan->corr_md), Engine());
      RejectReference(pd);
      RejectReference(pdc);
      // Both must take X, W and Y in one layout (they share the packed weights and the reorders).
      if (pdc.weights_desc() != pd.weights_desc() || pdc.src_desc() != pd.src_desc() || pdc.dst_desc() != pd.dst_desc())
        throw dnnl::error(dnnl_unimplemented, "window split: layouts differ");
      plan->prim_corr = F(pdc);
      plan->scratch_corr_md = pdc.scratchpad_desc();
      plan->N = N, plan->C = C, plan->H = H, plan->W = W, plan->M = M, plan->G = G, plan->OH = g.out[0], plan->OW = g.out[1];
      plan->KH = kernel[0], plan->KW = kernel[1];
      for (int d = 0; d < 2; ++d) plan->stride[d] = g.strides[d], plan->dil[d] = g.dilations[d], plan->pad[d] = g.pad_begin[d];
      plan->scales = PerColumnScales(scales, M);
    }
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
  std::vector<int8_t> w_by_tap_;  // the window split's copy of W (constructor), shared by every plan
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
