// float32 Conv, com.inferloop FusedConv and ConvTranspose on oneDNN (de)convolution primitives.
//
// Inputs and outputs are plain NCHW (NCW, NCDHW), or for FusedConv with layout "NCHW16c" channel-
// blocked (docs/DNNL_KERNELS.md). Per input shape the kernel picks one of:
//   plain     - the primitive works on the plain tensors directly (oneDNN then uses im2col +
//               its JIT sgemm), no reorders;
//   blocked16 - channel-blocked nChw16c; X is reordered in and Y out (cheap reorders);
//   any       - oneDNN picks the layouts (often NHWC for its brgemm convolutions; the
//               NCHW <-> NHWC reorders cost more than nChw16c's);
//   winograd  - Winograd F(2x2, 3x3) on blocked layouts (2-D 3x3, stride 1, no dilation,
//               group 1);
//   small_direct - not oneDNN: compute/simd/small_conv.h's direct convolution on the plain
//               tensors, for few channels (at most kSmallConvMaxChannels in and out; stride 1,
//               no dilation, group 1, constant float32 W, activation none / Relu / LeakyRelu /
//               Clip / Sigmoid / Tanh), where oneDNN pads the channels to 16 or runs im2col;
//               for ConvTranspose, kernel = stride and no padding (U-Net upsampling).
// The first time a shape is seen every candidate is timed on the real inputs and the winner
// kept in the TuningCache (INFERLOOP_AUTOTUNE=0: heuristic instead). Bias, the residual Z
// (a binary-add post-op reading Z in place, or when oneDNN refuses that, a copy into Y and a
// sum post-op) and the activation run inside the primitive. A constant W is reordered once
// into the primitive's layout and shared by the cached primitives that want that layout.
// ConvTranspose takes the same path (plain or blocked) when its padding is non-negative once
// output_padding is taken off the end padding (oneDNN has no output_padding of its own).
//
// Precision (KernelInfo::float_precision): kBf16 builds the primitives with bf16 source and
// weights (X converted by the source reorder per call, a constant W packed as bf16 once;
// accumulation, bias, Z and Y stay f32; where oneDNN has no bf16 implementation for a case, f32);
// kFp16 keeps a constant W as float16 (HalfWeights, widened per call; no Winograd, whose weight
// format is opaque).
#include <cstring>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_common.h"
#include "compute/kernels/nn_common.h"
#include "compute/simd/small_conv.h"
#include "compute/tuning_cache.h"
#include "graph/channel_block.h"

namespace inferloop {
namespace dnnl_kernels {
namespace {

enum class ConvImpl { kPlain, kBlocked16, kAny, kWinograd, kSmallDirect };
constexpr ConvImpl kAllImpls[] = {ConvImpl::kPlain, ConvImpl::kBlocked16, ConvImpl::kAny, ConvImpl::kWinograd,
                                  ConvImpl::kSmallDirect};
// small_direct is a candidate up to this many input and output channels (beyond, oneDNN's
// blocked kernels fill their vectors, and timing one more candidate would cost every shape).
constexpr int64_t kSmallConvMaxChannels = 64;

const char* ImplName(ConvImpl i) {
  switch (i) {
    case ConvImpl::kPlain: return "plain";
    case ConvImpl::kBlocked16: return "blocked16";
    case ConvImpl::kAny: return "any";
    case ConvImpl::kWinograd: return "winograd";
    case ConvImpl::kSmallDirect: return "small_direct";
  }
  return "";
}

// The layout of activations for `impl` at tensor rank `rank` (3 to 5).
tag ActivationTag(ConvImpl impl, int rank) {
  switch (impl) {
    case ConvImpl::kPlain: return PlainTag(rank);
    case ConvImpl::kBlocked16: return BlockedTag(rank, 16);
    default: return tag::any;
  }
}

// The memory order of ConvTranspose's W in oneDNN's weight dims ((G,) O, I, k...): I before O.
tag TransposedWeightsTag(int wrank, bool grouped) {
  if (grouped) return wrank == 4 ? tag::acbd : wrank == 5 ? tag::acbde : tag::acbdef;
  return wrank == 3 ? tag::bac : wrank == 4 ? tag::bacd : tag::bacde;
}

// One call's convolution, resolved.
struct ConvProblem {
  bool transposed = false;  // ConvTranspose: W is [C, M/group, k...]
  Shape x_shape, w_shape, y_shape;  // logical (NCHW) shapes
  bool x_blocked = false, y_blocked = false;  // X / Y (and Z) stored channel-blocked
  int64_t block = 0;                          // their block (graph/channel_block.h) when so
  Shape y_storage;                            // Y's tensor shape
  int64_t group = 1;
  int64_t out_channels = 0;
  nn::WindowGeom geom;
  bool has_bias = false, has_z = false;

