// INT8 kernels for the QDQ fusion (src/optimizer/qdq_fusion.cc; docs/FUSED_OPS.md and
// docs/QUANTIZATION.md "INT8 execution"), all com.inferloop:
//
//   QConv(X, x_scale, x_zp, W, w_scale, w_zp, [y_scale, y_zp], [B])          2-D convolution
//   QMatMul(A, a_scale, a_zp, B, b_scale, b_zp, [y_scale, y_zp], [bias], [post_bias])
//                                                                              A [..., M, K] x B [K, N]
//   QAdd(A, a_scale, a_zp, B, b_scale, b_zp, y_scale, y_zp)                    same-shape residual add
//   QMaxPool(X)                                                                max pool, 8-bit in and out
//   QGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp)
//   DynamicQMatMul(A, a_scale, a_zp, B, b_scale, [bias])                       ORT's dynamic format (below)
//   QConcat(y_scale, y_zp, X0, s0, z0, X1, s1, z1, ...)                        Concat, inputs requantized
//   QAveragePool(X, x_scale, x_zp, y_scale, y_zp)                              count_include_pad = 0
//
// Semantics: those of the float graph DequantizeLinear -> op [-> activation] -> QuantizeLinear
// they replace (QLinearConv / QLinearMatMul's when there is no activation): X, A, B uint8 or
// int8 with per-tensor scales and zero points; W / B int8 constants with per-tensor or
// per-output-channel scales (W axis 0, B axis 1) and zero points 0; the bias int32 in units of
// x_scale * w_scale (zero point 0). Without y_scale / y_zp the output is float32 (the
// dequantized result, no rounding to 8 bits). Attribute `activation` (Relu or Clip) is applied
// before quantizing the output. Attribute `layout` "NHWC" (QConv, QMaxPool,
// QGlobalAveragePool): rank-4 8-bit tensors are stored channels-last, shape [N, H, W, C]
// (QAdd is elementwise and takes either). Scales and zero points must be constants.
// QMatMul attribute dequantize_output = 1 (with y_scale): the output is float32, the 8-bit result
// dequantized (DequantizeLinear(y, y_scale, y_zp)) plus the optional float32 post_bias [N]: what
// QuantizeLinear -> DequantizeLinear -> Add(bias) after a MatMul computes, in one primitive.
//
// QConv and QMatMul run oneDNN int8 primitives (u8/s8 x s8 -> s32 accumulation, output scales
// x_scale * w_scale / y_scale per channel, zero points, the activation as a post-op); oneDNN uses
// AMX or AVX512-VNNI where the CPU has them and its AVX2 / SSE4.1 int8 code otherwise. Weights
// are reordered once per plan into the layout the primitive asks for.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <string>

#include "compute/kernels/dnnl_common.h"
#include "compute/kernels/nn_common.h"
#include "compute/simd/int8_loops.h"
#include "compute/simd/quantize_linear.h"

