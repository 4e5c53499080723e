// QMatMul and DynamicQMatMul: the INT8 matrix products of the QDQ fusion (semantics in
// dnnl_int8.cc), oneDNN int8 matmuls. On CPUs without VNNI / AMX (NativeInt8) with full-range
// weights: u8 inputs are split (the window split, dnnl_int8_common.h), s8 ones computed in
// float32.
#include <algorithm>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_int8_common.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

namespace {

// The window split's correction of A x B (dnnl_int8_common.h) in this thread's scratch, or nullptr
// when out of memory: for each outlier A[m, k] = r, c[m, :] += r * B[k, :] * scales[:].
float* MatMulCorrection(const std::vector<WindowOutlier>& outliers, const Tensor& b, const float* scales, int64_t M,
                        const ThreadScope& threads) {
  const int64_t K = b.dim(0), N = b.dim(1);
  float* c = ZeroedCorrection(M * N, threads);
  if (c == nullptr) return nullptr;
  std::vector<simd::ScaledS8Term> terms(outliers.size());
  for (size_t i = 0; i < outliers.size(); ++i)
    terms[i] = {(outliers[i].index / K) * N, (outliers[i].index % K) * N, static_cast<float>(outliers[i].residual)};
  AddCorrectionTerms(c, b.data<int8_t>(), scales, N, {&terms}, threads);
  return c;
}

struct QMatMulPlan {
  bool f32 = false;  // float32 path (no VNNI / AMX)
  int post_bias_index = -1;  // the binary-add post-op's index (dequantize_output with post_bias)
  memory::desc post_bias_md;
  std::shared_ptr<std::vector<float>> bias_f32;
  dnnl::primitive prim;
  memory::desc src_md, dst_md, scratch_md, bias_md;
  std::shared_ptr<dnnl::memory> wei;
  ZeroPoints zp;
  // The window split (dnnl_int8_common.h): A's window goes to `prim`, or to `prim_corr` (the
  // correction as its first post-op) when some of A's values lie outside it.
  bool window = false;
  int32_t shift = 0;
  dnnl::primitive prim_corr;
  memory::desc scratch_corr_md, corr_md;
  int post_bias_index_corr = -1;
  std::vector<float> scales;  // the output scale of each of the N columns
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
    ThreadScope threads(ctx, M * K * N);
    PlanKey key;
    key.Add(M);
    key.Add(threads.threads());
    std::shared_ptr<const QMatMulPlan> plan = plans_.Find(key);
    if (!plan) {
      try {
        plan = plans_.Insert(key, PlanWithWindowFallback(UseWindowSplit(a_.type, b_),
                                                         [&](bool window_ok) { return MakePlan(M, window_ok); }));
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
      IL_RETURN_IF_ERROR(threads.Run([&] { return Execute(plan->prim, plan->scratch_md, args, "QMatMul"); }));
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
      const void* src_data = a->raw_data();
      const dnnl::primitive* prim = &plan->prim;
      const memory::desc* scratch_md = &plan->scratch_md;
      int post_bias_index = plan->post_bias_index;
      MemArg corr;
      if (plan->window) {
        std::vector<WindowOutlier> outliers;
        src_data = WindowOf(*a, plan->shift, threads, &outliers);
        if (src_data == nullptr) return Status::ResourceExhausted("QMatMul: out of memory for the input's window");
        if (!outliers.empty()) {
          float* c = MatMulCorrection(outliers, b_, plan->scales.data(), M, threads);
          if (c == nullptr) return Status::ResourceExhausted("QMatMul: out of memory for the correction");
          corr = MemArg(plan->corr_md, c);
          prim = &plan->prim_corr;
          scratch_md = &plan->scratch_corr_md;
          post_bias_index = plan->post_bias_index_corr;
        }
      }
      MemArg src(plan->src_md, src_data), dst(plan->dst_md, y.raw_data()), bias, zs, zd;
      ExecArgs args;
      args.Add(DNNL_ARG_SRC, src.get());
      args.Add(DNNL_ARG_WEIGHTS, plan->wei->get());
      args.Add(DNNL_ARG_DST, dst.get());
      if (bias_.defined()) {
        bias = MemArg(plan->bias_md, bias_.raw_data());
        args.Add(DNNL_ARG_BIAS, bias.get());
      }
      AddZeroPoints(plan->zp, args, &zs, &zd);
      if (corr) args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, corr.get());
      MemArg pb;
      if (post_bias_index >= 0) {
        pb = MemArg(plan->post_bias_md, post_bias_.raw_data());
        args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_bias_index) | DNNL_ARG_SRC_1, pb.get());
      }
      IL_RETURN_IF_ERROR(threads.Run([&] { return Execute(*prim, *scratch_md, args, "QMatMul"); }));
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  // window_ok: the window split where it applies (UseWindowSplit), else the float32 path there.
  std::shared_ptr<const QMatMulPlan> MakePlan(int64_t M, bool window_ok) const {
    const int64_t K = b_.dim(0), N = b_.dim(1);
    auto plan = std::make_shared<QMatMulPlan>();
    const dt ydt = out_.float_out ? dt::f32 : DnnlType(out_.q.type);
    const memory::dims md = {std::max<int64_t>(M, 1), K};
    plan->src_md = memory::desc(md, DnnlType(a_.type), tag::ab);
    plan->dst_md = memory::desc({md[0], N}, ydt, tag::ab);
    plan->bias_md = memory::desc({1, N}, dt::s32, tag::ab);
    plan->window = window_ok && UseWindowSplit(a_.type, b_);
    if (!Int8ProductsExact(b_) && !plan->window) {
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
    plan->shift = plan->window ? WindowShift(a_.zp) : 0;
    const int32_t src_zp = a_.zp - plan->shift;
    plan->zp.src = src_zp;
    plan->zp.dst = out_.float_out || deq_out_ ? 0 : out_.q.zp;
    const std::vector<float> scales = OutputScales(a_.scale, b_scale_, out_);
    if (deq_out_) plan->dst_md = memory::desc({md[0], N}, dt::f32, tag::ab);
    // The primitive, with the correction as its first post-op when `corr` is set.
    auto make = [&](const memory::desc* corr, dnnl::primitive* prim, memory::desc* scratch, int* post_bias_index) {
      dnnl::primitive_attr attr;
      if (deq_out_) {
        // f32 dst: v = scale * acc, activation, round half to even, clip to the 8-bit range less the
        // zero point, times y_scale, plus the post bias: DequantizeLinear(QuantizeLinear(.)) + bias.
        dnnl::post_ops po;
        if (corr != nullptr) po.append_binary(dnnl::algorithm::binary_add, *corr);
        AppendActivation(act_, po);
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, Lo(out_.q.type) - out_.q.zp, Hi(out_.q.type) - out_.q.zp);
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, out_.q.scale, 0.f);
        if (post_bias_.defined()) {
          *post_bias_index = po.len();
          plan->post_bias_md = memory::desc({1, N}, dt::f32, tag::ab);
          po.append_binary(dnnl::algorithm::binary_add, plan->post_bias_md);
        }
        attr = MakeAttr(po);
        attr.set_output_scales(b_scale_.size() > 1 ? 1 << 1 : 0, scales);
        if (src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      } else {
        attr = QuantAttr(scales, 1 << 1, src_zp, out_, act_, corr);
      }
      dnnl::matmul::primitive_desc pd = bias_.defined()
          ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wei_any, plan->bias_md, plan->dst_md), attr, Engine())
          : dnnl::matmul::primitive_desc(dnnl::matmul::desc(plan->src_md, wei_any, plan->dst_md), attr, Engine());
      *prim = dnnl::matmul(pd);
      *scratch = pd.scratchpad_desc();
      return pd;
    };
    dnnl::matmul::primitive_desc pd = make(nullptr, &plan->prim, &plan->scratch_md, &plan->post_bias_index);
    if (plan->window) {
      plan->corr_md = memory::desc({md[0], N}, dt::f32, tag::ab);
      const dnnl::matmul::primitive_desc pdc = make(&plan->corr_md, &plan->prim_corr, &plan->scratch_corr_md, &plan->post_bias_index_corr);
      RejectReference(pd);
      RejectReference(pdc);
      // Both must take the weights in one layout (they share the packed copy).
      if (pdc.weights_desc() != pd.weights_desc()) throw dnnl::error(dnnl_unimplemented, "window split: weight layouts differ");
      plan->scales = PerColumnScales(scales, N);
    }
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

}  // namespace

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