  int nd() const { return geom.nd; }
  bool WinogradShape() const {
    if (transposed || nd() != 2 || group != 1) return false;
    for (int d = 0; d < 2; ++d)
      if (geom.kernel[d] != 3 || geom.strides[d] != 1 || geom.dilations[d] != 1) return false;
    return true;
  }
  bool Pointwise() const {
    for (int d = 0; d < nd(); ++d)
      if (geom.kernel[d] != 1 || geom.strides[d] != 1 || geom.pad_begin[d] != 0 || geom.pad_end[d] != 0) return false;
    return true;
  }
  // Not keyed by the thread count: one choice per shape keeps results identical (to the bit)
  // whatever number of threads a call gets.
  std::string TuningKey(Precision prec) const {
    std::string k = std::string(transposed ? "deconv" : "conv") + " " + PrecisionKey(prec) + " x=" + ShapeKey(x_shape) + " w=" + ShapeKey(w_shape) + " g=" + std::to_string(group);
    auto list = [&](const char* name, const std::vector<int64_t>& v) { k += std::string(" ") + name + "=" + ShapeKey(v); };
    list("s", geom.strides);
    list("d", geom.dilations);
    list("pb", geom.pad_begin);
    list("pe", geom.pad_end);
    const std::string b = std::to_string(block);
    k += std::string(has_z ? " z" : "") + (x_blocked ? " xb" + b : "") + (y_blocked ? " yb" + b : "");
    return k;
  }
};

// A primitive for one problem, thread count and implementation, with its reorders.
struct ConvPlan {
  bool scalar_only = false;  // oneDNN took none of the candidates: the scalar kernel runs
  Shape y_shape;
  ConvImpl impl = ConvImpl::kPlain;
  dnnl::primitive prim;
  memory::desc src_md, wei_md, dst_md, scratch_md;  // what the primitive takes
  memory::desc user_src_md, user_wei_md, user_dst_md, bias_md;
  std::optional<ReorderPrim> src_in, dst_out, z_in, wei_in;  // present when layouts differ
  bool z_binary = false;  // Z is a binary-add post-op operand (else: copied into dst, sum post-op)
  std::shared_ptr<const memory> packed_wei;                   // constant W in wei_md
  std::shared_ptr<const HalfWeights> half_wei;                // constant W in wei_md, as float16
  // small_direct: the geometry and W packed for simd::SmallConvRows.
  simd::SmallConvGeom small;
  std::shared_ptr<const std::vector<float>> small_wei;
};

class ConvKernel final : public Kernel {
 public:
  ConvKernel(nn::WindowAttrs attrs, Activation act, bool fused, int64_t block, Precision prec, const Tensor* const_w,
             std::unique_ptr<Kernel> scalar)
      : attrs_(std::move(attrs)), act_(act), fused_(fused), block_(block), prec_(prec), const_w_(const_w),
        scalar_(std::move(scalar)) {}
  // ConvTranspose.
  ConvKernel(nn::WindowAttrs attrs, std::vector<int64_t> output_padding, std::vector<int64_t> output_shape,
             Precision prec, const Tensor* const_w, std::unique_ptr<Kernel> scalar)
      : attrs_(std::move(attrs)), fused_(false), transposed_(true), output_padding_(std::move(output_padding)),
        output_shape_(std::move(output_shape)), prec_(prec), const_w_(const_w), scalar_(std::move(scalar)) {}