namespace inferloop {
namespace dnnl_kernels {
namespace {

bool Is8Bit(DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; }
dt DnnlType(DataType t) {
  switch (t) {
    case DataType::kUInt8: return dt::u8;
    case DataType::kInt8: return dt::s8;
    case DataType::kInt32: return dt::s32;
    default: return dt::f32;
  }
}

// A scalar quantization parameter read from a constant input.
struct QParam {
  float scale = 1.f;
  int32_t zp = 0;
  DataType type = DataType::kUInt8;  // the zero point's (= the quantized tensor's) dtype
};

Result<std::vector<float>> ConstFloats(const KernelInfo& info, int i, const char* what) {
  const Tensor* t = info.constant_input(i);
  if (!t || t->dtype() != DataType::kFloat || t->size() < 1)
    return info.Invalid(std::string(what) + " must be a float32 constant");
  return std::vector<float>(t->data<float>(), t->data<float>() + t->size());
}

// Scale at input si, zero point at zi (zi absent: 0 of `default_type`).
Result<QParam> ConstQParam(const KernelInfo& info, int si, int zi, DataType default_type, const char* what) {
  QParam q;
  IL_ASSIGN_OR_RETURN(auto s, ConstFloats(info, si, what));
  if (s.size() != 1 || !(s[0] > 0) || !std::isfinite(s[0]))
    return info.Invalid(std::string(what) + " scale must be one positive finite float");
  q.scale = s[0];
  q.type = default_type;
  if (info.has_input(zi)) {
    const Tensor* z = info.constant_input(zi);
    if (!z || z->size() != 1 || !Is8Bit(z->dtype())) return info.Invalid(std::string(what) + " zero point must be an 8-bit constant scalar");
    q.type = z->dtype();
    q.zp = z->dtype() == DataType::kUInt8 ? z->data<uint8_t>()[0] : z->data<int8_t>()[0];
  }
  return q;
}

// Weight scales (1 or `channels`) and a check that the weight zero points are all 0.
Result<std::vector<float>> WeightScales(const KernelInfo& info, int si, int zi, int64_t channels) {
  IL_ASSIGN_OR_RETURN(auto s, ConstFloats(info, si, "weight scale"));
  if (s.size() != 1 && static_cast<int64_t>(s.size()) != channels)
    return info.Invalid("weight scale must have 1 or " + std::to_string(channels) + " elements, got " + std::to_string(s.size()));
  if (info.has_input(zi)) {
    const Tensor* z = info.constant_input(zi);
    if (!z || z->dtype() != DataType::kInt8) return info.Invalid("weight zero point must be an int8 constant");
    for (int64_t k = 0; k < z->size(); ++k)
      if (z->data<int8_t>()[k] != 0) return info.Invalid("weight zero points must be 0 (symmetric int8 weights)");
  }
  return s;
}

// The optional int32 bias at input i (`channels` elements) as a constant copy.
Result<Tensor> ConstBias(const KernelInfo& info, int i, int64_t channels) {
  if (!info.has_input(i)) return Tensor();
  const Tensor* b = info.constant_input(i);
  if (!b || b->dtype() != DataType::kInt32 || b->size() != channels)
    return info.Invalid("bias must be an int32 constant of " + std::to_string(channels) + " elements");
  return b->Clone();
}

// Output quantization: y_scale / y_zp at inputs si, zi, both absent for a float32 output.
struct OutQuant {
  bool float_out = true;
  QParam q;
};
Result<OutQuant> ParseOut(const KernelInfo& info, int si, int zi) {
  OutQuant o;
  if (!info.has_input(si)) {
    if (info.has_input(zi)) return info.Invalid("y_zero_point given without y_scale");
    return o;
  }
  o.float_out = false;
  IL_ASSIGN_OR_RETURN(o.q, ConstQParam(info, si, zi, DataType::kUInt8, "y"));
  return o;
}

Result<bool> NhwcFromInfo(const KernelInfo& info) {
  const std::string l = info.GetString("layout", "NCHW");
  if (l == "NCHW") return false;
  if (l == "NHWC") return true;
  return info.Invalid("layout must be NCHW or NHWC, got '" + l + "'");
}

// Builds the primitive attribute: output scales, runtime zero points where nonzero, the
// activation post-op. oneDNN computes dst = sat(round(post_ops(scales * (acc + bias))) + dst_zp)
// with acc = sum (src - src_zp) * wei.
dnnl::primitive_attr QuantAttr(const std::vector<float>& scales, int per_channel_mask, int32_t src_zp, const OutQuant& out,
                               const Activation& act) {
  dnnl::post_ops po;
  AppendActivation(act, po);
  dnnl::primitive_attr attr = MakeAttr(po);
  attr.set_output_scales(scales.size() > 1 ? per_channel_mask : 0, scales);
  if (src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (!out.float_out && out.q.zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  return attr;
}

std::vector<float> OutputScales(float x_scale, const std::vector<float>& w_scale, const OutQuant& out) {
  std::vector<float> s(w_scale.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = x_scale * w_scale[i] / (out.float_out ? 1.f : out.q.scale);
  return s;
}

float Lo(DataType t) { return t == DataType::kUInt8 ? 0.f : -128.f; }
float Hi(DataType t) { return t == DataType::kUInt8 ? 255.f : 127.f; }

// Scalar int32 zero points as oneDNN memories (read at execution).
struct ZeroPoints {
  int32_t src = 0, dst = 0;
  memory::desc md{{1}, dt::s32, tag::a};
};
void AddZeroPoints(const ZeroPoints& z, ExecArgs& args, MemArg* src_m, MemArg* dst_m) {
  if (z.src != 0) {
    *src_m = MemArg(z.md, &z.src);
    args.Add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, src_m->get());
  }
  if (z.dst != 0) {
    *dst_m = MemArg(z.md, &z.dst);
    args.Add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dst_m->get());
  }
}

// True when oneDNN's int8 kernels on this CPU accumulate u8 x s8 products exactly: with VNNI
// (AVX512-VNNI, AVX-VNNI) or AMX. Without them (AVX2, AVX-512 before VNNI) oneDNN sums pairs of
// products in saturating int16, which overflows for full-range int8 weights; QConv and QMatMul
// then compute in float32 instead (dequantize, float primitive, quantize), the float graph's
// semantics. ONEDNN_MAX_CPU_ISA lowers what oneDNN reports here.
bool NativeInt8() {
  static const bool native = [] {
    const auto isa = dnnl::get_effective_cpu_isa();
    using I = dnnl::cpu_isa;
    return isa == I::avx512_core_vnni || isa == I::avx512_core_bf16 || isa == I::avx512_core_amx || isa == I::avx2_vnni;
  }();
  return native;
}

// Dequantizes n 8-bit values of dtype t into float32.
void DequantizeTo(DataType t, const void* x, float* y, int64_t n, const QParam& q, ThreadPool* pool) {
  ParallelFor(pool, n, 1 << 16, [&](int64_t b, int64_t e) {
    if (t == DataType::kUInt8) simd::DequantizeU8(static_cast<const uint8_t*>(x) + b, y + b, e - b, q.scale, q.zp);
    else simd::DequantizeS8(static_cast<const int8_t*>(x) + b, y + b, e - b, q.scale, q.zp);
  });
}
void QuantizeTo(const float* x, void* y, int64_t n, const QParam& q, ThreadPool* pool) {
  ParallelFor(pool, n, 1 << 16, [&](int64_t b, int64_t e) {
    if (q.type == DataType::kUInt8) simd::QuantizeToU8(x + b, static_cast<uint8_t*>(y) + b, e - b, q.scale, q.zp);
    else simd::QuantizeToS8(x + b, static_cast<int8_t*>(y) + b, e - b, q.scale, q.zp);
  });
}

// Float32 copies of int8 weights and the int32 bias, dequantized: w * scale[c] with c the row
// (per_row) or the column of w's 2-D view [rows, n / rows]; bias * x_scale * scale[c].
std::vector<float> DequantWeights(const Tensor& w, const std::vector<float>& w_scale, bool per_row, int64_t rows) {
  const int64_t n = w.size(), cols = n / rows;
  std::vector<float> out(static_cast<size_t>(n));
  const int8_t* p = w.data<int8_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t ch = w_scale.size() == 1 ? 0 : static_cast<size_t>(per_row ? r : c);
      out[r * cols + c] = static_cast<float>(p[r * cols + c]) * w_scale[ch];
    }
  return out;
}
std::vector<float> DequantBias(const Tensor& b, const std::vector<float>& w_scale, float x_scale) {
  std::vector<float> out(static_cast<size_t>(b.size()));
  for (int64_t c = 0; c < b.size(); ++c)
    out[c] = static_cast<float>(static_cast<double>(b.data<int32_t>()[c]) * x_scale * w_scale[w_scale.size() == 1 ? 0 : c]);
  return out;
}

// --------------------------------------------------------------------------------------------
// QConv

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
    if (!NativeInt8()) {
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

// --------------------------------------------------------------------------------------------
// QMatMul

struct QMatMulPlan {
  bool f32 = false;  // float32 path (no VNNI / AMX)
  int post_bias_index = -1;  // the binary-add post-op's index (dequantize_output with post_bias)
  memory::desc post_bias_md;
  std::shared_ptr<std::vector<float>> bias_f32;
  dnnl::primitive prim;
  memory::desc src_md, dst_md, scratch_md, bias_md;
  std::shared_ptr<dnnl::memory> wei;
  ZeroPoints zp;
};

class QMatMulKernel final : public Kernel {
 public:
  QMatMulKernel(Activation act, QParam a, std::vector<float> b_scale, OutQuant out, Tensor b, Tensor bias, bool deq_out,
                Tensor post_bias)
      : act_(act), a_(a), b_scale_(std::move(b_scale)), out_(out), b_(std::move(b)), bias_(std::move(bias)), deq_out_(deq_out),
        post_bias_(std::move(post_bias)) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
    if (a->dtype() != a_.type)
      return ctx.Invalid(std::string("A must be ") + DataTypeName(a_.type) + " like its zero point, got " + DataTypeName(a->dtype()));
    const int64_t K = b_.dim(0), N = b_.dim(1);
    if (a->rank() < 1 || a->dim(a->rank() - 1) != K)
      return ctx.Invalid("A " + ShapeToString(a->shape()) + " does not fit B " + ShapeToString(b_.shape()));
    const int64_t M = a->size() / K;
    Shape ys = a->shape();
    ys.back() = N;
    if (a->rank() == 1) ys = {N};
    ThreadScope threads(ctx);
    PlanKey key;
    key.Add(M);
    key.Add(threads.threads());
    std::shared_ptr<const QMatMulPlan> plan = plans_.Find(key);
    if (!plan) {
      try {
        plan = plans_.Insert(key, MakePlan(M));
      } catch (const dnnl::error& e) {
        return Status::Unimplemented(ctx.node().Describe() + ": oneDNN has no int8 matmul for this case: " + e.what());
      }
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(out_.float_out || deq_out_ ? DataType::kFloat : out_.q.type, ys));
    if (M > 0 && plan->f32) {
      float* af = static_cast<float*>(ThreadScratch(0, a->size() * sizeof(float)));
      float* yf = out_.float_out ? y.data<float>() : static_cast<float*>(ThreadScratch(2, y.size() * sizeof(float)));
      if (!af || !yf) return Status::ResourceExhausted("QMatMul: out of memory for float copies");
      DequantizeTo(a->dtype(), a->raw_data(), af, a->size(), a_, nullptr);
      MemArg src(plan->src_md, af), dst(plan->dst_md, yf), bias;
      ExecArgs args;
      args.Add(DNNL_ARG_SRC, src.get());
      args.Add(DNNL_ARG_WEIGHTS, plan->wei->get());
      args.Add(DNNL_ARG_DST, dst.get());
      if (plan->bias_f32) {
        bias = MemArg(plan->bias_md, plan->bias_f32->data());
        args.Add(DNNL_ARG_BIAS, bias.get());
      }
      IL_RETURN_IF_ERROR(Execute(plan->prim, plan->scratch_md, args, "QMatMul"));
      if (deq_out_) {  // round to the 8-bit grid and back, then the post bias
        void* q8 = ThreadScratch(1, static_cast<size_t>(y.size()));
        if (!q8) return Status::ResourceExhausted("QMatMul: out of memory for the 8-bit result");
        QuantizeTo(yf, q8, y.size(), out_.q, nullptr);
        float* py = y.data<float>();
        DequantizeTo(out_.q.type, q8, py, y.size(), out_.q, nullptr);
        if (post_bias_.defined())
          for (int64_t i = 0; i < y.size(); ++i) py[i] += post_bias_.data<float>()[i % N];
      } else if (!out_.float_out) {
        QuantizeTo(yf, y.raw_data(), y.size(), out_.q, nullptr);
      }
    } else if (M > 0) {
      MemArg src(plan->src_md, a->raw_data()), dst(plan->dst_md, y.raw_data()), bias, zs, zd;
      ExecArgs args;
      args.Add(DNNL_ARG_SRC, src.get());
      args.Add(DNNL_ARG_WEIGHTS, plan->wei->get());
      args.Add(DNNL_ARG_DST, dst.get());
      if (bias_.defined()) {
        bias = MemArg(plan->bias_md, bias_.raw_data());
        args.Add(DNNL_ARG_BIAS, bias.get());
      }
      AddZeroPoints(plan->zp, args, &zs, &zd);
      MemArg pb;
      if (plan->post_bias_index >= 0) {
        pb = MemArg(plan->post_bias_md, post_bias_.raw_data());
        args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(plan->post_bias_index) | DNNL_ARG_SRC_1, pb.get());
      }
      IL_RETURN_IF_ERROR(Execute(plan->prim, plan->scratch_md, args, "QMatMul"));
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  std::shared_ptr<const QMatMulPlan> MakePlan(int64_t M) const {
    const int64_t K = b_.dim(0), N = b_.dim(1);
    auto plan = std::make_shared<QMatMulPlan>();
    const dt ydt = out_.float_out ? dt::f32 : DnnlType(out_.q.type);
    const memory::dims md = {std::max<int64_t>(M, 1), K};
    plan->src_md = memory::desc(md, DnnlType(a_.type), tag::ab);
    plan->dst_md = memory::desc({md[0], N}, ydt, tag::ab);
    plan->bias_md = memory::desc({1, N}, dt::s32, tag::ab);
    if (!NativeInt8()) {
      plan->f32 = true;
      plan->src_md = memory::desc(md, dt::f32, tag::ab);
      plan->dst_md = memory::desc({md[0], N}, dt::f32, tag::ab);
      plan->bias_md = memory::desc({1, N}, dt::f32, tag::ab);
      const memory::desc wf_any({K, N}, dt::f32, tag::any), wf_user({K, N}, dt::f32, tag::ab);
      dnnl::post_ops po;
      AppendActivation(act_, po);
      dnnl::matmul::primitive_desc pd = bias_.defined()
          ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wf_any, plan->bias_md, plan->dst_md), MakeAttr(po), Engine())
          : dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wf_any, plan->dst_md), MakeAttr(po), Engine());
      plan->prim = dnnl::matmul(pd);
      plan->scratch_md = pd.scratchpad_desc();
      auto wf = DequantWeights(b_, b_scale_, /*per_row=*/false, K);
      if (bias_.defined()) plan->bias_f32 = std::make_shared<std::vector<float>>(DequantBias(bias_, b_scale_, a_.scale));
      plan->wei = std::make_shared<dnnl::memory>(pd.weights_desc(), Engine());
      dnnl::memory user_w(wf_user, Engine(), wf.data());
      if (!RunReorder(MakeReorder(wf_user, pd.weights_desc()), user_w.get(), plan->wei->get()).ok())
        throw dnnl::error(dnnl_runtime_error, "weights reorder failed");
      return plan;
    }
    const memory::desc wei_any({K, N}, dt::s8, tag::any), user_wei({K, N}, dt::s8, tag::ab);
    plan->zp.src = a_.zp;
    plan->zp.dst = out_.float_out || deq_out_ ? 0 : out_.q.zp;
    dnnl::primitive_attr attr;
    if (deq_out_) {
      // f32 dst: v = scale * acc, activation, round half to even, clip to the 8-bit range less the
      // zero point, times y_scale, plus the post bias: DequantizeLinear(QuantizeLinear(.)) + bias.
      plan->dst_md = memory::desc({md[0], N}, dt::f32, tag::ab);
      dnnl::post_ops po;
      AppendActivation(act_, po);
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, Lo(out_.q.type) - out_.q.zp, Hi(out_.q.type) - out_.q.zp);
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, out_.q.scale, 0.f);
      if (post_bias_.defined()) {
        plan->post_bias_index = po.len();
        plan->post_bias_md = memory::desc({1, N}, dt::f32, tag::ab);
        po.append_binary(dnnl::algorithm::binary_add, plan->post_bias_md);
      }
      attr = MakeAttr(po);
      attr.set_output_scales(b_scale_.size() > 1 ? 1 << 1 : 0, OutputScales(a_.scale, b_scale_, out_));
      if (a_.zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    } else {
      attr = QuantAttr(OutputScales(a_.scale, b_scale_, out_), 1 << 1, a_.zp, out_, act_);
    }
    dnnl::matmul::primitive_desc pd = bias_.defined()
        ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wei_any, plan->bias_md, plan->dst_md), attr, Engine())
        : dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wei_any, plan->dst_md), attr, Engine());
    plan->prim = dnnl::matmul(pd);
    plan->scratch_md = pd.scratchpad_desc();
    plan->wei = std::make_shared<dnnl::memory>(pd.weights_desc(), Engine());
    dnnl::memory user_w(user_wei, Engine(), const_cast<void*>(b_.raw_data()));
    const ReorderPrim r = MakeReorder(user_wei, pd.weights_desc());
    const Status s = RunReorder(r, user_w.get(), plan->wei->get());
    if (!s.ok()) throw dnnl::error(dnnl_runtime_error, "weights reorder failed");
    return plan;
  }

  bool KeepsOwnCopyOfConstant(int i) const override { return i == 3; }  // cloned at creation

  Activation act_;
  QParam a_;
  std::vector<float> b_scale_;
  OutQuant out_;
  Tensor b_, bias_;
  bool deq_out_;
  Tensor post_bias_;  // float32 [N] or undefined
  mutable ShapeCache<QMatMulPlan> plans_;
};

