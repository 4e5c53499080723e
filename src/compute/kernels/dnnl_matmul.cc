// float32 MatMul, Gemm and the com.inferloop FusedMatMul / FusedGemm on oneDNN.
//
// Every case maps to one primitive: a oneDNN matmul (batched, with batch broadcasting; Gemm's
// transposes are strides) or, for a single 2-D product with a constant B, an inner product.
// A constant B is reordered once into the layout the primitive prefers and shared by the cached
// primitives that want that layout. When both implementations apply, the first call of a shape
// times them and keeps the winner in the TuningCache.
//
// Epilogue: FusedMatMul's bias and Gemm's C (alpha = beta = 1, C a row) are the primitive's
// bias; any other C is a binary-add post-op (C broadcasts; beta != 1 scales a copy of C per
// call), alpha a linear post-op before it; the activation comes last. oneDNN 2.6 gives a
// second eltwise_linear post-op the first one's parameters, so the chain never holds two:
// HardSigmoid (linear + clip) after alpha != 1 runs as a separate pass instead.
//
// Precision (KernelInfo::float_precision): kBf16 builds the primitives with bf16 A and B (A
// converted per call into scratch, a constant B packed as bf16 once, a variable B converted per
// call; bias, C and Y stay f32; f32 where oneDNN has no bf16 implementation); kFp16 keeps a
// constant B as float16 (HalfWeights, widened per call).
#include <cmath>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_common.h"
#include "compute/kernels/matmul_internal.h"
#include "compute/tuning_cache.h"

namespace inferloop {
namespace dnnl_kernels {
namespace {

enum class MMImpl { kMatMul, kInnerProduct };
constexpr MMImpl kAllImpls[] = {MMImpl::kMatMul, MMImpl::kInnerProduct};
const char* ImplName(MMImpl i) { return i == MMImpl::kMatMul ? "matmul" : "inner_product"; }

// What the node computes (fixed at creation).
struct MMSpec {
  bool gemm = false;  // Gemm / FusedGemm (2-D, transposes, alpha, beta, C); else MatMul
  bool fused = false;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  Activation act;
  const char* name = "MatMul";
};

enum class CKind { kNone, kBias, kBinary };

// One call, resolved into oneDNN terms.
struct MMProblem {
  memory::dims a_dims, b_dims, y_dims;  // equal rank >= 2; batch dims broadcast (1s)
  bool a_trans = false, b_trans = false;  // 2-D only: the operand is stored transposed
  bool two_d = false;                     // one 2-D product (batch folded into M)
  Shape out_shape;
  CKind c_kind = CKind::kNone;
  memory::dims c_dims;
  memory::dims c_src_dims;    // C's own 2-D (broadcast) dims when c_expand
  bool c_expand = false;      // C is expanded to the full [M, N] per call (oneDNN lacks its broadcast)
  float alpha = 1.f;          // a linear post-op before the C add
  float c_scale = 1.f;        // beta: C is scaled (a copy) before the add
  bool act_outside = false;   // the activation runs after the primitive, not as post-ops

  // Not keyed by the thread count (see dnnl_conv.cc).
  std::string TuningKey(const char* impl_set, Precision prec) const {
    // A single 2-D product is keyed by M rounded up to a power of two, so that inputs whose
    // row count varies (batch x sequence) share a tuning result instead of timing every M.
    Shape ad(a_dims.begin(), a_dims.end());
    if (two_d) {
      int64_t m = 1;
      while (m < ad[0]) m *= 2;
      ad[0] = m;
    }
    std::string k = std::string("mm ") + PrecisionKey(prec) + " a=" + ShapeKey(ad) + (two_d ? "~" : "") + (a_trans ? "T" : "") + " b=" + ShapeKey(b_dims) +
                    (b_trans ? "T" : "") + " c=" + std::to_string(static_cast<int>(c_kind)) + ":" + ShapeKey(c_dims);
    if (alpha != 1.f || c_scale != 1.f) k += " scaled";
    return k + " " + impl_set;
  }
};

struct MMPlan {
  bool scalar_only = false;  // oneDNN took none of the candidates: the scalar kernel runs
  Shape out_shape;
  bool c_used = false;       // input 2 (C or bias) feeds the primitive
  MMImpl impl = MMImpl::kMatMul;
  dnnl::primitive prim;
  memory::desc a_md, b_md, y_md, c_md, scratch_md, user_b_md;
  memory::desc user_a_md;           // A as given (f32); a_md differs for bf16
  std::optional<ReorderPrim> a_in;  // A converted to a_md per call
  int c_arg = 0;
  float c_scale = 1.f;
  bool c_expand = false;
  memory::dims c_src_dims;
  bool act_outside = false;
  std::optional<ReorderPrim> b_in;
  std::shared_ptr<const memory> packed_b;
  std::shared_ptr<const HalfWeights> half_b;  // constant B in b_md, as float16
};

memory::dims Ones(size_t n) { return memory::dims(n, 1); }

class MMKernel final : public Kernel {
 public:
  MMKernel(MMSpec spec, Precision prec, const Tensor* const_b, std::unique_ptr<Kernel> scalar)
      : spec_(spec), prec_(prec), const_b_(const_b), scalar_(std::move(scalar)) {}