  Status Compute(KernelContext& ctx) const override {
    if (!Enabled() && !block_) return Scalar(ctx);  // a blocked layout has no scalar path
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* b = ctx.input(2);
    const Tensor* z = fused_ ? ctx.input(3) : nullptr;
    if (!x || !w || !AllFloatOrAbsent({x, w, b, z})) return Scalar(ctx);
    ThreadScope threads(ctx);
    const bool w_is_const = const_w_.Matches(*w);
    const PlanKey key = WeightedPlanKey({x, w, b, z}, threads.threads(), w_is_const);
    std::shared_ptr<const ConvPlan> plan = plans_.Find(key);  // steady state: no allocation
    Tensor y;
    if (!plan) {
      ConvProblem p;
      if (!Resolve(ctx, *x, *w, b, &p)) return Scalar(ctx);  // the scalar kernel words the error
      if (z && z->shape() != p.y_storage)
        return ctx.Invalid("Z must have the output's shape " + ShapeToString(p.y_storage) + ", got " + ShapeToString(z->shape()));
      p.has_z = z != nullptr;
      IL_ASSIGN_OR_RETURN(y, ctx.AllocateUninit(DataType::kFloat, p.y_storage));  // tuning writes it
      IL_ASSIGN_OR_RETURN(plan, MakePlan(p, w_is_const, threads, *x, *w, b, z, &y));
      plan = plans_.Insert(key, plan);
    }
    if (plan->scalar_only) return Scalar(ctx);  // oneDNN has no implementation for this case
    if (!y.defined()) { IL_ASSIGN_OR_RETURN(y, ctx.AllocateUninit(DataType::kFloat, plan->y_shape)); }
    IL_RETURN_IF_ERROR(RunPlan(*plan, threads, x->data<float>(), w->data<float>(), b ? b->data<float>() : nullptr,
                               z ? z->data<float>() : nullptr, y.data<float>()));
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  Status Scalar(KernelContext& ctx) const {
    return WithPlainConstant(ctx, 1, const_w_, [this](KernelContext& c) { return ScalarImpl(c); });
  }
  Status ScalarImpl(KernelContext& ctx) const {
    if (block_) return BlockedError(ctx);
    if (!fused_) return scalar_->Compute(ctx);
    return RunScalarFused(ctx, *scalar_, /*residual_input=*/3, /*bias_input=*/-1, act_);
  }

  // False when the shapes are invalid or outside what this kernel takes (the scalar kernel
  // then reports or handles them).
  bool Resolve(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, ConvProblem* p) const {
    if (transposed_) return ResolveTransposed(x, w, b, p);
    Shape xs = x.shape();  // logical
    p->block = block_;
    if (block_ && x.rank() == w.rank() + 1) {  // blocked input
      const int64_t C = w.rank() >= 2 ? w.dim(1) * attrs_.group : 0;
      if (!IsBlockedStorage(x.shape(), C, block_)) return false;
      xs.pop_back();
      xs[1] = C;
      p->x_blocked = true;
    }
    const int r = static_cast<int>(xs.size());
    if (r < 3 || r > 5 || w.rank() != r) return false;
    const int64_t N = xs[0], C = xs[1], M = w.dim(0), G = attrs_.group;
    if (C % G != 0 || M % G != 0 || w.dim(1) * G != C) return false;
    if (b && (b->rank() != 1 || b->dim(0) != M)) return false;
    std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) return false;
    if (x.size() == 0 || w.size() == 0) return false;
    Shape in_spatial(xs.begin() + 2, xs.end());
    auto g = nn::ResolveWindow(ctx, attrs_, in_spatial, kernel, /*pool_style=*/false);
    if (!g.ok()) return false;
    p->geom = std::move(g).value();
    p->x_shape = xs;
    p->w_shape = w.shape();
    p->group = G;
    p->out_channels = M;
    p->has_bias = b != nullptr;
    p->y_shape = {N, M};
    p->y_shape.insert(p->y_shape.end(), p->geom.out.begin(), p->geom.out.end());
    p->y_blocked = block_ != 0;
    p->y_storage = block_ ? BlockedShape(p->y_shape, block_) : p->y_shape;
    return true;
  }

  // FusedConv with a blocked layout has no scalar path: its inputs must suit oneDNN.
  Status BlockedError(KernelContext& ctx) const {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    if (!x || !w) return ctx.Invalid("X and W are required");
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (const Tensor* t = ctx.input(i); t && t->dtype() != DataType::kFloat)
        return Status::Unimplemented(ctx.node().Describe() + ": layout " + ChannelBlockedLayoutName(block_) +
                                     " takes float32 only, got " + DataTypeName(t->dtype()));
    return ctx.Invalid("layout " + ChannelBlockedLayoutName(block_) + ": X " + ShapeToString(x->shape()) + " (NCHW or " +
                       ChannelBlockedLayoutName(block_) + ") does not fit W " +
                       ShapeToString(w->shape()) + " with group " + std::to_string(attrs_.group) +
                       ", or the bias, padding or oneDNN rule the case out");
  }

