// Unary elementwise kernels: math functions, activations, IsInf/IsNaN, Not, BitwiseNot.
#include <cmath>

#include "base/status_macros.h"
#include "compute/kernels/elementwise_common.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace elementwise {
namespace {

enum class Types { kFloat, kNumeric, kInt };

template <Types kTypes, typename F>
Status DispatchTypes(DataType t, F&& f, const char* what) {
  if constexpr (kTypes == Types::kFloat) return DispatchFloatLike(t, std::forward<F>(f), what);
  else if constexpr (kTypes == Types::kNumeric) return DispatchAllNumeric(t, std::forward<F>(f), what);
  else return DispatchInt(t, std::forward<F>(f), what);
}

// The vectorized float32 form of an op (compute/simd), when it has one.
struct FloatFast {
  bool on = false;
  simd::UnaryOp op = simd::UnaryOp::kRelu;
  simd::UnaryArgs args;
};
using FloatFastFn = FloatFast (*)(const KernelInfo&);

template <simd::UnaryOp kOp>
FloatFast Fast(const KernelInfo&) {
  return {true, kOp, {}};
}

// Registers a same-type unary op. make(info) -> Result<F>, F a generic callable C -> C that
// captures the validated attributes; float32 inputs use fast(info) when given.
template <Types kTypes, typename Make>
void RegUnary(KernelRegistry& r, const char* op, int since, Make make, FloatFastFn fast = nullptr) {
  r.Register("", op, since, [op, make, fast](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    IL_ASSIGN_OR_RETURN(auto f, make(info));
    const FloatFast ff = fast ? fast(info) : FloatFast{};
    return MakeKernel([op, f, ff](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      if (ff.on && x->dtype() == DataType::kFloat) return FloatUnary(ctx, *x, ff.op, ff.args);
      return DispatchTypes<kTypes>(
          x->dtype(),
          [&](auto tag) {
            using Tr = typename decltype(tag)::type;
            return ApplyUnary<Tr, Tr>(ctx, *x, x->dtype(), f);
          },
          op);
    });
  });
}

// Same, for an op without attributes: f is a default-constructible generic lambda.
template <Types kTypes, typename F>
void RegSimple(KernelRegistry& r, const char* op, int since, F f, FloatFastFn fast = nullptr) {
  RegUnary<kTypes>(r, op, since, [f](const KernelInfo&) -> Result<F> { return f; }, fast);
}

template <typename C>
C SigmoidOf(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}
// log(1 + exp(x)) without overflow.
template <typename C>
C SoftplusOf(C x) {
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

Status ValidateFinite(const KernelInfo& info, const char* name, float v) {
  if (!std::isfinite(v)) return info.Invalid(std::string("attribute ") + name + " must be finite, got " + std::to_string(v));
  return Status::Ok();
}

// IsNaN / IsInf: float, double, float16, bfloat16 and the float8 types, output bool.
template <typename Pred>
Status ApplyFloatPredicate(KernelContext& ctx, const Tensor& x, Pred pred, const char* op) {
  const Tensor* src = &x;
  Tensor widened;
  if (IsSmallFloat(x.dtype())) {
    IL_ASSIGN_OR_RETURN(widened, ToFloat32(x));
    src = &widened;
  }
  return DispatchFloatLike(
      src->dtype(),
      [&](auto tag) -> Status {
        using Tr = typename decltype(tag)::type;
        return ApplyUnary<Tr, Bool>(ctx, *src, DataType::kBool, [&](auto v) { return pred(v); });
      },
      op);
}

}  // namespace

namespace {

void RegisterNumeric(KernelRegistry& r) {
  RegSimple<Types::kNumeric>(r, "Abs", 1, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) return std::fabs(x);
    else if constexpr (std::is_signed_v<C>) return x < 0 ? NegOp(x) : x;
    else return x;
  }, Fast<simd::UnaryOp::kAbs>);
  RegSimple<Types::kNumeric>(r, "Neg", 1, [](auto x) -> decltype(x) { return NegOp(x); }, Fast<simd::UnaryOp::kNeg>);
  RegSimple<Types::kNumeric>(r, "Sign", 9, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if (x > C(0)) return C(1);
    if constexpr (std::is_signed_v<C> || std::is_floating_point_v<C>) {
      if (x < C(0)) return C(-1);
    }
    return x;  // 0 (or NaN, which propagates)
  });
  RegSimple<Types::kNumeric>(r, "Relu", 1, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_unsigned_v<C>) return x;
    else return x < C(0) ? C(0) : x;  // NaN propagates
  }, Fast<simd::UnaryOp::kRelu>);
}

