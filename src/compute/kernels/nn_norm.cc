// Normalizations: BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, RMSNormalization, MeanVarianceNormalization, LRN, LpNormalization.
// Statistics are accumulated in double; values are computed in float (float16/bfloat16/float)
// or double.
#include <cmath>
#include <memory>
#include <vector>

#include "base/status_macros.h"
#include "compute/broadcast.h"
#include "compute/kernels/nn_common.h"
#include "compute/simd/float_kernels.h"

namespace inferloop {
namespace nn {
namespace {

// Population mean and variance of n values (two passes, double accumulation).
template <typename T>
void MeanVar(const T* x, int64_t n, int64_t stride, double* mean, double* var) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i * stride];
  const double m = n > 0 ? s / static_cast<double>(n) : 0.0;
  double v = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i * stride] - m;
    v += d * d;
  }
  *mean = m;
  *var = n > 0 ? v / static_cast<double>(n) : 0.0;
}

// A parameter tensor of exactly `n` elements (any shape with that count when `any_shape`,
// else rank 1), converted to T.
template <typename T>
Result<Tensor> Param(const KernelContext& ctx, const Tensor* t, int64_t n, const char* name, bool any_shape = false) {
  if (!t) return ctx.Invalid(std::string("required input ") + name + " is missing");
  if (!IsFloatLike(t->dtype())) return ctx.Invalid(std::string(name) + " must be a float tensor, got " + DataTypeName(t->dtype()));
  if (t->size() != n || (!any_shape && t->rank() != 1))
    return ctx.Invalid(std::string(name) + " must have shape [" + std::to_string(n) + "], got " + ShapeToString(t->shape()));
  return ConvertTo(*t, ComputeTypeOf(std::is_same_v<T, double> ? DataType::kDouble : DataType::kFloat));
}

// `t` broadcast (unidirectionally) to X's shape, as a flat vector v whose value for flat
// X index i is v[i % period]: period is `inner` when t only varies along X's last axes.
template <typename T>
struct Broadcasted {
  std::vector<T> v;
  int64_t period = 1;
  T at(int64_t i) const { return v[i % period]; }
};

template <typename T>
Result<Broadcasted<T>> BroadcastParam(const KernelContext& ctx, const Tensor& t, const Shape& xs, int axis, const char* name) {
  if (!IsFloatLike(t.dtype())) return ctx.Invalid(std::string(name) + " must be a float tensor, got " + DataTypeName(t.dtype()));
  const int r = static_cast<int>(xs.size());
  bool ok = t.rank() <= r;
  for (int i = 0; ok && i < t.rank(); ++i) {
    const int64_t td = t.dim(t.rank() - 1 - i), xd = xs[r - 1 - i];
    ok = td == xd || td == 1;
  }
  if (!ok)
    return ctx.Invalid(std::string(name) + " of shape " + ShapeToString(t.shape()) + " does not broadcast to X's shape " + ShapeToString(xs));
  // Strip leading size-1 dims that fall before `axis`.
  Shape ts = t.shape();
  while (static_cast<int>(ts.size()) > r - axis && ts.front() == 1) ts.erase(ts.begin());
  Shape target;
  int64_t period;
  if (static_cast<int>(ts.size()) <= r - axis) {
    target.assign(xs.begin() + axis, xs.end());
  } else {
    target = xs;
  }
  period = ShapeElementCount(target);
  IL_ASSIGN_OR_RETURN(Tensor tc, ConvertTo(t, std::is_same_v<T, double> ? DataType::kDouble : DataType::kFloat));
  Broadcasted<T> b;
  b.period = std::max<int64_t>(1, period);
  b.v.resize(static_cast<size_t>(std::max<int64_t>(0, period)));
  const T* src = tc.data<T>();
  const std::vector<int64_t> st = BroadcastStrides(ts, target), zero(target.size(), 0);
  ForEachBroadcast2(target, st, zero, [&](int64_t i, int64_t ia, int64_t) { b.v[i] = src[ia]; });
  if (b.v.empty()) b.v.push_back(T(0));
  return b;
}