  // ConvTranspose geometry, as the scalar kernel computes it: out = s * (in - 1) +
  // output_padding + dilated kernel - pads; output_shape or SAME_* choose the pads. oneDNN's
  // right padding is the end pad less output_padding, so both pads must end up non-negative.
  bool ResolveTransposed(const Tensor& x, const Tensor& w, const Tensor* b, ConvProblem* p) const {
    const int r = x.rank(), nd = r - 2;
    if (r < 3 || r > 5 || w.rank() != r || x.size() == 0 || w.size() == 0) return false;
    const int64_t N = x.dim(0), C = x.dim(1), G = attrs_.group;
    if (w.dim(0) != C || C % G != 0) return false;
    const int64_t M = w.dim(1) * G;
    if (b && (b->rank() != 1 || b->dim(0) != M)) return false;
    std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) return false;
    auto sized = [](const std::vector<int64_t>& v, size_t n, int64_t def, std::vector<int64_t>* out) {
      if (v.empty()) out->assign(n, def);
      else *out = v;
      return out->size() == n;
    };
    nn::WindowGeom& g = p->geom;
    g.nd = nd;
    g.in.assign(x.shape().begin() + 2, x.shape().end());
    g.kernel = kernel;
    std::vector<int64_t> opad, pads, oshape;
    if (!sized(attrs_.strides, nd, 1, &g.strides) || !sized(attrs_.dilations, nd, 1, &g.dilations) ||
        !sized(output_padding_, nd, 0, &opad) || !sized(attrs_.pads, 2 * nd, 0, &pads))
      return false;
    if (!output_shape_.empty()) {
      if (output_shape_.size() == static_cast<size_t>(nd)) oshape = output_shape_;
      else if (output_shape_.size() == static_cast<size_t>(nd + 2)) oshape.assign(output_shape_.begin() + 2, output_shape_.end());
      else return false;
    }
    const bool same = attrs_.auto_pad == nn::AutoPad::kSameUpper || attrs_.auto_pad == nn::AutoPad::kSameLower;
    g.pad_begin.assign(nd, 0);
    g.pad_end.assign(nd, 0);
    g.out.assign(nd, 0);
    for (int d = 0; d < nd; ++d) {
      const int64_t ek = (kernel[d] - 1) * g.dilations[d] + 1;
      const int64_t full = g.strides[d] * (g.in[d] - 1) + opad[d] + ek;
      if (!oshape.empty() || same) {
        const int64_t out = !oshape.empty() ? oshape[d] : g.in[d] * g.strides[d];
        const int64_t total = full - out, half = nn::FloorDiv(total, 2);
        g.pad_begin[d] = attrs_.auto_pad == nn::AutoPad::kSameUpper ? half : total - half;
        g.pad_end[d] = total - g.pad_begin[d];
        g.out[d] = out;
      } else {
        if (attrs_.auto_pad == nn::AutoPad::kNotSet) {
          g.pad_begin[d] = pads[d];
          g.pad_end[d] = pads[d + nd];
        }
        g.out[d] = full - g.pad_begin[d] - g.pad_end[d];
      }
      g.pad_end[d] -= opad[d];  // oneDNN's right padding
      if (g.out[d] <= 0 || g.pad_begin[d] < 0 || g.pad_end[d] < 0) return false;
    }
    p->transposed = true;
    p->x_shape = x.shape();
    p->w_shape = w.shape();
    p->group = G;
    p->out_channels = M;
    p->has_bias = b != nullptr;
    p->y_shape = {N, M};
    p->y_shape.insert(p->y_shape.end(), g.out.begin(), g.out.end());
    p->y_storage = p->y_shape;
    return true;
  }