  Status Compute(KernelContext& ctx) const override {
    if (!Enabled()) return Scalar(ctx);
    const Tensor* a = ctx.input(0);
    const Tensor* b = ctx.input(1);
    const Tensor* c = spec_.gemm || spec_.fused ? ctx.input(2) : nullptr;
    if (!a || !b || !AllFloatOrAbsent({a, b, c})) return Scalar(ctx);
    // Multiply-adds: every element of A meets the N columns of its product.
    const Shape& bs = b->shape();
    const int64_t n = bs.empty() ? 1 : spec_.gemm ? (spec_.trans_b ? bs[0] : bs.back()) : bs.back();
    ThreadScope threads(ctx, a->size() * n);
    const bool b_is_const = const_b_.Matches(*b);
    const PlanKey key = WeightedPlanKey({a, b, c}, threads.threads(), b_is_const);
    std::shared_ptr<const MMPlan> plan = plans_.Find(key);  // steady state: no allocation
    Tensor y;
    if (!plan) {
      MMProblem p;
      if (!(spec_.gemm ? ResolveGemm(*a, *b, c, &p) : ResolveMatMul(*a, *b, c, &p))) return Scalar(ctx);
      IL_ASSIGN_OR_RETURN(y, ctx.AllocateUninit(DataType::kFloat, p.out_shape));  // tuning writes it
      const float* pc = p.c_kind != CKind::kNone ? c->data<float>() : nullptr;
      IL_ASSIGN_OR_RETURN(plan, MakePlan(p, b_is_const, a->data<float>(), b->data<float>(), pc, y.data<float>()));
      plan = plans_.Insert(key, plan);
    }
    if (plan->scalar_only) return Scalar(ctx);
    if (!y.defined()) { IL_ASSIGN_OR_RETURN(y, ctx.AllocateUninit(DataType::kFloat, plan->out_shape)); }
    IL_RETURN_IF_ERROR(threads.Run([&] {
      return RunPlan(*plan, a->data<float>(), b->data<float>(), plan->c_used ? c->data<float>() : nullptr, y.data<float>());
    }));
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  Status Scalar(KernelContext& ctx) const {
    return WithPlainConstant(ctx, 1, const_b_, [this](KernelContext& c) { return ScalarImpl(c); });
  }
  Status ScalarImpl(KernelContext& ctx) const {
    if (!spec_.fused) return scalar_->Compute(ctx);
    // FusedGemm: the scalar Gemm already adds C; FusedMatMul adds its bias row here.
    return RunScalarFused(ctx, *scalar_, -1, spec_.gemm ? -1 : 2, spec_.act);
  }

  // MatMul / FusedMatMul (c = FusedMatMul's bias). False: let the scalar kernel handle it.
  bool ResolveMatMul(const Tensor& a, const Tensor& b, const Tensor* bias, MMProblem* p) const {
    matmul::MatMulPlan mp;
    if (!matmul::PlanMatMul(a.shape(), b.shape(), &mp).empty()) return false;
    if (mp.M == 0 || mp.N == 0 || mp.K == 0 || mp.batch_count == 0) return false;
    if (mp.batch.size() + 2 > 12) return false;
    if (bias && (bias->rank() != 1 || bias->dim(0) != mp.N)) return false;
    p->out_shape = mp.out_shape;
    const bool b_single = ShapeElementCount(b.rank() > 2 ? Shape(b.shape().begin(), b.shape().end() - 2) : Shape{}) == 1;
    if (b_single) {  // one B matrix: A's batch folds into M
      p->two_d = true;
      p->a_dims = {mp.batch_count * mp.M, mp.K};
      p->b_dims = {mp.K, mp.N};
      p->y_dims = {mp.batch_count * mp.M, mp.N};
    } else {
      const size_t nb = mp.batch.size();
      auto operand = [&](const Shape& s, int64_t rows, int64_t cols) {
        memory::dims d = Ones(nb);
        if (s.size() > 2) {
          const size_t own = s.size() - 2;
          for (size_t i = 0; i < own; ++i) d[nb - own + i] = s[i];
        }
        d.push_back(rows);
        d.push_back(cols);
        return d;
      };
      p->a_dims = operand(a.shape(), mp.M, mp.K);
      p->b_dims = operand(b.shape(), mp.K, mp.N);
      p->y_dims = Dims(mp.batch);
      p->y_dims.push_back(mp.M);
      p->y_dims.push_back(mp.N);
    }
    if (bias) {
      p->c_kind = CKind::kBias;
      p->c_dims = Ones(p->y_dims.size());
      p->c_dims.back() = mp.N;
    }
    return true;
  }

  // Gemm / FusedGemm.
  bool ResolveGemm(const Tensor& a, const Tensor& b, const Tensor* c, MMProblem* p) const {
    if (a.rank() != 2 || b.rank() != 2) return false;
    const int64_t M = spec_.trans_a ? a.dim(1) : a.dim(0), K = spec_.trans_a ? a.dim(0) : a.dim(1);
    const int64_t Kb = spec_.trans_b ? b.dim(1) : b.dim(0), N = spec_.trans_b ? b.dim(0) : b.dim(1);
    if (K != Kb || M == 0 || N == 0 || K == 0) return false;
    p->two_d = true;
    p->a_dims = {M, K};
    p->b_dims = {K, N};
    p->y_dims = {M, N};
    p->a_trans = spec_.trans_a;
    p->b_trans = spec_.trans_b;
    p->out_shape = {M, N};
    p->alpha = spec_.alpha;
    p->act_outside = spec_.alpha != 1.f && spec_.act.kind == ActivationKind::kHardSigmoid;
    if (c && spec_.beta != 0.f) {
      const Shape& cs = c->shape();
      if (cs.size() > 2) return false;
      memory::dims cd = {1, 1};
      for (size_t i = 0; i < cs.size(); ++i) cd[2 - cs.size() + i] = cs[i];
      if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N)) return false;
      p->c_dims = cd;
      if (spec_.alpha == 1.f && spec_.beta == 1.f && cd[0] == 1 && cd[1] == N) {
        p->c_kind = CKind::kBias;
      } else {
        p->c_kind = CKind::kBinary;
        p->c_scale = spec_.beta;
        if (cd[0] == M && cd[1] == 1 && M > 1) ExpandC(p);  // oneDNN 2.6 has no per-row binary broadcast
      }
    }
    return true;
  }