int NormalizeAxis(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

// True when `t` is float32 and its elements line up one-to-one with X's dims [axis, rank): its
// dims equal X's trailing dims, possibly after leading 1s (so the flat data is the parameter).
bool AlignsWithTrailingDims(const Tensor* t, const Shape& xs, int axis) {
  if (t == nullptr || t->dtype() != DataType::kFloat) return false;
  const int r = static_cast<int>(xs.size()), tr = t->rank();
  if (tr > r) return false;  // the reference path reports it
  for (int i = 0; i < r - axis || i < tr; ++i) {
    const int64_t td = i < tr ? t->dim(tr - 1 - i) : 1;
    if (td != (i < r - axis ? xs[r - 1 - i] : 1)) return false;
  }
  return true;
}

// A BatchNormalization parameter usable as-is by the float32 path: float32, shape [C].
bool IsChannelParam(const Tensor* t, int64_t channels) {
  return t != nullptr && t->dtype() == DataType::kFloat && t->rank() == 1 && t->dim(0) == channels;
}

// scale / sqrt(var + epsilon) per channel, in double then rounded.
void FoldBatchNormScale(const float* scale, const float* var, int64_t channels, float epsilon, float* out) {
  for (int64_t c = 0; c < channels; ++c)
    out[c] = static_cast<float>(scale[c] / std::sqrt(static_cast<double>(var[c]) + static_cast<double>(epsilon)));
}

// Output dtype of LayerNormalization's Mean/InvStdDev from stash_type.
DataType StashType(int64_t stash) {
  switch (stash) {
    case 11: return DataType::kDouble;
    case 16: return DataType::kBFloat16;
    case 10: return DataType::kFloat16;
    default: return DataType::kFloat;
  }
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization

Result<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelInfo& info) {
  const int64_t opset = info.opset();
  const float epsilon = info.GetFloat("epsilon", 1e-5f);
  const float momentum = info.GetFloat("momentum", 0.9f);
  const bool spatial = opset >= 9 || info.GetInt("spatial", 1) != 0;
  int training_attr = -1;  // -1: decided by the outputs (before opset 14)
  if (opset >= 14) training_attr = info.GetInt("training_mode", 0) != 0 ? 1 : 0;
  // Inference on float32 with constant [C] parameters: fold scale / sqrt(var + eps) once.
  std::shared_ptr<const std::vector<float>> folded_scale;
  const Tensor* cs = info.constant_input(1);
  const Tensor* cv = info.constant_input(4);
  if (spatial && cs && cv && info.constant_input(2) && info.constant_input(3) && IsChannelParam(cs, cs->size()) &&
      IsChannelParam(cv, cs->size())) {
    auto f = std::make_shared<std::vector<float>>(cs->size());
    FoldBatchNormScale(cs->data<float>(), cv->data<float>(), cs->size(), epsilon, f->data());
    folded_scale = std::move(f);
  }
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->rank() < 2) return ctx.Invalid("X must have rank >= 2 (N, C, ...), got shape " + ShapeToString(x->shape()));
    const int64_t N = x->dim(0), C = x->dim(1), S = N > 0 && C > 0 ? x->size() / (N * C) : 0;
    bool training = training_attr == 1;
    if (training_attr < 0) {
      for (int i = 1; i < ctx.num_outputs(); ++i) training = training || ctx.output_wanted(i);
    }
    if (!training && spatial && x->dtype() == DataType::kFloat && IsChannelParam(ctx.input(1), C) &&
        IsChannelParam(ctx.input(2), C) && IsChannelParam(ctx.input(3), C) && IsChannelParam(ctx.input(4), C)) {
      const float* scale = folded_scale && static_cast<int64_t>(folded_scale->size()) == C ? folded_scale->data() : nullptr;
      if (scale == nullptr) {
        float* tmp = static_cast<float*>(ctx.Scratch(static_cast<size_t>(C) * sizeof(float)));
        if (tmp == nullptr) return Status::ResourceExhausted(ctx.node().Describe() + ": no scratch memory");
        FoldBatchNormScale(ctx.input(1)->data<float>(), ctx.input(4)->data<float>(), C, epsilon, tmp);
        scale = tmp;
      }
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, x->shape()));
      simd::ChannelAffine(ctx.thread_pool(), x->data<float>(), y.data<float>(), N * C, S, C, ctx.input(3)->data<float>(),
                          scale, ctx.input(2)->data<float>());
      ctx.SetOutput(0, std::move(y));
      return Status::Ok();
    }
    const int64_t P = spatial ? C : C * S;  // parameters per "channel"
    return DispatchFloatCompute(x->dtype(), "BatchNormalization", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      IL_ASSIGN_OR_RETURN(Tensor scale, Param<T>(ctx, ctx.input(1), P, "scale", !spatial));
      IL_ASSIGN_OR_RETURN(Tensor bias, Param<T>(ctx, ctx.input(2), P, "B", !spatial));
      IL_ASSIGN_OR_RETURN(Tensor mean, Param<T>(ctx, ctx.input(3), P, "input_mean", !spatial));
      IL_ASSIGN_OR_RETURN(Tensor var, Param<T>(ctx, ctx.input(4), P, "input_var", !spatial));
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      // Statistics per parameter p: for spatial, p = c over (N, S); else p = (c, s) over N.
      std::vector<double> use_mean(P), use_var(P), batch_mean(P), batch_var(P);
      const T* pm = mean.data<T>();
      const T* pv = var.data<T>();
      if (training) {
        for (int64_t p = 0; p < P; ++p) {
          double s = 0, s2 = 0;
          int64_t cnt = 0;
          const int64_t c = spatial ? p : p / S, s0 = spatial ? 0 : p % S, s1 = spatial ? S : s0 + 1;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t k = s0; k < s1; ++k) { s += px[(n * C + c) * S + k]; ++cnt; }
          const double m = cnt ? s / cnt : 0.0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t k = s0; k < s1; ++k) { const double d = px[(n * C + c) * S + k] - m; s2 += d * d; }
          batch_mean[p] = m;
          batch_var[p] = cnt ? s2 / cnt : 0.0;
          use_mean[p] = m;
          use_var[p] = batch_var[p];
        }
      } else {
        for (int64_t p = 0; p < P; ++p) { use_mean[p] = pm[p]; use_var[p] = pv[p]; }
      }
      const T* ps = scale.data<T>();
      const T* pb = bias.data<T>();
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < C; ++c) {
          const int64_t off = (n * C + c) * S;
          for (int64_t k = 0; k < S; ++k) {
            const int64_t p = spatial ? c : c * S + k;
            const double inv = 1.0 / std::sqrt(use_var[p] + static_cast<double>(epsilon));
            py[off + k] = static_cast<T>((px[off + k] - use_mean[p]) * inv * ps[p] + pb[p]);
          }
        }
      }
      IL_RETURN_IF_ERROR(SetOutputAs(ctx, 0, std::move(y), x->dtype()));
      if (!training) return Status::Ok();
      // Running statistics (outputs 1, 2) and, before opset 14, the batch ones (3, 4).
      auto emit = [&](int idx, auto value_of, DataType dt) -> Status {
        if (idx >= ctx.num_outputs() || !ctx.output_wanted(idx)) return Status::Ok();
        IL_ASSIGN_OR_RETURN(Tensor o, ctx.Allocate(DataType::kDouble, ctx.input(3)->shape()));
        for (int64_t p = 0; p < P; ++p) o.data<double>()[p] = value_of(p);
        return SetOutputAs(ctx, idx, std::move(o), dt);
      };
      const DataType mdt = ctx.input(3)->dtype(), vdt = ctx.input(4)->dtype();
      const double mom = momentum;
      IL_RETURN_IF_ERROR(emit(1, [&](int64_t p) { return pm[p] * mom + batch_mean[p] * (1 - mom); }, mdt));
      IL_RETURN_IF_ERROR(emit(2, [&](int64_t p) { return pv[p] * mom + batch_var[p] * (1 - mom); }, vdt));
      IL_RETURN_IF_ERROR(emit(3, [&](int64_t p) { return batch_mean[p]; }, mdt));
      IL_RETURN_IF_ERROR(emit(4, [&](int64_t p) { return batch_var[p]; }, vdt));
      return Status::Ok();
    });
  });
}