  // Builds the primitive for `impl`; throws dnnl::error when oneDNN has no implementation.
  // z_binary: Z enters as a binary-add post-op reading Z where it lies (in Y's layout); else Z
  // is first copied into the destination and a sum post-op adds it.
  // prec: kBf16 = bf16 source and weights; kFp16 = a constant W kept as float16.
  std::shared_ptr<const ConvPlan> BuildPlan(const ConvProblem& p, ConvImpl impl, bool w_is_const, bool z_binary,
                                            Precision prec) const {
    auto plan = std::make_shared<ConvPlan>();
    plan->impl = impl;
    plan->y_shape = p.y_storage;
    const int rank = static_cast<int>(p.x_shape.size());
    const int64_t M = p.out_channels, C = p.x_shape[1], G = p.group;
    // oneDNN's weights are (G,) O, I, k...; Conv's W is [M, C/G, k...] in that order, while
    // ConvTranspose's [C, M/G, k...] is (G,) I, O, k... in memory.
    memory::dims wdims;
    if (G > 1) wdims = {G, M / G, C / G};
    else wdims = {M, C};
    wdims.insert(wdims.end(), p.w_shape.begin() + 2, p.w_shape.end());
    const int wrank = static_cast<int>(wdims.size());
    plan->user_src_md = memory::desc(Dims(p.x_shape), dt::f32, p.x_blocked ? BlockedTag(rank, p.block) : PlainTag(rank));
    plan->user_dst_md = memory::desc(Dims(p.y_shape), dt::f32, p.y_blocked ? BlockedTag(rank, p.block) : PlainTag(rank));
    plan->user_wei_md = memory::desc(wdims, dt::f32, p.transposed ? TransposedWeightsTag(wrank, G > 1) : PlainTag(wrank));
    plan->bias_md = memory::desc({M}, dt::f32, tag::a);
    const dt cdt = ComputeType(prec);
    const memory::desc src_any(Dims(p.x_shape), cdt, ActivationTag(impl, rank));
    const memory::desc dst_any(Dims(p.y_shape), dt::f32, ActivationTag(impl, rank));
    const memory::desc wei_any(wdims, cdt, tag::any);
    memory::dims strides, dil, pl, pr;
    for (int d = 0; d < p.nd(); ++d) {
      strides.push_back(p.geom.strides[d]);
      dil.push_back(p.geom.dilations[d] - 1);
      pl.push_back(p.geom.pad_begin[d]);
      pr.push_back(p.geom.pad_end[d]);
    }
    dnnl::post_ops po;
    if (p.has_z && z_binary) po.append_binary(dnnl::algorithm::binary_add, plan->user_dst_md);
    else if (p.has_z) po.append_sum(1.f);
    plan->z_binary = p.has_z && z_binary;
    AppendActivation(act_, po);
    const auto fwd = dnnl::prop_kind::forward_inference;
    auto take = [&](const auto& pd) {
      plan->src_md = pd.src_desc();
      plan->wei_md = pd.weights_desc();
      plan->dst_md = pd.dst_desc();
      plan->scratch_md = pd.scratchpad_desc();
    };
    if (p.transposed) {
      using D = dnnl::deconvolution_forward;
      const auto alg = dnnl::algorithm::deconvolution_direct;
      const auto desc = p.has_bias ? D::desc(fwd, alg, src_any, wei_any, plan->bias_md, dst_any, strides, dil, pl, pr)
                                   : D::desc(fwd, alg, src_any, wei_any, dst_any, strides, dil, pl, pr);
      D::primitive_desc pd(desc, MakeAttr(po), Engine());
      RejectReference(pd);
      plan->prim = D(pd);
      take(pd);
    } else {
      using F = dnnl::convolution_forward;
      const auto alg = impl == ConvImpl::kWinograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
      const auto desc = p.has_bias ? F::desc(fwd, alg, src_any, wei_any, plan->bias_md, dst_any, strides, dil, pl, pr)
                                   : F::desc(fwd, alg, src_any, wei_any, dst_any, strides, dil, pl, pr);
      F::primitive_desc pd(desc, MakeAttr(po), Engine());
      RejectReference(pd);
      plan->prim = F(pd);
      take(pd);
    }
    if (plan->src_md != plan->user_src_md) plan->src_in = MakeReorder(plan->user_src_md, plan->src_md);
    if (plan->dst_md != plan->user_dst_md) {
      // A binary Z in Y's layout while the primitive writes another: the sum path does better.
      if (plan->z_binary) throw dnnl::error(dnnl_unimplemented, "binary Z in another layout than dst");
      plan->dst_out = MakeReorder(plan->dst_md, plan->user_dst_md);
      if (p.has_z) plan->z_in = MakeReorder(plan->user_dst_md, plan->dst_md);
    }
    if (w_is_const && prec == Precision::kFp16) plan->half_wei = const_w_.GetHalf(plan->user_wei_md, plan->wei_md);
    else if (w_is_const) plan->packed_wei = const_w_.Get(plan->user_wei_md, plan->wei_md);  // any layout, plain too
    else if (plan->wei_md != plan->user_wei_md) plan->wei_in = MakeReorder(plan->user_wei_md, plan->wei_md);
    return plan;
  }

  // small_direct's epilogue for `act` into *e (when e is not null); false for an activation it
  // does not take.
  static bool SmallEpilogue(const Activation& act, simd::SmallConvEpilogue* e) {
    simd::UnaryOp op = simd::UnaryOp::kRelu;
    switch (act.kind) {
      case ActivationKind::kNone: break;
      case ActivationKind::kRelu: op = simd::UnaryOp::kRelu; break;
      case ActivationKind::kLeakyRelu: op = simd::UnaryOp::kLeakyRelu; break;
      case ActivationKind::kClip: op = simd::UnaryOp::kClip; break;
      case ActivationKind::kSigmoid: op = simd::UnaryOp::kSigmoid; break;
      case ActivationKind::kTanh: op = simd::UnaryOp::kTanh; break;
      default: return false;
    }
    if (e != nullptr) {
      e->has_act = act.kind != ActivationKind::kNone;
      e->act = op;
      e->act_args = {act.alpha, act.beta};
    }
    return true;
  }