void RegisterFloatMath(KernelRegistry& r) {
  RegSimple<Types::kFloat>(r, "Ceil", 1, [](auto x) -> decltype(x) { return std::ceil(x); });
  RegSimple<Types::kFloat>(r, "Floor", 1, [](auto x) -> decltype(x) { return std::floor(x); });
  // Round half to even: nearbyint in the default rounding mode (inferloop never changes it).
  RegSimple<Types::kFloat>(r, "Round", 11, [](auto x) -> decltype(x) { return std::nearbyint(x); });
  RegSimple<Types::kFloat>(r, "Exp", 1, [](auto x) -> decltype(x) { return std::exp(x); }, Fast<simd::UnaryOp::kExp>);
  RegSimple<Types::kFloat>(r, "Log", 1, [](auto x) -> decltype(x) { return std::log(x); }, Fast<simd::UnaryOp::kLog>);
  RegSimple<Types::kFloat>(r, "Sqrt", 1, [](auto x) -> decltype(x) { return std::sqrt(x); }, Fast<simd::UnaryOp::kSqrt>);
  RegSimple<Types::kFloat>(r, "Reciprocal", 1, [](auto x) -> decltype(x) { return decltype(x)(1) / x; }, Fast<simd::UnaryOp::kReciprocal>);
  RegSimple<Types::kFloat>(r, "Sin", 7, [](auto x) -> decltype(x) { return std::sin(x); });
  RegSimple<Types::kFloat>(r, "Cos", 7, [](auto x) -> decltype(x) { return std::cos(x); });
  RegSimple<Types::kFloat>(r, "Tan", 7, [](auto x) -> decltype(x) { return std::tan(x); });
  RegSimple<Types::kFloat>(r, "Asin", 7, [](auto x) -> decltype(x) { return std::asin(x); });
  RegSimple<Types::kFloat>(r, "Acos", 7, [](auto x) -> decltype(x) { return std::acos(x); });
  RegSimple<Types::kFloat>(r, "Atan", 7, [](auto x) -> decltype(x) { return std::atan(x); });
  RegSimple<Types::kFloat>(r, "Sinh", 9, [](auto x) -> decltype(x) { return std::sinh(x); });
  RegSimple<Types::kFloat>(r, "Cosh", 9, [](auto x) -> decltype(x) { return std::cosh(x); });
  RegSimple<Types::kFloat>(r, "Asinh", 9, [](auto x) -> decltype(x) { return std::asinh(x); });
  RegSimple<Types::kFloat>(r, "Acosh", 9, [](auto x) -> decltype(x) { return std::acosh(x); });
  RegSimple<Types::kFloat>(r, "Atanh", 9, [](auto x) -> decltype(x) { return std::atanh(x); });
  RegSimple<Types::kFloat>(r, "Tanh", 1, [](auto x) -> decltype(x) { return std::tanh(x); }, Fast<simd::UnaryOp::kTanh>);
  RegSimple<Types::kFloat>(r, "Erf", 9, [](auto x) -> decltype(x) { return std::erf(x); }, Fast<simd::UnaryOp::kErf>);
}

// Activations without attributes, then those whose attributes the kernel factory reads.
void RegisterActivations(KernelRegistry& r) {
  RegSimple<Types::kFloat>(r, "Sigmoid", 1, [](auto x) -> decltype(x) { return SigmoidOf(x); }, Fast<simd::UnaryOp::kSigmoid>);
  RegSimple<Types::kFloat>(r, "Softplus", 1, [](auto x) -> decltype(x) { return SoftplusOf(x); });
  RegSimple<Types::kFloat>(r, "Softsign", 1, [](auto x) -> decltype(x) { return x / (decltype(x)(1) + std::fabs(x)); });
  RegSimple<Types::kFloat>(r, "Mish", 18, [](auto x) -> decltype(x) { return x * std::tanh(SoftplusOf(x)); });
  RegSimple<Types::kFloat>(r, "HardSwish", 14, [](auto x) -> decltype(x) {
    using C = decltype(x);
    C t = x / C(6) + C(0.5);
    t = t < C(0) ? C(0) : (t > C(1) ? C(1) : t);
    return x * t;
  }, Fast<simd::UnaryOp::kHardSwish>);
}