Result<std::unique_ptr<Kernel>> MakeQMatMul(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(Activation act, ActivationFromInfo(info));
  IL_ASSIGN_OR_RETURN(QParam a, ConstQParam(info, 1, 2, DataType::kUInt8, "a"));
  const Tensor* b = info.constant_input(3);
  if (!b || b->dtype() != DataType::kInt8 || b->rank() != 2) return info.Invalid("B must be a rank-2 int8 constant [K, N]");
  IL_ASSIGN_OR_RETURN(auto bs, WeightScales(info, 4, 5, b->dim(1)));
  IL_ASSIGN_OR_RETURN(OutQuant out, ParseOut(info, 6, 7));
  IL_ASSIGN_OR_RETURN(Tensor bias, ConstBias(info, 8, b->dim(1)));
  const bool deq_out = info.GetInt("dequantize_output", 0) != 0;
  if (deq_out && out.float_out) return info.Invalid("dequantize_output needs y_scale");
  Tensor post_bias;
  if (info.has_input(9)) {
    const Tensor* pb = info.constant_input(9);
    if (!deq_out || !pb || pb->dtype() != DataType::kFloat || pb->size() != b->dim(1))
      return info.Invalid("post_bias must be a float32 constant of N elements, with dequantize_output = 1");
    post_bias = pb->Clone();
  }
  return std::unique_ptr<Kernel>(
      std::make_unique<QMatMulKernel>(act, a, std::move(bs), out, b->Clone(), std::move(bias), deq_out, std::move(post_bias)));
}

