// Registration of the loss kernel family: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
//
// Input (N, C, d1..dk) is viewed as (N, C, D), target (N, d1..dk) as (N, D). Per position:
//   loss = -input[n, target, d] * w,  w = weight[target] (or 1), w = loss = 0 where target == ignore_index.
// reduction "none" keeps the (N, d1..dk) losses, "sum" adds them, "mean" divides the sum by sum(w).
// SoftmaxCrossEntropyLoss first takes log_softmax over C (optionally returned as the 2nd output).
// float16/bfloat16 run in float32; sums accumulate in double.
#include <cmath>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

enum class Reduction { kNone, kSum, kMean };

struct LossConfig {
  Reduction reduction = Reduction::kMean;
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
  bool softmax = false;  // SoftmaxCrossEntropyLoss
};

// log_softmax over axis 1 of (N, C, D).
template <typename T>
void LogSoftmaxAxis1(const T* x, T* y, int64_t N, int64_t C, int64_t D) {
  std::vector<T> mx(D), sum(D);
  for (int64_t n = 0; n < N; ++n) {
    const T* xb = x + n * C * D;
    T* yb = y + n * C * D;
    for (int64_t d = 0; d < D; ++d) {
      mx[d] = xb[d];
      sum[d] = T(0);
    }
    for (int64_t c = 1; c < C; ++c)
      for (int64_t d = 0; d < D; ++d) mx[d] = std::max(mx[d], xb[c * D + d]);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t d = 0; d < D; ++d) sum[d] += std::exp(xb[c * D + d] - mx[d]);
    for (int64_t d = 0; d < D; ++d) sum[d] = mx[d] + std::log(sum[d]);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t d = 0; d < D; ++d) yb[c * D + d] = xb[c * D + d] - sum[d];
  }
}

template <typename T>
Status LossTyped(KernelContext& ctx, const LossConfig& cfg, const Tensor& x, const Tensor& target, const Tensor* weight,
                 Tensor* loss_out, Tensor* log_prob_out) {
  const Shape& s = x.shape();
  const int64_t N = s[0], C = s[1];
  int64_t D = 1;
  for (size_t i = 2; i < s.size(); ++i) D *= s[i];
  const T* lp = x.data<T>();
  if (cfg.softmax) {
    IL_ASSIGN_OR_RETURN(*log_prob_out, ctx.Allocate(x.dtype(), s));
    LogSoftmaxAxis1<T>(x.data<T>(), log_prob_out->data<T>(), N, C, D);
    lp = log_prob_out->data<T>();
  }
  const T* w = weight ? weight->data<T>() : nullptr;
  const bool t64 = target.dtype() == DataType::kInt64;
  const int64_t* tp64 = t64 ? target.data<int64_t>() : nullptr;
  const int32_t* tp32 = t64 ? nullptr : target.data<int32_t>();

  const bool none = cfg.reduction == Reduction::kNone;
  Tensor loss;
  IL_ASSIGN_OR_RETURN(loss, ctx.Allocate(x.dtype(), none ? target.shape() : Shape{}));
  T* pl = loss.data<T>();
  double total = 0.0, total_w = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = n * D + d;
      const int64_t t = t64 ? tp64[i] : tp32[i];
      T l = T(0), wt = T(0);
      if (!(cfg.has_ignore_index && t == cfg.ignore_index)) {
        if (t < 0 || t >= C)
          return ctx.Invalid("target value " + std::to_string(t) + " at position " + std::to_string(i) +
                             " is out of range [0, " + std::to_string(C) + ")");
        wt = w ? w[t] : T(1);
        l = -lp[(n * C + t) * D + d] * wt;
      }
      if (none) pl[i] = l;
      total += static_cast<double>(l);
      total_w += static_cast<double>(wt);
    }
  }
  if (cfg.reduction == Reduction::kSum) pl[0] = static_cast<T>(total);
  else if (cfg.reduction == Reduction::kMean) pl[0] = static_cast<T>(total / total_w);
  *loss_out = std::move(loss);
  return Status::Ok();
}

Status ComputeLoss(KernelContext& ctx, const LossConfig& cfg) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* target, ctx.RequireInput(1));
  const Tensor* weight = ctx.input(2);
  const Shape& s = x->shape();
  if (x->rank() < 2) return ctx.Invalid("input must have shape (N, C, ...), got " + ShapeToString(s));
  if (target->dtype() != DataType::kInt64 && target->dtype() != DataType::kInt32)
    return ctx.Invalid(std::string("target must be int32 or int64, got ") + DataTypeName(target->dtype()));
  Shape want(s.begin(), s.end());
  want.erase(want.begin() + 1);
  if (target->shape() != want)
    return ctx.Invalid("target shape " + ShapeToString(target->shape()) + " does not match input shape " +
                       ShapeToString(s) + " (expected " + ShapeToString(want) + ")");
  if (weight) {
    if (weight->dtype() != x->dtype())
      return ctx.Invalid(std::string("weight must have the input dtype ") + DataTypeName(x->dtype()) + ", got " +
                         DataTypeName(weight->dtype()));
    if (weight->shape() != Shape{s[1]})
      return ctx.Invalid("weight must have shape [" + std::to_string(s[1]) + "], got " + ShapeToString(weight->shape()));
  }
  const DataType dt = x->dtype();
  Tensor loss, log_prob;
  if (IsFloat16Like(dt)) {
    IL_ASSIGN_OR_RETURN(Tensor xf, ToFloat32(*x));
    Tensor wf;
    if (weight) {
      IL_ASSIGN_OR_RETURN(wf, ToFloat32(*weight));
    }
    IL_RETURN_IF_ERROR(LossTyped<float>(ctx, cfg, xf, *target, weight ? &wf : nullptr, &loss, &log_prob));
    IL_ASSIGN_OR_RETURN(loss, CastTensor(loss, dt));
    if (cfg.softmax) {
      IL_ASSIGN_OR_RETURN(log_prob, CastTensor(log_prob, dt));
    }
  } else {
    IL_RETURN_IF_ERROR(DispatchFloating(
        dt,
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          return LossTyped<T>(ctx, cfg, *x, *target, weight, &loss, &log_prob);
        },
        ctx.node().op_type.c_str()));
  }
  ctx.SetOutput(0, std::move(loss));
  if (cfg.softmax && ctx.num_outputs() > 1) ctx.SetOutput(1, std::move(log_prob));
  return Status::Ok();
}

KernelFactory LossFactory(bool softmax) {
  return [softmax](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    LossConfig cfg;
    cfg.softmax = softmax;
    const std::string red = info.GetString("reduction", "mean");
    if (red == "none") cfg.reduction = Reduction::kNone;
    else if (red == "sum") cfg.reduction = Reduction::kSum;
    else if (red == "mean") cfg.reduction = Reduction::kMean;
    else return info.Invalid("reduction must be 'none', 'sum' or 'mean', got '" + red + "'");
    cfg.has_ignore_index = info.has_attr("ignore_index");
    cfg.ignore_index = info.GetInt("ignore_index", 0);
    return MakeKernel([cfg](KernelContext& ctx) { return ComputeLoss(ctx, cfg); });
  };
}

}  // namespace

void RegisterLossKernels(KernelRegistry& r) {
  r.Register("", "NegativeLogLikelihoodLoss", 12, LossFactory(false));
  r.Register("", "SoftmaxCrossEntropyLoss", 12, LossFactory(true));
}

}  // namespace inferloop