namespace {

struct DynPlan {
  bool f32 = false;
  dnnl::primitive prim;
  memory::desc src_md, dst_md, scratch_md, bias_md, scales_md;
  std::shared_ptr<dnnl::memory> wei;
  // The window split of a u8 A (dnnl_int8_common.h; the shift follows the run-time zero point):
  // `prim_corr` has the correction as its first post-op.
  bool window = false;
  dnnl::primitive prim_corr;
  memory::desc scratch_corr_md, corr_md;
  std::vector<float> b_scales;  // b_scale of each of the N columns
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
    ThreadScope threads(ctx, M * K * N);
    PlanKey key;
    key.Add(M);
    key.Add(static_cast<int64_t>(a->dtype()));
    key.Add(threads.threads());
    std::shared_ptr<const DynPlan> plan = plans_.Find(key);
    if (!plan) {
      try {
        plan = plans_.Insert(key, PlanWithWindowFallback(UseWindowSplit(a->dtype(), b_),
                                                         [&](bool window_ok) { return MakePlan(M, a->dtype(), window_ok); }));
      } catch (const dnnl::error& e) {
        return Status::Unimplemented(ctx.node().Describe() + ": oneDNN has no int8 matmul for this case: " + e.what());
      }
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, ys));
    if (M == 0) {
      ctx.SetOutput(0, std::move(y));
      return Status::Ok();
    }
    MemArg dst(plan->dst_md, y.raw_data()), src, bias, scales, zs, corr;
    ExecArgs args;
    const dnnl::primitive* prim = &plan->prim;
    const memory::desc* scratch_md = &plan->scratch_md;
    int first_post_op = 0;  // a_scale's binary-mul; the bias's is the next one
    std::vector<WindowOutlier> outliers;
    if (plan->window) {
      const int32_t shift = WindowShift(q.zp);
      const uint8_t* win = WindowOf(*a, shift, threads, &outliers);
      if (win == nullptr) return Status::ResourceExhausted("DynamicQMatMul: out of memory for the input's window");
      src = MemArg(plan->src_md, win);
      q.zp -= shift;
      if (!outliers.empty()) {
        float* c = MatMulCorrection(outliers, b_, plan->b_scales.data(), M, threads);
        if (c == nullptr) return Status::ResourceExhausted("DynamicQMatMul: out of memory for the correction");
        corr = MemArg(plan->corr_md, c);
        args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, corr.get());
        prim = &plan->prim_corr;
        scratch_md = &plan->scratch_corr_md;
        first_post_op = 1;
      }
    }
    if (plan->f32) {
      float* af = static_cast<float*>(ThreadScratch(0, a->size() * sizeof(float)));
      if (!af) return Status::ResourceExhausted("DynamicQMatMul: out of memory for a float copy");
      DequantizeTo(a->dtype(), a->raw_data(), af, a->size(), q, nullptr);
      src = MemArg(plan->src_md, af);
    } else {
      if (!plan->window) src = MemArg(plan->src_md, a->raw_data());
      scales = MemArg(plan->scales_md, &q.scale);  // a_scale, a binary-mul post-op operand
      args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(first_post_op) | DNNL_ARG_SRC_1, scales.get());
      zs = MemArg(memory::desc({1}, dt::s32, tag::a), &q.zp);
      args.Add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zs.get());
    }
    args.Add(DNNL_ARG_SRC, src.get());
    args.Add(DNNL_ARG_WEIGHTS, plan->wei->get());
    args.Add(DNNL_ARG_DST, dst.get());
    if (bias_.defined()) {
      bias = MemArg(plan->bias_md, bias_.raw_data());
      args.Add(plan->f32 ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(first_post_op + 1) | DNNL_ARG_SRC_1), bias.get());
    }
    IL_RETURN_IF_ERROR(threads.Run([&] { return Execute(*prim, *scratch_md, args, "DynamicQMatMul"); }));
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  // window_ok: the window split where it applies (UseWindowSplit), else the float32 path there.
  std::shared_ptr<const DynPlan> MakePlan(int64_t M, DataType a_type, bool window_ok) const {
    const int64_t K = b_.dim(0), N = b_.dim(1);
    auto plan = std::make_shared<DynPlan>();
    const memory::dims md = {M, K};
    plan->dst_md = memory::desc({M, N}, dt::f32, tag::ab);
    plan->bias_md = memory::desc({1, N}, dt::f32, tag::ab);
    const memory::desc user_wei({K, N}, dt::s8, tag::ab);
    plan->window = window_ok && UseWindowSplit(a_type, b_);
    if (!Int8ProductsExact(b_) && !plan->window) {  // float: B dequantized once; A per call
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
    const memory::desc wei_any({K, N}, dt::s8, tag::any);
    // With `corr`, the correction (scaled by b_scale like the accumulator) is added first.
    auto make = [&](const memory::desc* corr, dnnl::primitive* prim, memory::desc* scratch) {
      dnnl::post_ops po;
      if (corr != nullptr) po.append_binary(dnnl::algorithm::binary_add, *corr);
      po.append_binary(dnnl::algorithm::binary_mul, plan->scales_md);
      if (bias_.defined()) po.append_binary(dnnl::algorithm::binary_add, plan->bias_md);
      dnnl::primitive_attr attr = MakeAttr(po);
      attr.set_output_scales(b_scale_.size() > 1 ? 1 << 1 : 0, b_scale_);
      attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan->src_md, wei_any, plan->dst_md), attr, Engine());
      *prim = dnnl::matmul(pd);
      *scratch = pd.scratchpad_desc();
      return pd;
    };
    const dnnl::matmul::primitive_desc pd = make(nullptr, &plan->prim, &plan->scratch_md);
    if (plan->window) {
      plan->corr_md = memory::desc({M, N}, dt::f32, tag::ab);
      const dnnl::matmul::primitive_desc pdc = make(&plan->corr_md, &plan->prim_corr, &plan->scratch_corr_md);
      RejectReference(pd);
      RejectReference(pdc);
      if (pdc.weights_desc() != pd.weights_desc()) throw dnnl::error(dnnl_unimplemented, "window split: weight layouts differ");
      plan->b_scales = PerColumnScales(b_scale_, N);
    }
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

}  // namespace

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

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