// --------------------------------------------------------------------------------------------
// DynamicQMatMul(A, a_scale, a_zp, B, b_scale, [bias]): ORT's dynamic format
// DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(a_scale * b_scale) [-> Add(bias)] from
// A's 8-bit values onwards: Y = (A - a_zp) x B * a_scale * b_scale[n] + bias[n], float32. a_scale
// and a_zp are run-time scalars (DynamicQuantizeLinear's outputs); B an int8 constant [K, N] with
// zero points 0; b_scale 1 or N floats; bias float32 [N].

struct DynPlan {
  bool f32 = false;
  dnnl::primitive prim;
  memory::desc src_md, dst_md, scratch_md, bias_md, scales_md;
  std::shared_ptr<dnnl::memory> wei;
};

class DynamicQMatMulKernel final : public Kernel {
 public:
  DynamicQMatMulKernel(Tensor b, std::vector<float> b_scale, Tensor bias)
      : b_(std::move(b)), b_scale_(std::move(b_scale)), bias_(std::move(bias)) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* as, ctx.RequireInput(1));
    const Tensor* az = ctx.input(2);
    if (!Is8Bit(a->dtype())) return ctx.Invalid("A must be uint8 or int8");
    if (as->dtype() != DataType::kFloat || as->size() != 1) return ctx.Invalid("a_scale must be a float32 scalar");
    if (az && (az->dtype() != a->dtype() || az->size() != 1)) return ctx.Invalid("a_zero_point must be a scalar of A's dtype");
    const int64_t K = b_.dim(0), N = b_.dim(1);
    if (a->rank() < 1 || a->dim(a->rank() - 1) != K)
      return ctx.Invalid("A " + ShapeToString(a->shape()) + " does not fit B " + ShapeToString(b_.shape()));
    const int64_t M = a->size() / K;
    Shape ys = a->shape();
    ys.back() = N;
    QParam q;
    q.scale = as->data<float>()[0];
    q.type = a->dtype();
    q.zp = !az ? 0 : a->dtype() == DataType::kUInt8 ? az->data<uint8_t>()[0] : az->data<int8_t>()[0];
    ThreadScope threads(ctx);
    PlanKey key;
    key.Add(M);
    key.Add(static_cast<int64_t>(a->dtype()));
    key.Add(threads.threads());
    std::shared_ptr<const DynPlan> plan = plans_.Find(key);
    if (!plan) {
      try {
        plan = plans_.Insert(key, MakePlan(M, a->dtype()));
      } catch (const dnnl::error& e) {
        return Status::Unimplemented(ctx.node().Describe() + ": oneDNN has no int8 matmul for this case: " + e.what());
      }
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, ys));
    if (M == 0) {
      ctx.SetOutput(0, std::move(y));
      return Status::Ok();
    }
    MemArg dst(plan->dst_md, y.raw_data()), src, bias, scales, zs;
    ExecArgs args;
    if (plan->f32) {
      float* af = static_cast<float*>(ThreadScratch(0, a->size() * sizeof(float)));
      if (!af) return Status::ResourceExhausted("DynamicQMatMul: out of memory for a float copy");
      DequantizeTo(a->dtype(), a->raw_data(), af, a->size(), q, nullptr);
      src = MemArg(plan->src_md, af);
    } else {
      src = MemArg(plan->src_md, a->raw_data());
      scales = MemArg(plan->scales_md, &q.scale);  // a_scale, a binary-mul post-op operand
      args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, scales.get());
      zs = MemArg(memory::desc({1}, dt::s32, tag::a), &q.zp);
      args.Add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zs.get());
    }
    args.Add(DNNL_ARG_SRC, src.get());
    args.Add(DNNL_ARG_WEIGHTS, plan->wei->get());
    args.Add(DNNL_ARG_DST, dst.get());
    if (bias_.defined()) {
      bias = MemArg(plan->bias_md, bias_.raw_data());
      args.Add(plan->f32 ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1), bias.get());
    }
    IL_RETURN_IF_ERROR(Execute(plan->prim, plan->scratch_md, args, "DynamicQMatMul"));
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  std::shared_ptr<const DynPlan> MakePlan(int64_t M, DataType a_type) const {
    const int64_t K = b_.dim(0), N = b_.dim(1);
    auto plan = std::make_shared<DynPlan>();
    const memory::dims md = {M, K};
    plan->dst_md = memory::desc({M, N}, dt::f32, tag::ab);
    plan->bias_md = memory::desc({1, N}, dt::f32, tag::ab);
    const memory::desc user_wei({K, N}, dt::s8, tag::ab);
    if (!NativeInt8()) {  // float: B dequantized once; A per call
      plan->f32 = true;
      plan->src_md = memory::desc(md, dt::f32, tag::ab);
      const memory::desc wf_any({K, N}, dt::f32, tag::any), wf_user({K, N}, dt::f32, tag::ab);
      dnnl::matmul::primitive_desc pd = bias_.defined()
          ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wf_any, plan->bias_md, plan->dst_md), MakeAttr({}), Engine())
          : dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wf_any, plan->dst_md), MakeAttr({}), Engine());
      plan->prim = dnnl::matmul(pd);
      plan->scratch_md = pd.scratchpad_desc();
      auto wf = DequantWeights(b_, b_scale_, /*per_row=*/false, K);
      plan->wei = std::make_shared<dnnl::memory>(pd.weights_desc(), Engine());
      dnnl::memory uw(wf_user, Engine(), wf.data());
      if (!RunReorder(MakeReorder(wf_user, pd.weights_desc()), uw.get(), plan->wei->get()).ok())
        throw dnnl::error(dnnl_runtime_error, "weights reorder failed");
      return plan;
    }
    plan->src_md = memory::desc(md, DnnlType(a_type), tag::ab);
    // Constant output scales b_scale (runtime ones would rule out oneDNN's brgemm kernels), then
    // times the run-time a_scale (a binary-mul post-op on a 1x1 tensor), then the bias.
    plan->scales_md = memory::desc({1, 1}, dt::f32, tag::ab);
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_mul, plan->scales_md);
    if (bias_.defined()) po.append_binary(dnnl::algorithm::binary_add, plan->bias_md);
    dnnl::primitive_attr attr = MakeAttr(po);
    attr.set_output_scales(b_scale_.size() > 1 ? 1 << 1 : 0, b_scale_);
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    const memory::desc wei_any({K, N}, dt::s8, tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan->src_md, wei_any, plan->dst_md), attr, Engine());
    plan->prim = dnnl::matmul(pd);
    plan->scratch_md = pd.scratchpad_desc();
    plan->wei = std::make_shared<dnnl::memory>(pd.weights_desc(), Engine());
    dnnl::memory uw(user_wei, Engine(), const_cast<void*>(b_.raw_data()));
    if (!RunReorder(MakeReorder(user_wei, pd.weights_desc()), uw.get(), plan->wei->get()).ok())
      throw dnnl::error(dnnl_runtime_error, "weights reorder failed");
    return plan;
  }

  bool KeepsOwnCopyOfConstant(int i) const override { return i == 3; }  // cloned at creation

  Tensor b_;
  std::vector<float> b_scale_;
  Tensor bias_;
  mutable ShapeCache<DynPlan> plans_;
};