  // Feeds C to the primitive as a full [M, N] tensor expanded (and scaled) per call.
  static void ExpandC(MMProblem* p) {
    if (p->c_kind != CKind::kBinary || p->c_expand) return;
    p->c_src_dims = p->c_dims;
    p->c_dims = p->y_dims;
    p->c_expand = true;
  }

  dnnl::post_ops PostOps(const MMProblem& p, int* c_arg) const {
    dnnl::post_ops po;
    if (p.alpha != 1.f) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, p.alpha, 0.f);
    if (p.c_kind == CKind::kBinary) {
      *c_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(po.len()) | DNNL_ARG_SRC_1;
      po.append_binary(dnnl::algorithm::binary_add, memory::desc(p.c_dims, dt::f32, tag::ab));
    }
    if (!p.act_outside) AppendActivation(spec_.act, po);
    return po;
  }

  // Throws dnnl::error when oneDNN has no implementation.
  std::shared_ptr<const MMPlan> BuildPlan(const MMProblem& p, MMImpl impl, bool b_is_const, Precision prec,
                                          bool pack = true) const {
    // b_is_const: B is the constant initializer, taken from const_b_ (which may have dropped
    // the plain original) in whatever layout the plan uses; pack: let the primitive choose that
    // layout (else plain).
    auto plan = std::make_shared<MMPlan>();
    plan->impl = impl;
    plan->out_shape = p.out_shape;
    plan->c_used = p.c_kind != CKind::kNone;
    const int r = static_cast<int>(p.y_dims.size());
    int c_arg = 0;
    const dnnl::primitive_attr attr = MakeAttr(PostOps(p, &c_arg));
    const memory::desc y_md(p.y_dims, dt::f32, PlainTag(r));
    const dt cdt = ComputeType(prec);
    if (impl == MMImpl::kMatMul) {
      plan->user_a_md = memory::desc(p.a_dims, dt::f32, p.a_trans ? tag::ba : PlainTag(r));
      const memory::desc a_md(p.a_dims, cdt, p.a_trans ? tag::ba : PlainTag(r));
      plan->user_b_md = memory::desc(p.b_dims, dt::f32, p.b_trans ? tag::ba : PlainTag(r));
      const memory::desc b_any = b_is_const && pack ? memory::desc(p.b_dims, cdt, tag::any)
                                                    : memory::desc(p.b_dims, cdt, p.b_trans ? tag::ba : PlainTag(r));
      dnnl::matmul::primitive_desc pd;
      if (p.c_kind == CKind::kBias) {
        plan->c_md = memory::desc(p.c_dims, dt::f32, PlainTag(r));
        pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_any, plan->c_md, y_md), attr, Engine());
      } else {
        pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_any, y_md), attr, Engine());
      }
      RejectReference(pd);
      plan->prim = dnnl::matmul(pd);
      plan->a_md = pd.src_desc();
      plan->b_md = pd.weights_desc();
      plan->y_md = pd.dst_desc();
      plan->scratch_md = pd.scratchpad_desc();
    } else {
      // Inner product: dst[M, N] = src[M, K] * W[N, K]^T; B [K, N] is W in "io" order.
      if (!p.two_d || p.a_trans || !b_is_const) throw dnnl::error(dnnl_unimplemented, "inner product does not apply");
      const int64_t M = p.a_dims[0], K = p.a_dims[1], N = p.b_dims[1];
      plan->user_a_md = memory::desc({M, K}, dt::f32, tag::ab);
      const memory::desc a_md({M, K}, cdt, tag::ab);
      plan->user_b_md = memory::desc({N, K}, dt::f32, p.b_trans ? tag::ab : tag::ba);
      const memory::desc w_any({N, K}, cdt, tag::any);
      dnnl::inner_product_forward::primitive_desc pd;
      const auto prop = dnnl::prop_kind::forward_inference;
      if (p.c_kind == CKind::kBias) {
        plan->c_md = memory::desc({N}, dt::f32, tag::a);
        pd = dnnl::inner_product_forward::primitive_desc(dnnl::inner_product_forward::desc(prop, a_md, w_any, plan->c_md, y_md),
                                                         attr, Engine());
      } else {
        pd = dnnl::inner_product_forward::primitive_desc(dnnl::inner_product_forward::desc(prop, a_md, w_any, y_md), attr, Engine());
      }
      if (pd.src_desc() != a_md || pd.dst_desc() != y_md) throw dnnl::error(dnnl_unimplemented, "inner product wants other layouts");
      RejectReference(pd);
      plan->prim = dnnl::inner_product_forward(pd);
      plan->a_md = pd.src_desc();
      plan->b_md = pd.weights_desc();
      plan->y_md = pd.dst_desc();
      plan->scratch_md = pd.scratchpad_desc();
    }
    if (p.c_kind == CKind::kBinary) plan->c_md = memory::desc(p.c_dims, dt::f32, tag::ab);
    plan->c_arg = p.c_kind == CKind::kBias ? DNNL_ARG_BIAS : c_arg;
    plan->c_scale = p.c_scale;
    plan->c_expand = p.c_expand;
    plan->c_src_dims = p.c_src_dims;
    plan->act_outside = p.act_outside;
    if (plan->a_md != plan->user_a_md) plan->a_in = MakeReorder(plan->user_a_md, plan->a_md);
    if (b_is_const && prec == Precision::kFp16) plan->half_b = const_b_.GetHalf(plan->user_b_md, plan->b_md);
    else if (b_is_const) plan->packed_b = const_b_.Get(plan->user_b_md, plan->b_md);
    else if (plan->b_md != plan->user_b_md) plan->b_in = MakeReorder(plan->user_b_md, plan->b_md);
    return plan;
  }

  Status RunPlan(const MMPlan& plan, const float* a, const float* b, const float* c, float* y) const {
    MemArg user_b, b_tmp, user_a, a_tmp, src, dst(plan.y_md, y), cm;
    if (plan.a_in) {
      user_a = MemArg(plan.user_a_md, a);
      void* buf = ThreadScratch(2, plan.a_md.get_size());
      if (!buf) return Status::ResourceExhausted(std::string(spec_.name) + ": out of memory for a converted A");
      a_tmp = MemArg(plan.a_md, buf);
      IL_RETURN_IF_ERROR(RunReorder(*plan.a_in, user_a.get(), a_tmp.get()));
      src = std::move(a_tmp);
    } else {
      src = MemArg(plan.a_md, a);
    }
    dnnl_memory_t wei = nullptr;
    if (plan.packed_b) {
      wei = plan.packed_b->get();
    } else if (plan.half_b) {
      float* buf = static_cast<float*>(ThreadScratch(1, plan.b_md.get_size()));
      if (!buf) return Status::ResourceExhausted(std::string(spec_.name) + ": out of memory for widened weights");
      plan.half_b->Expand(buf);
      b_tmp = MemArg(plan.b_md, buf);
      wei = b_tmp.get();
    } else {
      user_b = MemArg(plan.user_b_md, b);
      wei = user_b.get();
      if (plan.b_in) {
        void* buf = ThreadScratch(1, plan.b_md.get_size());
        if (!buf) return Status::ResourceExhausted(std::string(spec_.name) + ": out of memory for reordered weights");
        b_tmp = MemArg(plan.b_md, buf);
        IL_RETURN_IF_ERROR(RunReorder(*plan.b_in, wei, b_tmp.get()));
        wei = b_tmp.get();
      }
    }
    ExecArgs args;
    args.Add(DNNL_ARG_SRC, src.get());
    args.Add(DNNL_ARG_WEIGHTS, wei);
    args.Add(DNNL_ARG_DST, dst.get());
    if (c && plan.c_expand) {  // Gemm: C [rows, cols] broadcast to y's [M, N], times beta
      const int64_t M = plan.c_md.data.dims[0], N = plan.c_md.data.dims[1];
      const int64_t rows = plan.c_src_dims[0], cols = plan.c_src_dims[1];
      float* full = static_cast<float*>(ThreadScratch(0, static_cast<size_t>(M * N) * sizeof(float)));
      if (!full) return Status::ResourceExhausted(std::string(spec_.name) + ": out of memory for an expanded C");
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) full[i * N + j] = plan.c_scale * c[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      c = full;
    } else if (c && plan.c_scale != 1.f) {
      const size_t n = plan.c_md.get_size() / sizeof(float);
      float* scaled = static_cast<float*>(ThreadScratch(0, n * sizeof(float)));
      if (!scaled) return Status::ResourceExhausted(std::string(spec_.name) + ": out of memory for a scaled C");
      for (size_t i = 0; i < n; ++i) scaled[i] = plan.c_scale * c[i];
      c = scaled;
    }
    if (c) {
      cm = MemArg(plan.c_md, c);
      args.Add(plan.c_arg, cm.get());
    }
    IL_RETURN_IF_ERROR(Execute(plan.prim, plan.scratch_md, args, spec_.name));
    if (plan.act_outside) ApplyActivation(spec_.act, y, static_cast<int64_t>(plan.y_md.get_size() / sizeof(float)));
    return Status::Ok();
  }

  // A plan for a shape not seen before (see the file comment); scalar_only when oneDNN can
  // take the problem in no way.
  Result<std::shared_ptr<const MMPlan>> MakePlan(const MMProblem& p, bool b_is_const, const float* a,
                                                 const float* b, const float* c, float* y) const {
    Precision prec = prec_;
    auto try_build = [&](MMImpl impl, bool pack = true) -> std::shared_ptr<const MMPlan> {
      try {
        return BuildPlan(p, impl, b_is_const, prec, pack);
      } catch (const dnnl::error&) {
        return nullptr;
      }
    };
    std::shared_ptr<const MMPlan> chosen;
    const bool ip_possible = p.two_d && !p.a_trans && b_is_const;
    if (ip_possible) {
      const std::string tkey = p.TuningKey("matmul|inner_product", prec_);
      if (auto winner = TuningCache::Global().Find(tkey)) {
        for (MMImpl impl : kAllImpls)
          if (*winner == ImplName(impl)) chosen = try_build(impl);
      }
      if (!chosen && AutotuneEnabled()) {
        AutotuneTimer charge;  // building and timing the candidates
        std::vector<std::shared_ptr<const MMPlan>> cands;
        std::vector<std::function<Status()>> runs;
        for (MMImpl impl : kAllImpls)
          if (auto cand = try_build(impl)) {
            cands.push_back(cand);
            runs.push_back([this, cand, a, b, c, y] { return RunPlan(*cand, a, b, c, y); });
          }
        if (!cands.empty()) {
          IL_ASSIGN_OR_RETURN(size_t best, PickFastest(runs));
          chosen = cands[best];
          TuningCache::Global().Store(tkey, ImplName(chosen->impl));
        }
      }
    }
    // Without a tuned pick: matmul, inner product, unpacked B, expanded C; then all of it in
    // f32 when bf16 found no implementation.
    for (int round = 0; round < 2 && !chosen; ++round) {
      if (round == 1) {
        if (prec_ != Precision::kBf16) break;
        prec = Precision::kFp32;
      }
      if (!chosen) chosen = try_build(MMImpl::kMatMul);
      if (!chosen && ip_possible) chosen = try_build(MMImpl::kInnerProduct);
      if (!chosen) chosen = try_build(MMImpl::kMatMul, /*pack=*/false);
      if (!chosen && p.c_kind == CKind::kBinary && !p.c_expand) {  // a broadcast of C oneDNN lacks
        MMProblem full = p;
        ExpandC(&full);
        try {
          chosen = BuildPlan(full, MMImpl::kMatMul, b_is_const, prec);
        } catch (const dnnl::error&) {
          chosen = nullptr;
        }
      }
    }
    if (!chosen) {
      auto none = std::make_shared<MMPlan>();
      none->scalar_only = true;
      return std::shared_ptr<const MMPlan>(none);
    }
    if (chosen->packed_b) const_b_.Retain(chosen->packed_b);  // the tuning losers' copies go
    if (chosen->half_b) const_b_.Retain(chosen->half_b);
    return chosen;
  }

  bool KeepsOwnCopyOfConstant(int i) const override { return i == 1 && const_b_.defined() && Enabled(); }
  void ForEachOwnConstantBuffer(const std::function<void(const void*, size_t)>& fn) const override {
    const_b_.ForEachBuffer(fn);
  }

  MMSpec spec_;
  Precision prec_;  // kFp32, kBf16 or kFp16
  PackedWeights const_b_;
  std::unique_ptr<Kernel> scalar_;
  mutable ShapeCache<MMPlan> plans_;
};