// ---------------------------------------------------------------------------------------------
// InstanceNormalization and GroupNormalization: statistics per (n, group of channels).

Result<std::unique_ptr<Kernel>> MakeGroupLikeNorm(const KernelInfo& info, bool instance) {
  const float epsilon = info.GetFloat("epsilon", 1e-5f);
  const int64_t num_groups = instance ? 0 : info.GetInt("num_groups", -1);
  const bool per_group_params = !instance && info.opset() < 21;
  if (!instance && num_groups <= 0) return info.Invalid("attribute num_groups is required and must be positive");
  const char* name = instance ? "InstanceNormalization" : "GroupNormalization";
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->rank() < 2) return ctx.Invalid("X must have rank >= 2 (N, C, ...), got shape " + ShapeToString(x->shape()));
    const int64_t N = x->dim(0), C = x->dim(1), S = N > 0 && C > 0 ? x->size() / (N * C) : 0;
    const int64_t G = instance ? C : num_groups;
    if (!instance && C % G != 0)
      return ctx.Invalid("channels " + std::to_string(C) + " are not divisible by num_groups " + std::to_string(G));
    const int64_t cpg = G > 0 ? C / G : 0;
    return DispatchFloatCompute(x->dtype(), name, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      // Opset 18 GroupNormalization: one scale/bias per group; else per channel.
      const Tensor* st = ctx.input(1);
      const Tensor* bt = ctx.input(2);
      const int64_t P = per_group_params && st && st->size() != C ? G : C;
      IL_ASSIGN_OR_RETURN(Tensor scale, Param<T>(ctx, st, P, "scale"));
      IL_ASSIGN_OR_RETURN(Tensor bias, Param<T>(ctx, bt, P, "B"));
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      const T* ps = scale.data<T>();
      const T* pb = bias.data<T>();
      const int64_t gsize = cpg * S;
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t g = 0; g < G; ++g) {
          const int64_t off = (n * C + g * cpg) * S;
          double m, v;
          MeanVar(px + off, gsize, 1, &m, &v);
          const double inv = 1.0 / std::sqrt(v + static_cast<double>(epsilon));
          for (int64_t cl = 0; cl < cpg; ++cl) {
            const int64_t c = g * cpg + cl, p = P == C ? c : g;
            const double sc = ps[p], bi = pb[p];
            for (int64_t k = 0; k < S; ++k) {
              const int64_t i = off + cl * S + k;
              py[i] = static_cast<T>((px[i] - m) * inv * sc + bi);
            }
          }
        }
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