Result<std::unique_ptr<Kernel>> MakeDynamicQMatMul(const KernelInfo& info) {
  const Tensor* b = info.constant_input(3);
  if (!b || b->dtype() != DataType::kInt8 || b->rank() != 2) return info.Invalid("B must be a rank-2 int8 constant [K, N]");
  IL_ASSIGN_OR_RETURN(auto bs, ConstFloats(info, 4, "b_scale"));
  if (bs.size() != 1 && static_cast<int64_t>(bs.size()) != b->dim(1)) return info.Invalid("b_scale must have 1 or N elements");
  Tensor bias;
  if (info.has_input(5)) {
    const Tensor* t = info.constant_input(5);
    if (!t || t->dtype() != DataType::kFloat || t->size() != b->dim(1)) return info.Invalid("bias must be a float32 constant of N elements");
    bias = t->Clone();
  }
  return std::unique_ptr<Kernel>(std::make_unique<DynamicQMatMulKernel>(b->Clone(), std::move(bs), std::move(bias)));
}

// --------------------------------------------------------------------------------------------
// QAdd

class QAddKernel final : public Kernel {
 public:
  QAddKernel(QParam a, QParam b, QParam y, bool relu) : a_(a), b_(b), y_(y), relu_(relu) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(3));
    if (a->dtype() != a_.type || b->dtype() != b_.type) return ctx.Invalid("A and B must have their zero points' dtypes");
    if (a->shape() != b->shape())
      return ctx.Invalid("A " + ShapeToString(a->shape()) + " and B " + ShapeToString(b->shape()) + " must have the same shape");
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, a->shape()));
    const float fa = a_.scale / y_.scale, fb = b_.scale / y_.scale;
    const float c = static_cast<float>(y_.zp) - fa * static_cast<float>(a_.zp) - fb * static_cast<float>(b_.zp);
    const float lo = relu_ ? std::max(Lo(y_.type), static_cast<float>(y_.zp)) : Lo(y_.type), hi = Hi(y_.type);
    const int64_t n = a->size();
    auto run = [&](auto* pa, auto* pb, auto* py) {
      ParallelFor(ctx.thread_pool(), n, 16384, [&](int64_t s, int64_t e) { simd::AddRequant(pa + s, pb + s, py + s, e - s, fa, fb, c, lo, hi); });
    };
    auto with_y = [&](auto* pa, auto* pb) {
      if (y_.type == DataType::kUInt8) run(pa, pb, y.data<uint8_t>());
      else run(pa, pb, y.data<int8_t>());
    };
    auto with_b = [&](auto* pa) {
      if (b_.type == DataType::kUInt8) with_y(pa, b->data<uint8_t>());
      else with_y(pa, b->data<int8_t>());
    };
    if (a_.type == DataType::kUInt8) with_b(a->data<uint8_t>());
    else with_b(a->data<int8_t>());
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  QParam a_, b_, y_;
  bool relu_;
};