Result<std::unique_ptr<Kernel>> Make(const KernelInfo& info, const KernelFactory& scalar_factory, MMSpec spec) {
  IL_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> scalar, scalar_factory(info));
  if (spec.fused) { IL_ASSIGN_OR_RETURN(spec.act, ActivationFromInfo(info)); }
  if (spec.gemm) {
    spec.trans_a = info.GetInt("transA", 0) != 0;
    spec.trans_b = info.GetInt("transB", 0) != 0;
    spec.alpha = info.GetFloat("alpha", 1.0f);
    spec.beta = info.GetFloat("beta", 1.0f);
  }
  return std::unique_ptr<Kernel>(std::make_unique<MMKernel>(spec, info.float_precision(), info.constant_input(1), std::move(scalar)));
}

}  // namespace

Result<std::unique_ptr<Kernel>> MakeMatMul(const KernelInfo& info, const KernelFactory& scalar_matmul) {
  return Make(info, scalar_matmul, MMSpec{});
}

Result<std::unique_ptr<Kernel>> MakeFusedMatMul(const KernelInfo& info, const KernelFactory& scalar_matmul) {
  MMSpec s;
  s.fused = true;
  s.name = "FusedMatMul";
  return Make(info, scalar_matmul, s);
}

Result<std::unique_ptr<Kernel>> MakeGemm(const KernelInfo& info, const KernelFactory& scalar_gemm) {
  MMSpec s;
  s.gemm = true;
  s.name = "Gemm";
  return Make(info, scalar_gemm, s);
}

Result<std::unique_ptr<Kernel>> MakeFusedGemm(const KernelInfo& info, const KernelFactory& scalar_gemm) {
  MMSpec s;
  s.gemm = true;
  s.fused = true;
  s.name = "FusedGemm";
  return Make(info, scalar_gemm, s);
}

}  // namespace dnnl_kernels
}  // namespace inferloop