void RegisterAttributedActivations(KernelRegistry& r) {
  RegUnary<Types::kFloat>(r, "Elu", 1, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 1.0f);
    auto f = [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      return x > C(0) ? x : C(alpha) * std::expm1(x);
    };
    Status st = ValidateFinite(info, "alpha", alpha);
    return st.ok() ? Result<decltype(f)>(f) : Result<decltype(f)>(st);
  });
  RegUnary<Types::kFloat>(r, "Celu", 12, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 1.0f);
    auto f = [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      const C a = C(alpha);
      return x > C(0) ? x : a * std::expm1(x / a);
    };
    Status st = ValidateFinite(info, "alpha", alpha);
    if (st.ok() && alpha == 0.0f) st = info.Invalid("attribute alpha must be nonzero");
    return st.ok() ? Result<decltype(f)>(f) : Result<decltype(f)>(st);
  });
  RegUnary<Types::kFloat>(r, "LeakyRelu", 1, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 0.01f);
    auto f = [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      return x < C(0) ? C(alpha) * x : x;
    };
    return Result<decltype(f)>(f);
  }, [](const KernelInfo& info) {
    return FloatFast{true, simd::UnaryOp::kLeakyRelu, {info.GetFloat("alpha", 0.01f), 0.f}};
  });
  RegUnary<Types::kFloat>(r, "Selu", 1, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 1.67326319217681884765625f);
    const float gamma = info.GetFloat("gamma", 1.05070102214813232421875f);
    auto f = [alpha, gamma](auto x) -> decltype(x) {
      using C = decltype(x);
      return x > C(0) ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha));
    };
    return Result<decltype(f)>(f);
  });
  RegUnary<Types::kFloat>(r, "HardSigmoid", 1, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 0.2f), beta = info.GetFloat("beta", 0.5f);
    auto f = [alpha, beta](auto x) -> decltype(x) {
      using C = decltype(x);
      const C v = C(alpha) * x + C(beta);
      return v < C(0) ? C(0) : (v > C(1) ? C(1) : v);
    };
    return Result<decltype(f)>(f);
  }, [](const KernelInfo& info) {
    return FloatFast{true, simd::UnaryOp::kHardSigmoid, {info.GetFloat("alpha", 0.2f), info.GetFloat("beta", 0.5f)}};
  });
  RegUnary<Types::kFloat>(r, "ThresholdedRelu", 10, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 1.0f);
    auto f = [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      return x > C(alpha) ? x : C(0);
    };
    return Result<decltype(f)>(f);
  });
  RegUnary<Types::kFloat>(r, "Swish", 24, [](const KernelInfo& info) {
    const float alpha = info.GetFloat("alpha", 1.0f);
    auto f = [alpha](auto x) -> decltype(x) { return x * SigmoidOf(decltype(x)(alpha) * x); };
    return Result<decltype(f)>(f);
  });
  RegUnary<Types::kFloat>(r, "Gelu", 20, [](const KernelInfo& info) {
    const std::string approx = info.GetString("approximate", "none");
    const bool use_tanh = approx == "tanh";
    auto f = [use_tanh](auto x) -> decltype(x) {
      using C = decltype(x);
      if (use_tanh) {
        const C k = C(0.79788456080286535587989211986876);  // sqrt(2/pi)
        return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
      }
      return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440084436210485)));
    };
    if (approx != "none" && approx != "tanh")
      return Result<decltype(f)>(info.Invalid("attribute approximate must be 'none' or 'tanh', got '" + approx + "'"));
    return Result<decltype(f)>(f);
  }, [](const KernelInfo& info) {
    const bool use_tanh = info.GetString("approximate", "none") == "tanh";
    return FloatFast{true, use_tanh ? simd::UnaryOp::kGeluTanh : simd::UnaryOp::kGelu, {}};
  });
  RegUnary<Types::kNumeric>(r, "Shrink", 9, [](const KernelInfo& info) {
    const float bias = info.GetFloat("bias", 0.0f), lambd = info.GetFloat("lambd", 0.5f);
    auto f = [bias, lambd](auto x) -> decltype(x) {
      using C = decltype(x);
      if constexpr (std::is_floating_point_v<C>) {
        if (x < -C(lambd)) return x + C(bias);
        if (x > C(lambd)) return x - C(bias);
        return C(0);
      } else {
        const double v = static_cast<double>(x);
        if (v < -double(lambd)) return SaturateCast<C>(v + double(bias));
        if (v > double(lambd)) return SaturateCast<C>(v - double(bias));
        return C(0);
      }
    };
    return Result<decltype(f)>(f);
  });
}

// Predicates (IsNaN, IsInf) and logic / bit operations.
void RegisterPredicatesAndLogic(KernelRegistry& r) {
  r.Register("", "IsNaN", 9, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      return ApplyFloatPredicate(ctx, *x, [](auto v) { return std::isnan(v); }, "IsNaN");
    });
  });
  r.Register("", "IsInf", 10, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const bool pos = info.GetInt("detect_positive", 1) != 0, neg = info.GetInt("detect_negative", 1) != 0;
    return MakeKernel([pos, neg](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      return ApplyFloatPredicate(
          ctx, *x, [pos, neg](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); }, "IsInf");
    });
  });

  // ---- logic / bits ----
  r.Register("", "Not", 1, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      if (x->dtype() != DataType::kBool) return UnsupportedType("Not", x->dtype());
      return ApplyUnary<Bool, Bool>(ctx, *x, DataType::kBool, [](bool v) { return !v; });
    });
  });
  RegSimple<Types::kInt>(r, "BitwiseNot", 18, [](auto x) -> decltype(x) { return static_cast<decltype(x)>(~x); });
}

}  // namespace

void RegisterElementwiseUnary(KernelRegistry& r) {
  RegisterNumeric(r);
  RegisterFloatMath(r);
  RegisterActivations(r);
  RegisterAttributedActivations(r);
  RegisterPredicatesAndLogic(r);
}

}  // namespace elementwise
}  // namespace inferloop