Result<std::unique_ptr<Kernel>> MakeQAdd(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(Activation act, ActivationFromInfo(info));
  if (act.kind != ActivationKind::kNone && act.kind != ActivationKind::kRelu) return info.Invalid("QAdd takes activation Relu only");
  IL_ASSIGN_OR_RETURN(QParam a, ConstQParam(info, 1, 2, DataType::kUInt8, "a"));
  IL_ASSIGN_OR_RETURN(QParam b, ConstQParam(info, 4, 5, DataType::kUInt8, "b"));
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 6, 7, DataType::kUInt8, "y"));
  return std::unique_ptr<Kernel>(std::make_unique<QAddKernel>(a, b, y, act.kind == ActivationKind::kRelu));
}

// --------------------------------------------------------------------------------------------
// QConcat(y_scale, y_zp, X0, s0, z0, X1, s1, z1, ...): Concat of the dequantized inputs along
// `axis`, quantized with (y_scale, y_zp). An input with the output's parameters is copied.

class QConcatKernel final : public Kernel {
 public:
  QConcatKernel(int64_t axis, QParam y, std::vector<QParam> in) : axis_(axis), y_(y), in_(std::move(in)) {}

  Status Compute(KernelContext& ctx) const override {
    const size_t n = in_.size();
    std::vector<const Tensor*> xs(n);
    for (size_t i = 0; i < n; ++i) {
      IL_ASSIGN_OR_RETURN(xs[i], ctx.RequireInput(static_cast<int>(2 + 3 * i)));
      if (xs[i]->dtype() != in_[i].type) return ctx.Invalid("input " + std::to_string(i) + " must have its zero point's dtype");
    }
    const int r = xs[0]->rank();
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r) return ctx.Invalid("axis out of range");
    Shape ys = xs[0]->shape();
    ys[axis] = 0;
    for (const Tensor* x : xs) {
      if (x->rank() != r) return ctx.Invalid("inputs must have the same rank");
      for (int d = 0; d < r; ++d)
        if (d != axis && x->dim(d) != xs[0]->dim(d)) return ctx.Invalid("inputs differ outside the concat axis");
      ys[axis] += x->dim(axis);
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, ys));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= ys[d];
    for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= ys[d];
    const int64_t row = ys[axis] * inner;
    auto* py = static_cast<uint8_t*>(y.raw_data());  // 1-byte elements either way
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t block = xs[i]->dim(axis) * inner;
      const QParam& q = in_[i];
      const bool same = q.type == y_.type && q.zp == y_.zp && q.scale == y_.scale;
      const auto* px = static_cast<const uint8_t*>(xs[i]->raw_data());
      const float f = q.scale / y_.scale, c = static_cast<float>(y_.zp) - f * static_cast<float>(q.zp);
      const float lo = Lo(y_.type), hi = Hi(y_.type);
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* dst = py + o * row + offset;
        const uint8_t* src = px + o * block;
        if (same) {
          std::memcpy(dst, src, static_cast<size_t>(block));
          continue;
        }
        for (int64_t k = 0; k < block; ++k) {
          const float v = q.type == DataType::kUInt8 ? static_cast<float>(src[k]) : static_cast<float>(static_cast<int8_t>(src[k]));
          const float t = std::min(std::max(std::nearbyint(v * f + c), lo), hi);
          dst[k] = y_.type == DataType::kUInt8 ? static_cast<uint8_t>(t) : static_cast<uint8_t>(static_cast<int8_t>(t));
        }
      }
      offset += block;
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  int64_t axis_;
  QParam y_;
  std::vector<QParam> in_;
};