// ---------------------------------------------------------------------------------------------
// LayerNormalization and RMSNormalization: statistics over axes [axis, rank).

// LayerNormalization of float32 X with parameters laid out like X's dims [axis, rank); Mean and
// InvStdDev (when wanted) in float32.
Status FloatLayerNorm(KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor* bias, int axis,
                      int64_t outer, int64_t inner, float epsilon) {
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, x.shape()));
  const bool want_mean = ctx.num_outputs() > 1 && ctx.output_wanted(1);
  const bool want_inv = ctx.num_outputs() > 2 && ctx.output_wanted(2);
  Tensor mean_o, inv_o;
  if (want_mean || want_inv) {
    Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
    stat_shape.resize(x.rank(), 1);
    if (want_mean) { IL_ASSIGN_OR_RETURN(mean_o, ctx.AllocateUninit(DataType::kFloat, stat_shape)); }
    if (want_inv) { IL_ASSIGN_OR_RETURN(inv_o, ctx.AllocateUninit(DataType::kFloat, stat_shape)); }
  }
  simd::LayerNormRows(ctx.thread_pool(), x.data<float>(), scale.data<float>(), bias ? bias->data<float>() : nullptr,
                      y.data<float>(), outer, inner, epsilon, want_mean ? mean_o.data<float>() : nullptr,
                      want_inv ? inv_o.data<float>() : nullptr);
  ctx.SetOutput(0, std::move(y));
  if (want_mean) ctx.SetOutput(1, std::move(mean_o));
  if (want_inv) ctx.SetOutput(2, std::move(inv_o));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeLayerNorm(const KernelInfo& info, bool rms) {
  const int64_t axis_attr = info.GetInt("axis", -1);
  const float epsilon = info.GetFloat("epsilon", 1e-5f);
  const int64_t stash = info.GetInt("stash_type", 1);
  const DataType stash_dt = StashType(stash);
  const char* name = rms ? "RMSNormalization" : "LayerNormalization";
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* scale_t, ctx.RequireInput(1));
    const Tensor* bias_t = rms ? nullptr : ctx.input(2);
    const int r = x->rank();
    if (axis_attr < -r || axis_attr >= r || r == 0)
      return ctx.Invalid("axis " + std::to_string(axis_attr) + " is out of range for X of rank " + std::to_string(r));
    const int axis = NormalizeAxis(axis_attr, r);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < r; ++d) (d < axis ? outer : inner) *= x->dim(d);
    const bool want_stats = !rms && ((ctx.num_outputs() > 1 && ctx.output_wanted(1)) ||
                                     (ctx.num_outputs() > 2 && ctx.output_wanted(2)));
    if (!rms && inner > 0 && x->dtype() == DataType::kFloat && AlignsWithTrailingDims(scale_t, x->shape(), axis) &&
        (bias_t == nullptr || AlignsWithTrailingDims(bias_t, x->shape(), axis)) &&
        (!want_stats || stash_dt == DataType::kFloat))
      return FloatLayerNorm(ctx, *x, *scale_t, bias_t, axis, outer, inner, epsilon);
    return DispatchFloatCompute(x->dtype(), name, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      IL_ASSIGN_OR_RETURN(Broadcasted<T> sc, BroadcastParam<T>(ctx, *scale_t, x->shape(), axis, "Scale"));
      Broadcasted<T> bi;
      if (bias_t) { IL_ASSIGN_OR_RETURN(bi, BroadcastParam<T>(ctx, *bias_t, x->shape(), axis, "B")); }
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
      const bool want_mean = !rms && ctx.num_outputs() > 1 && ctx.output_wanted(1);
      const bool want_inv = !rms && ctx.num_outputs() > 2 && ctx.output_wanted(2);
      Shape stat_shape(x->shape().begin(), x->shape().begin() + axis);
      stat_shape.resize(r, 1);
      Tensor mean_o, inv_o;
      if (want_mean) { IL_ASSIGN_OR_RETURN(mean_o, ctx.Allocate(DataType::kDouble, stat_shape)); }
      if (want_inv) { IL_ASSIGN_OR_RETURN(inv_o, ctx.Allocate(DataType::kDouble, stat_shape)); }
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        const int64_t off = o * inner;
        double m = 0, v;
        if (rms) {
          double s2 = 0;
          for (int64_t j = 0; j < inner; ++j) s2 += static_cast<double>(px[off + j]) * px[off + j];
          v = inner ? s2 / inner : 0.0;
        } else {
          MeanVar(px + off, inner, 1, &m, &v);
        }
        const double inv = 1.0 / std::sqrt(v + static_cast<double>(epsilon));
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t i = off + j;
          double val = (px[i] - m) * inv * sc.at(i);
          if (bias_t) val += bi.at(i);
          py[i] = static_cast<T>(val);
        }
        if (want_mean) mean_o.data<double>()[o] = m;
        if (want_inv) inv_o.data<double>()[o] = inv;
      }
      IL_RETURN_IF_ERROR(SetOutputAs(ctx, 0, std::move(y), x->dtype()));
      if (want_mean) IL_RETURN_IF_ERROR(SetOutputAs(ctx, 1, std::move(mean_o), stash_dt));
      if (want_inv) IL_RETURN_IF_ERROR(SetOutputAs(ctx, 2, std::move(inv_o), stash_dt));
      return Status::Ok();
    });
  });
}

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes`.

Result<std::unique_ptr<Kernel>> MakeMvn(const KernelInfo& info) {
  const std::vector<int64_t> axes = info.GetInts("axes", {0, 2, 3});
  return MakeKernel([axes](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    const int r = x->rank();
    Shape stat_shape = x->shape();
    for (int64_t a : axes) {
      if (a < -r || a >= r) return ctx.Invalid("axis " + std::to_string(a) + " is out of range for X of rank " + std::to_string(r));
      stat_shape[NormalizeAxis(a, r)] = 1;
    }
    return DispatchFloatCompute(x->dtype(), "MeanVarianceNormalization", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
      const int64_t ns = ShapeElementCount(stat_shape);
      const int64_t cnt = ns > 0 ? x->size() / ns : 0;
      std::vector<double> sum(ns, 0.0), sq(ns, 0.0);
      const std::vector<int64_t> st = BroadcastStrides(stat_shape, x->shape()), zero(r, 0);
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      ForEachBroadcast2(x->shape(), st, zero, [&](int64_t i, int64_t s, int64_t) { sum[s] += px[i]; });
      for (auto& v : sum) v /= static_cast<double>(std::max<int64_t>(1, cnt));
      ForEachBroadcast2(x->shape(), st, zero, [&](int64_t i, int64_t s, int64_t) {
        const double d = px[i] - sum[s];
        sq[s] += d * d;
      });
      for (auto& v : sq) v = std::sqrt(v / static_cast<double>(std::max<int64_t>(1, cnt))) + 1e-9;
      ForEachBroadcast2(x->shape(), st, zero, [&](int64_t i, int64_t s, int64_t) {
        py[i] = static_cast<T>((px[i] - sum[s]) / sq[s]);
      });
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

// ---------------------------------------------------------------------------------------------
// LRN: across-channel local response normalization.

Result<std::unique_ptr<Kernel>> MakeLrn(const KernelInfo& info) {
  const float alpha = info.GetFloat("alpha", 1e-4f), beta = info.GetFloat("beta", 0.75f), bias = info.GetFloat("bias", 1.0f);
  const int64_t size = info.GetInt("size", 0);
  if (size <= 0) return info.Invalid("attribute size is required and must be positive");
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->rank() < 2) return ctx.Invalid("X must have rank >= 2 (N, C, ...), got shape " + ShapeToString(x->shape()));
    const int64_t N = x->dim(0), C = x->dim(1), S = N > 0 && C > 0 ? x->size() / (N * C) : 0;
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    return DispatchFloatCompute(x->dtype(), "LRN", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      std::vector<double> sq(S);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < C; ++c) {
          std::fill(sq.begin(), sq.end(), 0.0);
          const int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min<int64_t>(C - 1, c + after);
          for (int64_t cc = c0; cc <= c1; ++cc) {
            const T* xr = px + (n * C + cc) * S;
            for (int64_t k = 0; k < S; ++k) sq[k] += static_cast<double>(xr[k]) * xr[k];
          }
          const int64_t off = (n * C + c) * S;
          for (int64_t k = 0; k < S; ++k)
            py[off + k] = static_cast<T>(px[off + k] / std::pow(bias + alpha / static_cast<double>(size) * sq[k], static_cast<double>(beta)));
        }
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

// ---------------------------------------------------------------------------------------------
// LpNormalization: x / ||x||_p along axis (a zero norm gives NaN, as the conformance data expects).

Result<std::unique_ptr<Kernel>> MakeLpNorm(const KernelInfo& info) {
  const int64_t axis_attr = info.GetInt("axis", -1);
  const int64_t p = info.GetInt("p", 2);
  if (p != 1 && p != 2) return info.Invalid("p must be 1 or 2, got " + std::to_string(p));
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    const int r = x->rank();
    if (r == 0 || axis_attr < -r || axis_attr >= r)
      return ctx.Invalid("axis " + std::to_string(axis_attr) + " is out of range for X of rank " + std::to_string(r));
    const int axis = NormalizeAxis(axis_attr, r);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int d = axis + 1; d < r; ++d) inner *= x->dim(d);
    const int64_t len = x->dim(axis);
    return DispatchFloatCompute(x->dtype(), "LpNormalization", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
          const int64_t base = o * len * inner + in;
          double s = 0;
          for (int64_t k = 0; k < len; ++k) {
            const double v = px[base + k * inner];
            s += p == 1 ? std::fabs(v) : v * v;
          }
          const double norm = p == 1 ? s : std::sqrt(s);
          for (int64_t k = 0; k < len; ++k)
            py[base + k * inner] = static_cast<T>(px[base + k * inner] / norm);
        }
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

}  // namespace

void RegisterNormKernels(KernelRegistry& r) {
  r.Register("", "BatchNormalization", 1, MakeBatchNorm);
  r.Register("", "InstanceNormalization", 1, [](const KernelInfo& i) { return MakeGroupLikeNorm(i, true); });
  r.Register("", "GroupNormalization", 18, [](const KernelInfo& i) { return MakeGroupLikeNorm(i, false); });
  r.Register("", "LayerNormalization", 17, [](const KernelInfo& i) { return MakeLayerNorm(i, false); });
  r.Register("", "RMSNormalization", 23, [](const KernelInfo& i) { return MakeLayerNorm(i, true); });
  r.Register("", "MeanVarianceNormalization", 9, MakeMvn);
  r.Register("", "LRN", 1, MakeLrn);
  r.Register("", "LpNormalization", 1, MakeLpNorm);
}

}  // namespace nn
}  // namespace inferloop