  // small_direct's plan for `p`, or nullptr when the problem is not one it takes.
  std::shared_ptr<const ConvPlan> BuildSmallPlan(const ConvProblem& p, bool w_is_const, Precision prec) const {
    if (p.group != 1 || p.x_blocked || p.y_blocked || !w_is_const || prec != Precision::kFp32) return nullptr;
    if (p.nd() < 2 || p.nd() > 3 || p.x_shape[1] > kSmallConvMaxChannels || p.out_channels > kSmallConvMaxChannels) return nullptr;
    for (int d = 0; d < p.nd(); ++d) {
      // A convolution: stride 1. A ConvTranspose: kernel = stride, no padding (U-Net upsampling).
      const int64_t want_stride = p.transposed ? p.geom.kernel[d] : 1;
      if (p.geom.strides[d] != want_stride || p.geom.dilations[d] != 1) return nullptr;
      if (p.transposed && (p.geom.pad_begin[d] != 0 || p.geom.pad_end[d] != 0)) return nullptr;
    }
    if (!SmallEpilogue(act_, nullptr)) return nullptr;
    auto plan = std::make_shared<ConvPlan>();
    plan->impl = ConvImpl::kSmallDirect;
    plan->y_shape = p.y_storage;
    simd::SmallConvGeom& g = plan->small;
    g.C = p.x_shape[1];
    g.M = p.out_channels;
    // 2-D is 3-D with D = KD = 1: spatial dim i of the problem is dim (3 - nd) + i of (D, H, W).
    int64_t* in[3] = {&g.D, &g.H, &g.W};
    int64_t* k[3] = {&g.KD, &g.KH, &g.KW};
    int64_t* pad[3] = {&g.pd, &g.ph, &g.pw};
    int64_t* out[3] = {&g.Do, &g.Ho, &g.Wo};
    const int first = 3 - p.nd();
    for (int i = 0; i < p.nd(); ++i) {
      *in[first + i] = p.x_shape[2 + i];
      *k[first + i] = p.w_shape[2 + i];
      *pad[first + i] = p.geom.pad_begin[i];
      *out[first + i] = p.y_shape[2 + i];
    }
    if (!(p.transposed ? simd::SmallUpConvSupported(g) : simd::SmallConvSupported(g))) return nullptr;
    Result<Tensor> w = const_w_.Plain();  // the run's W may come without data (KeepsOwnCopyOfConstant)
    if (!w.ok()) return nullptr;
    auto packed = std::make_shared<std::vector<float>>(
        static_cast<size_t>(p.transposed ? simd::SmallUpConvPackedSize(g) : simd::SmallConvPackedSize(g)));
    if (p.transposed) simd::PackSmallUpConvWeights(g, w.value().data<float>(), packed->data());
    else simd::PackSmallConvWeights(g, w.value().data<float>(), packed->data());
    plan->small_wei = std::move(packed);
    return plan;
  }