Result<std::unique_ptr<Kernel>> MakeQConcat(const KernelInfo& info) {
  if (!info.has_attr("axis")) return info.Invalid("axis is required");
  if (info.num_inputs() < 5 || (info.num_inputs() - 2) % 3 != 0) return info.Invalid("inputs: y_scale, y_zp, then (X, scale, zero point) triples");
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 0, 1, DataType::kUInt8, "y"));
  std::vector<QParam> in;
  for (int i = 2; i < info.num_inputs(); i += 3) {
    IL_ASSIGN_OR_RETURN(QParam q, ConstQParam(info, i + 1, i + 2, DataType::kUInt8, "x"));
    in.push_back(q);
  }
  return std::unique_ptr<Kernel>(std::make_unique<QConcatKernel>(info.GetInt("axis", 0), y, std::move(in)));
}

// --------------------------------------------------------------------------------------------
// QMaxPool and QGlobalAveragePool on rank-4 tensors, NCHW or NHWC.

// Dims of a rank-4 tensor in logical order N, C, H, W.
struct Nchw {
  int64_t n, c, h, w;
};
Nchw Logical(const Tensor& x, bool nhwc) {
  return nhwc ? Nchw{x.dim(0), x.dim(3), x.dim(1), x.dim(2)} : Nchw{x.dim(0), x.dim(1), x.dim(2), x.dim(3)};
}

class QMaxPoolKernel final : public Kernel {
 public:
  QMaxPoolKernel(nn::WindowAttrs attrs, bool nhwc) : attrs_(std::move(attrs)), nhwc_(nhwc) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (!Is8Bit(x->dtype()) || x->rank() != 4) return ctx.Invalid("X must be a rank-4 uint8 or int8 tensor");
    const Nchw d = Logical(*x, nhwc_);
    IL_ASSIGN_OR_RETURN(nn::WindowGeom g, nn::ResolveWindow(ctx, attrs_, Shape{d.h, d.w}, attrs_.kernel_shape, /*pool_style=*/true));
    const int64_t oh = g.out[0], ow = g.out[1];
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(x->dtype(), nhwc_ ? Shape{d.n, oh, ow, d.c} : Shape{d.n, d.c, oh, ow}));
    if (x->dtype() == DataType::kUInt8) Run(ctx, x->data<uint8_t>(), y.data<uint8_t>(), d, g);
    else Run(ctx, x->data<int8_t>(), y.data<int8_t>(), d, g);
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const T* x, T* y, const Nchw& d, const nn::WindowGeom& g) const {
    const int64_t oh = g.out[0], ow = g.out[1];
    const T lowest = std::numeric_limits<T>::lowest();
    auto window = [&](int64_t o, int dim, int64_t* b, int64_t* e) {
      *b = o * g.strides[dim] - g.pad_begin[dim];
      *e = std::min(*b + (g.kernel[dim] - 1) * g.dilations[dim] + 1, dim == 0 ? d.h : d.w);
    };
    if (nhwc_) {
      ParallelFor(ctx.thread_pool(), d.n * oh, 4, [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r) {
          const int64_t n = r / oh, i = r % oh;
          int64_t hb, he;
          window(i, 0, &hb, &he);
          for (int64_t j = 0; j < ow; ++j) {
            int64_t wb, we;
            window(j, 1, &wb, &we);
            T* out = y + ((n * oh + i) * ow + j) * d.c;
            std::fill(out, out + d.c, lowest);
            for (int64_t h = hb; h < he; h += g.dilations[0]) {
              if (h < 0) continue;
              for (int64_t w = wb; w < we; w += g.dilations[1])
                if (w >= 0) simd::MaxInto(out, x + ((n * d.h + h) * d.w + w) * d.c, d.c);
            }
          }
        }
      });
      return;
    }
    ParallelFor(ctx.thread_pool(), d.n * d.c, 1, [&](int64_t s, int64_t e) {
      for (int64_t p = s; p < e; ++p) {
        const T* plane = x + p * d.h * d.w;
        for (int64_t i = 0; i < oh; ++i) {
          int64_t hb, he;
          window(i, 0, &hb, &he);
          for (int64_t j = 0; j < ow; ++j) {
            int64_t wb, we;
            window(j, 1, &wb, &we);
            T m = lowest;
            for (int64_t h = hb; h < he; h += g.dilations[0])
              for (int64_t w = wb; w < we; w += g.dilations[1])
                if (h >= 0 && w >= 0) m = std::max(m, plane[h * d.w + w]);
            y[(p * oh + i) * ow + j] = m;
          }
        }
      }
    });
  }

  nn::WindowAttrs attrs_;
  bool nhwc_;
};

Result<std::unique_ptr<Kernel>> MakeQMaxPool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, true));
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  if (attrs.kernel_shape.size() != 2) return info.Invalid("QMaxPool takes 2-D windows only");
  if (info.GetInt("storage_order", 0) != 0) return info.Invalid("storage_order must be 0");
  return std::unique_ptr<Kernel>(std::make_unique<QMaxPoolKernel>(std::move(attrs), nhwc));
}