  // small_direct: per batch item, X's rows copied into padded rows (not for a pointwise
  // convolution), then the output rows, each split over the claimed threads.
  Status RunSmall(const ConvPlan& plan, const ThreadScope& threads, const float* x, const float* b, const float* z,
                  float* y) const {
    const simd::SmallConvGeom& g = plan.small;
    simd::SmallConvEpilogue e;
    SmallEpilogue(act_, &e);  // BuildSmallPlan checked that it takes act_
    e.bias = b;
    const float* packed = plan.small_wei->data();
    const int64_t in_item = g.C * g.D * g.H * g.W, out_item = g.M * g.Do * g.Ho * g.Wo;
    // About 64k multiply-adds per block at least, so that small rows are not split too finely.
    auto grain_for = [](int64_t row_macs) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, row_macs)); };
    if (transposed_) {  // kernel = stride: per batch item, the input rows with their output blocks
      const int64_t grain = grain_for(g.M * g.Wo * g.C * g.KD * g.KH);
      for (int64_t n = 0; n < plan.y_shape[0]; ++n)
        threads.ParallelFor(g.D * g.H, grain, [&](int64_t r0, int64_t r1) {
          simd::SmallUpConvRows(g, x + n * in_item, packed, e, y + n * out_item, r0, r1);
        });
      CountFastPathExecution();
      return Status::Ok();
    }
    const bool pad = simd::SmallConvNeedsPadding(g);
    float* padded = pad ? static_cast<float*>(ThreadScratch(0, static_cast<size_t>(simd::SmallConvPaddedSize(g)) * sizeof(float)))
                        : nullptr;
    if (pad && !padded) return Status::ResourceExhausted("Conv: out of memory for padded input rows");
    const int64_t grain = grain_for(g.M * g.Wo * g.C * g.KD * g.KH * g.KW);
    for (int64_t n = 0; n < plan.y_shape[0]; ++n) {
      const float* xn = x + n * in_item;
      const float* zn = z != nullptr ? z + n * out_item : nullptr;
      float* yn = y + n * out_item;
      const float* rows = xn;  // pointwise: X's rows as they are
      if (pad) {
        threads.ParallelFor(g.C * g.D * g.H, 64, [&](int64_t r0, int64_t r1) { simd::PadSmallConvRows(g, xn, padded, r0, r1); });
        rows = padded;
      }
      threads.ParallelFor(g.Do * g.Ho, grain,
                          [&](int64_t r0, int64_t r1) { simd::SmallConvRows(g, rows, packed, zn, e, yn, r0, r1); });
    }
    CountFastPathExecution();
    return Status::Ok();
  }

  Status RunPlan(const ConvPlan& plan, const ThreadScope& threads, const float* x, const float* w, const float* b,
                 const float* z, float* y) const {
    if (plan.impl == ConvImpl::kSmallDirect) return RunSmall(plan, threads, x, b, z, y);
    const char* what = transposed_ ? "ConvTranspose" : "Conv";
    MemArg user_src(plan.user_src_md, x), src_blocked, wei_tmp, user_wei, bias;
    dnnl_memory_t src = user_src.get();
    if (plan.src_in) {
      void* buf = ThreadScratch(0, plan.src_md.get_size());
      if (!buf) return Status::ResourceExhausted(std::string(what) + ": out of memory for a reordered input");
      src_blocked = MemArg(plan.src_md, buf);
      IL_RETURN_IF_ERROR(RunReorder(*plan.src_in, src, src_blocked.get()));
      src = src_blocked.get();
    }
    dnnl_memory_t wei = nullptr;
    if (plan.packed_wei) {
      wei = plan.packed_wei->get();
    } else if (plan.half_wei) {
      float* buf = static_cast<float*>(ThreadScratch(1, plan.wei_md.get_size()));
      if (!buf) return Status::ResourceExhausted(std::string(what) + ": out of memory for widened weights");
      plan.half_wei->Expand(buf);
      wei_tmp = MemArg(plan.wei_md, buf);
      wei = wei_tmp.get();
    } else {
      user_wei = MemArg(plan.user_wei_md, w);
      wei = user_wei.get();
      if (plan.wei_in) {
        void* buf = ThreadScratch(1, plan.wei_md.get_size());
        if (!buf) return Status::ResourceExhausted(std::string(what) + ": out of memory for reordered weights");
        wei_tmp = MemArg(plan.wei_md, buf);
        IL_RETURN_IF_ERROR(RunReorder(*plan.wei_in, wei, wei_tmp.get()));
        wei = wei_tmp.get();
      }
    }
    MemArg user_dst(plan.user_dst_md, y), dst_blocked, user_z;
    dnnl_memory_t dst = user_dst.get();
    if (plan.dst_out) {
      void* buf = ThreadScratch(2, plan.dst_md.get_size());
      if (!buf) return Status::ResourceExhausted(std::string(what) + ": out of memory for a reordered output");
      dst_blocked = MemArg(plan.dst_md, buf);
      dst = dst_blocked.get();
    }
    MemArg z_arg;
    if (z && plan.z_binary) {  // read in place by the binary-add post-op (the first post-op)
      z_arg = MemArg(plan.user_dst_md, z);
    } else if (z) {  // the sum post-op adds what dst holds
      if (plan.z_in) {
        user_z = MemArg(plan.user_dst_md, z);
        IL_RETURN_IF_ERROR(RunReorder(*plan.z_in, user_z.get(), dst));
      } else if (z != y) {
        std::memcpy(y, z, plan.user_dst_md.get_size());
      }
    }
    ExecArgs args;
    args.Add(DNNL_ARG_SRC, src);
    args.Add(DNNL_ARG_WEIGHTS, wei);
    args.Add(DNNL_ARG_DST, dst);
    if (b) {
      bias = MemArg(plan.bias_md, b);
      args.Add(DNNL_ARG_BIAS, bias.get());
    }
    if (z_arg) args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, z_arg.get());
    IL_RETURN_IF_ERROR(Execute(plan.prim, plan.scratch_md, args, what));
    if (plan.dst_out) IL_RETURN_IF_ERROR(RunReorder(*plan.dst_out, dst, user_dst.get()));
    return Status::Ok();
  }

  // A plan for a shape not seen before: picks the implementation (tuning cache, timing the
  // candidates on these inputs into *y, or the heuristic) and builds it. A plan marked
  // scalar_only when oneDNN can take the problem in no way.
  Result<std::shared_ptr<const ConvPlan>> MakePlan(const ConvProblem& p, bool w_is_const, const ThreadScope& threads,
                                                   const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* z,
                                                   Tensor* y) const {
    auto try_build = [&](ConvImpl impl, Precision prec) -> std::shared_ptr<const ConvPlan> {
      if (impl == ConvImpl::kWinograd && !p.WinogradShape()) return nullptr;
      if (impl == ConvImpl::kSmallDirect) return BuildSmallPlan(p, w_is_const, prec);
      try {
        if (p.has_z) {
          try {
            return BuildPlan(p, impl, w_is_const, /*z_binary=*/true, prec);
          } catch (const dnnl::error&) {
          }
        }
        return BuildPlan(p, impl, w_is_const, /*z_binary=*/false, prec);
      } catch (const dnnl::error&) {
        return nullptr;
      }
    };
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    const float* pb = b ? b->data<float>() : nullptr;
    const float* pz = z ? z->data<float>() : nullptr;
    float* py = y->data<float>();
    const std::string tkey = p.TuningKey(prec_);
    std::shared_ptr<const ConvPlan> chosen;
    if (auto winner = TuningCache::Global().Find(tkey)) {
      for (ConvImpl impl : kAllImpls)
        if (*winner == ImplName(impl)) chosen = try_build(impl, prec_);
    }
    if (!chosen && AutotuneEnabled()) {
      AutotuneTimer charge;  // building and timing the candidates
      std::vector<std::shared_ptr<const ConvPlan>> cands;
      std::vector<std::function<Status()>> runs;
      std::vector<double> handicap;
      for (ConvImpl impl : kAllImpls)
        if (auto cand = try_build(impl, prec_)) {
          cands.push_back(cand);
          runs.push_back([this, cand, &threads, px, pw, pb, pz, py] { return RunPlan(*cand, threads, px, pw, pb, pz, py); });
          // Winograd keeps its weights in a 16/9 larger format of its own, and with constant
          // weights a reorderable copy besides (PackedWeights): it must win by 10% to be worth
          // that (ResNet-50 batch 8 with it on the 512-channel 3x3 layers: 446 vs 366 MB peak).
          handicap.push_back(impl == ConvImpl::kWinograd && w_is_const ? 1.10 : 1.0);
        }
      if (!cands.empty()) {
        IL_ASSIGN_OR_RETURN(size_t best, PickFastest(runs, handicap));
        chosen = cands[best];
        TuningCache::Global().Store(tkey, ImplName(chosen->impl));
      }
    }
    if (!chosen) {
      // Heuristic (what tuning picks most on ResNet-50 / MobileNetV2 shapes): Winograd where it
      // applies, else nChw16c, else whatever oneDNN prefers, else plain. Up to 8 output channels
      // (half of oneDNN's 16-channel block) small_direct first: 1.5-1.7x oneDNN's best layout on
      // the CT U-Net's 3-D shapes (docs/PERFORMANCE.md, "3-D U-Net").
      if (p.out_channels <= simd::kSmallConvOutBlock) chosen = try_build(ConvImpl::kSmallDirect, prec_);
      for (ConvImpl impl : {ConvImpl::kWinograd, ConvImpl::kBlocked16, ConvImpl::kAny, ConvImpl::kPlain})
        if (!chosen) chosen = try_build(impl, prec_);
    }
    if (!chosen && prec_ == Precision::kBf16) {  // no bf16 implementation for this case: f32
      for (ConvImpl impl : {ConvImpl::kBlocked16, ConvImpl::kAny, ConvImpl::kPlain})
        if (!chosen) chosen = try_build(impl, Precision::kFp32);
    }
    if (!chosen) {
      auto none = std::make_shared<ConvPlan>();
      none->scalar_only = true;
      return std::shared_ptr<const ConvPlan>(none);
    }
    if (chosen->packed_wei) const_w_.Retain(chosen->packed_wei);  // the tuning losers' copies go
    if (chosen->half_wei) const_w_.Retain(chosen->half_wei);
    return chosen;
  }

  nn::WindowAttrs attrs_;
  Activation act_;
  bool fused_;
  int64_t block_ = 0;  // FusedConv layout NCHW16c / NCHW8c (16 / 8): Y and Z blocked, X either
  bool transposed_ = false;
  std::vector<int64_t> output_padding_, output_shape_;  // ConvTranspose
  bool KeepsOwnCopyOfConstant(int i) const override { return i == 1 && const_w_.defined() && (Enabled() || block_); }
  void ForEachOwnConstantBuffer(const std::function<void(const void*, size_t)>& fn) const override {
    const_w_.ForEachBuffer(fn);
  }
  Precision prec_ = Precision::kFp32;  // kFp32, kBf16 or kFp16
  PackedWeights const_w_;
  std::unique_ptr<Kernel> scalar_;
  mutable ShapeCache<ConvPlan> plans_;
};

Result<std::unique_ptr<Kernel>> Make(const KernelInfo& info, const KernelFactory& scalar_conv, bool fused) {
  IL_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> scalar, scalar_conv(info));
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, false));
  Activation act;
  int64_t block = 0;
  if (fused) {
    IL_ASSIGN_OR_RETURN(act, ActivationFromInfo(info));
    IL_ASSIGN_OR_RETURN(block, BlockedLayoutFromInfo(info));
  }
  return std::unique_ptr<Kernel>(
      std::make_unique<ConvKernel>(std::move(attrs), act, fused, block, info.float_precision(), info.constant_input(1),
                                   std::move(scalar)));
}

}  // namespace

Result<std::unique_ptr<Kernel>> MakeConv(const KernelInfo& info, const KernelFactory& scalar_conv) {
  return Make(info, scalar_conv, false);
}

Result<std::unique_ptr<Kernel>> MakeFusedConv(const KernelInfo& info, const KernelFactory& scalar_conv) {
  return Make(info, scalar_conv, true);
}

Result<std::unique_ptr<Kernel>> MakeConvTranspose(const KernelInfo& info, const KernelFactory& scalar_conv_transpose) {
  IL_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> scalar, scalar_conv_transpose(info));
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, false));
  return std::unique_ptr<Kernel>(std::make_unique<ConvKernel>(std::move(attrs), info.GetInts("output_padding"),
                                                              info.GetInts("output_shape"), info.float_precision(),
                                                              info.constant_input(1),
                                                              std::move(scalar)));
}

}  // namespace dnnl_kernels
}  // namespace inferloop