// QAveragePool(X, x_scale, x_zp, y_scale, y_zp): 2-D average over the in-bounds elements of each
// window (count_include_pad = 0; the pass fuses nothing else), requantized.
class QAveragePoolKernel final : public Kernel {
 public:
  QAveragePoolKernel(nn::WindowAttrs attrs, QParam x, QParam y, bool nhwc) : attrs_(std::move(attrs)), x_(x), y_(y), nhwc_(nhwc) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != x_.type || x->rank() != 4) return ctx.Invalid("X must be a rank-4 tensor of its zero point's dtype");
    const Nchw d = Logical(*x, nhwc_);
    IL_ASSIGN_OR_RETURN(nn::WindowGeom g, nn::ResolveWindow(ctx, attrs_, Shape{d.h, d.w}, attrs_.kernel_shape, /*pool_style=*/true));
    const int64_t oh = g.out[0], ow = g.out[1];
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, nhwc_ ? Shape{d.n, oh, ow, d.c} : Shape{d.n, d.c, oh, ow}));
    const float f = x_.scale / y_.scale, lo = Lo(y_.type), hi = Hi(y_.type);
    auto out_value = [&](int32_t sum, int64_t count) {
      const float avg = static_cast<float>(sum) / static_cast<float>(std::max<int64_t>(count, 1));
      return std::min(std::max(std::nearbyint((avg - static_cast<float>(x_.zp)) * f) + static_cast<float>(y_.zp), lo), hi);
    };
    auto run = [&](const auto* px, auto* py) {
      std::vector<int32_t> acc(static_cast<size_t>(nhwc_ ? d.c : 1));
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < (nhwc_ ? 1 : d.c); ++c)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              std::fill(acc.begin(), acc.end(), 0);
              int64_t count = 0;
              const int64_t hb = i * g.strides[0] - g.pad_begin[0], wb = j * g.strides[1] - g.pad_begin[1];
              for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
                for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
                  const int64_t h = hb + kh * g.dilations[0], w = wb + kw * g.dilations[1];
                  if (h < 0 || h >= d.h || w < 0 || w >= d.w) continue;
                  ++count;
                  if (nhwc_) simd::SumInto(acc.data(), px + ((n * d.h + h) * d.w + w) * d.c, d.c);
                  else acc[0] += px[((n * d.c + c) * d.h + h) * d.w + w];
                }
              using T = std::remove_pointer_t<decltype(py)>;
              if (nhwc_) {
                T* o = py + ((n * oh + i) * ow + j) * d.c;
                for (int64_t k = 0; k < d.c; ++k) o[k] = static_cast<T>(out_value(acc[k], count));
              } else {
                py[((n * d.c + c) * oh + i) * ow + j] = static_cast<T>(out_value(acc[0], count));
              }
            }
    };
    auto with_y = [&](const auto* px) {
      if (y_.type == DataType::kUInt8) run(px, y.data<uint8_t>());
      else run(px, y.data<int8_t>());
    };
    if (x_.type == DataType::kUInt8) with_y(x->data<uint8_t>());
    else with_y(x->data<int8_t>());
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  nn::WindowAttrs attrs_;
  QParam x_, y_;
  bool nhwc_;
};

Result<std::unique_ptr<Kernel>> MakeQAveragePool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, true));
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  if (attrs.kernel_shape.size() != 2) return info.Invalid("QAveragePool takes 2-D windows only");
  if (info.GetInt("count_include_pad", 0) != 0) return info.Invalid("count_include_pad must be 0");
  IL_ASSIGN_OR_RETURN(QParam x, ConstQParam(info, 1, 2, DataType::kUInt8, "x"));
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 3, 4, DataType::kUInt8, "y"));
  return std::unique_ptr<Kernel>(std::make_unique<QAveragePoolKernel>(std::move(attrs), x, y, nhwc));
}

class QGlobalAveragePoolKernel final : public Kernel {
 public:
  QGlobalAveragePoolKernel(QParam x, QParam y, bool nhwc) : x_(x), y_(y), nhwc_(nhwc) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != x_.type || x->rank() != 4) return ctx.Invalid("X must be a rank-4 tensor of its zero point's dtype");
    const Nchw d = Logical(*x, nhwc_);
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, nhwc_ ? Shape{d.n, 1, 1, d.c} : Shape{d.n, d.c, 1, 1}));
    const int64_t hw = d.h * d.w;
    std::vector<int32_t> acc(static_cast<size_t>(d.n * d.c), 0);
    auto sum = [&](const auto* p) {
      if (nhwc_) {
        for (int64_t n = 0; n < d.n; ++n)
          for (int64_t s = 0; s < hw; ++s) simd::SumInto(acc.data() + n * d.c, p + (n * hw + s) * d.c, d.c);
      } else {
        for (int64_t k = 0; k < d.n * d.c; ++k) {
          int32_t t = 0;
          for (int64_t s = 0; s < hw; ++s) t += p[k * hw + s];
          acc[k] = t;
        }
      }
    };
    if (x_.type == DataType::kUInt8) sum(x->data<uint8_t>());
    else sum(x->data<int8_t>());
    // y = q((mean - x_zp) * x_scale); both layouts store [n][c] contiguously.
    const float f = x_.scale / y_.scale / static_cast<float>(std::max<int64_t>(hw, 1));
    for (int64_t k = 0; k < d.n * d.c; ++k) {
      float v = std::nearbyint((static_cast<float>(acc[k]) - static_cast<float>(x_.zp * hw)) * f) + static_cast<float>(y_.zp);
      v = std::min(std::max(v, Lo(y_.type)), Hi(y_.type));
      if (y_.type == DataType::kUInt8) y.data<uint8_t>()[k] = static_cast<uint8_t>(v);
      else y.data<int8_t>()[k] = static_cast<int8_t>(v);
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  QParam x_, y_;
  bool nhwc_;
};

Result<std::unique_ptr<Kernel>> MakeQGlobalAveragePool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  IL_ASSIGN_OR_RETURN(QParam x, ConstQParam(info, 1, 2, DataType::kUInt8, "x"));
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 3, 4, DataType::kUInt8, "y"));
  return std::unique_ptr<Kernel>(std::make_unique<QGlobalAveragePoolKernel>(x, y, nhwc));
}

}  // namespace
}  // namespace dnnl_kernels

void RegisterInt8Kernels(KernelRegistry& r) {
  const std::string d = "com.inferloop";
  r.Register(d, "QConv", 1, dnnl_kernels::MakeQConv);
  r.Register(d, "QMatMul", 1, dnnl_kernels::MakeQMatMul);
  r.Register(d, "QAdd", 1, dnnl_kernels::MakeQAdd);
  r.Register(d, "QMaxPool", 1, dnnl_kernels::MakeQMaxPool);
  r.Register(d, "QGlobalAveragePool", 1, dnnl_kernels::MakeQGlobalAveragePool);
  r.Register(d, "DynamicQMatMul", 1, dnnl_kernels::MakeDynamicQMatMul);
  r.Register(d, "QConcat", 1, dnnl_kernels::MakeQConcat);
  r.Register(d, "QAveragePool", 1, dnnl_kernels::MakeQAveragePool);
}

}  // namespace inferloop
