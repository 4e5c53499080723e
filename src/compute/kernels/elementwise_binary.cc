// Binary elementwise kernels: arithmetic, comparisons, logic, bitwise ops, Mod, Pow, PRelu.
#include <cmath>

#include "base/status_macros.h"
#include "compute/kernels/elementwise_common.h"

namespace inferloop {
namespace elementwise {

LegacyBroadcast LegacyBroadcast::FromInfo(const KernelInfo& info, int first_modern_opset) {
  LegacyBroadcast lb;
  lb.legacy = info.opset() < first_modern_opset;
  if (lb.legacy) {
    lb.broadcast = info.GetInt("broadcast", 0) != 0;
    lb.has_axis = info.has_attr("axis");
    lb.axis = info.GetInt("axis", 0);
  }
  return lb;
}

Status LegacyBroadcast::Apply(const KernelContext& ctx, const Tensor& a, const Tensor*& b, Tensor& holder) const {
  // broadcast=0 asks for equal shapes; inferloop accepts numpy broadcasting there too (a superset).
  if (!legacy || !broadcast) return Status::Ok();
  const int64_t ra = a.rank(), rb = b->rank();
  if (rb > ra)
    return ctx.Invalid("legacy broadcast: B has rank " + std::to_string(rb) + ", more than A's rank " + std::to_string(ra));
  const int64_t axis = has_axis ? (this->axis < 0 ? this->axis + ra : this->axis) : ra - rb;
  if (axis < 0 || axis + rb > ra)
    return ctx.Invalid("legacy broadcast: axis " + std::to_string(this->axis) + " out of range for A " +
                       ShapeToString(a.shape()) + " and B " + ShapeToString(b->shape()));
  Shape s(ra, 1);
  for (int64_t i = 0; i < rb; ++i) s[axis + i] = b->dim(static_cast<int>(i));
  IL_ASSIGN_OR_RETURN(holder, b->Reshaped(std::move(s)));
  b = &holder;
  return Status::Ok();
}

Status GetBinaryInputs(const KernelContext& ctx, const LegacyBroadcast& lb, const Tensor*& a, const Tensor*& b,
                       Tensor& holder) {
  IL_ASSIGN_OR_RETURN(a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(b, ctx.RequireInput(1));
  if (a->dtype() != b->dtype())
    return ctx.Invalid(std::string("inputs must have the same dtype, got ") + DataTypeName(a->dtype()) + " and " +
                       DataTypeName(b->dtype()));
  return lb.Apply(ctx, *a, b, holder);
}

namespace {

enum class Types { kFloat, kNumeric, kInt, kBool, kNumericBoolString };

struct Str {
  using S = std::string;
  using C = const std::string&;
  static const std::string& Load(const std::string& v) { return v; }
};

// A float32 arithmetic op's vectorized form (compute/simd) and its scalar form (used for shapes
// the vector path does not take).
struct FloatArith {
  simd::BinaryOp op;
  float (*scalar)(float, float);
};

// Registers a binary op whose inputs share a dtype. kOutBool: the output is bool
// (comparisons, logic), else the input dtype. f is a generic callable (C, C) -> C or bool.
// With `arith`, float32 inputs go to the vectorized kernels.
template <Types kTypes, bool kOutBool, typename F>
void RegBinary(KernelRegistry& r, const char* op, int since, F f, const FloatArith* arith = nullptr) {
  r.Register("", op, since, [op, f, arith](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const LegacyBroadcast lb = LegacyBroadcast::FromInfo(info);
    return MakeKernel([op, f, lb, arith](KernelContext& ctx) -> Status {
      const Tensor *a, *b;
      Tensor holder;
      IL_RETURN_IF_ERROR(GetBinaryInputs(ctx, lb, a, b, holder));
      const DataType t = a->dtype();
      if (arith && t == DataType::kFloat) return FloatBinary(ctx, *a, *b, arith->op, arith->scalar);
      auto run = [&](auto tag) -> Status {
        using Tr = typename decltype(tag)::type;
        if constexpr (kOutBool) return ApplyBinary<Tr, Tr, Bool>(ctx, *a, *b, DataType::kBool, f);
        else return ApplyBinary<Tr, Tr, Tr>(ctx, *a, *b, t, f);
      };
      if constexpr (kTypes == Types::kFloat) {
        return DispatchFloatLike(t, run, op);
      } else if constexpr (kTypes == Types::kNumeric) {
        return DispatchAllNumeric(t, run, op);
      } else if constexpr (kTypes == Types::kInt) {
        return DispatchInt(t, run, op);
      } else if constexpr (kTypes == Types::kBool) {
        if (t != DataType::kBool) return UnsupportedType(op, t);
        return run(TypeTag<Bool>{});
      } else {
        if (t == DataType::kBool) return run(TypeTag<Bool>{});
        if (t == DataType::kString) return run(TypeTag<Str>{});
        return DispatchAllNumeric(t, run, op);
      }
    });
  });
}

// ---- Mod ----
template <typename T>
T ModFloor(T a, T b) {  // result has the sign of b (Python %)
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (r != 0) {
      if ((r < 0) != (b < 0)) r += b;
    } else {
      r = std::copysign(T(0), b);
    }
    return r;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
      T m = static_cast<T>(a % b);
      if (m != 0 && ((m < 0) != (b < 0))) m = static_cast<T>(m + b);
      return m;
    } else {
      return static_cast<T>(a % b);
    }
  }
}
template <typename T>
T ModTrunc(T a, T b) {  // result has the sign of a (C fmod)
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return static_cast<T>(a % b);
  }
}

// ---- BitShift ----
template <typename T>
T ShiftLeft(T x, T y) {
  constexpr int bits = sizeof(T) * 8;
  if constexpr (std::is_signed_v<T>) {
    if (y < 0) return 0;
  }
  if (static_cast<uint64_t>(y) >= static_cast<uint64_t>(bits)) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(static_cast<WideUnsigned<T>>(x) << y));
}
template <typename T>
T ShiftRight(T x, T y) {
  constexpr int bits = sizeof(T) * 8;
  bool out_of_range = static_cast<uint64_t>(y) >= static_cast<uint64_t>(bits);
  if constexpr (std::is_signed_v<T>) {
    if (y < 0) out_of_range = true;
    if (out_of_range) return x < 0 ? T(-1) : T(0);
  } else {
    if (out_of_range) return 0;
  }
  return static_cast<T>(x >> y);  // arithmetic for signed (C++20)
}

// ---- Pow ----
template <typename T, typename E>
T IntPow(T base, E e) {
  if constexpr (std::is_signed_v<E>) {
    if (e < 0) {  // trunc(1 / base^|e|): nonzero only for base 1 and -1; base 0 gives 0 too
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<T>) {
        if (base == -1) return (e & 1) ? T(-1) : T(1);
      }
      return 0;
    }
  }
  WideUnsigned<T> result = 1, b = static_cast<WideUnsigned<T>>(base);
  uint64_t n = static_cast<uint64_t>(e);
  while (n) {
    if (n & 1) result = static_cast<WideUnsigned<T>>(result * b);
    b = static_cast<WideUnsigned<T>>(b * b);
    n >>= 1;
  }
  return static_cast<T>(result);
}

template <typename CB, typename CE>
CB PowOf(CB x, CE y) {
  if constexpr (std::is_integral_v<CB> && std::is_integral_v<CE>) return IntPow(x, y);
  else return SaturateCast<CB>(std::pow(static_cast<double>(x), static_cast<double>(y)));
}

// Base dtypes of Pow: float, double, float16, bfloat16, int32, int64.
template <typename F>
Status DispatchPowBase(DataType t, F&& f) {
  switch (t) {
    case DataType::kInt32: return f(TypeTag<Plain<int32_t>>{});
    case DataType::kInt64: return f(TypeTag<Plain<int64_t>>{});
    default: return DispatchFloatLike(t, std::forward<F>(f), "Pow");
  }
}

// Reads a single-element tensor of any numeric dtype as double; false if not numeric.
bool ScalarAsDouble(const Tensor& t, double* out) {
  bool ok = false;
  (void)DispatchAllNumeric(
      t.dtype(),
      [&](auto tag) -> Status {
        using Tr = typename decltype(tag)::type;
        *out = static_cast<double>(Tr::Load(t.data<typename Tr::S>()[0]));
        ok = true;
        return Status::Ok();
      },
      "Pow");
  return ok;
}

Status ComputePow(KernelContext& ctx, const LegacyBroadcast& lb) {
  IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(1));
  Tensor holder;
  IL_RETURN_IF_ERROR(lb.Apply(ctx, *a, b, holder));
  return DispatchPowBase(a->dtype(), [&](auto btag) -> Status {
    using TB = typename decltype(btag)::type;
    using CB = typename TB::C;
    if constexpr (std::is_floating_point_v<CB>) {
      double e;
      if (b->size() == 1 && b->rank() <= a->rank() && ScalarAsDouble(*b, &e) && e == 2.0) {
        if constexpr (std::is_same_v<TB, Plain<float>>) return FloatUnary(ctx, *a, simd::UnaryOp::kSquare);
        return ApplyUnary<TB, TB>(ctx, *a, a->dtype(), [](CB x) { return x * x; });
      }
    }
    return DispatchAllNumeric(
        b->dtype(),
        [&](auto etag) -> Status {
          using TE = typename decltype(etag)::type;
          return ApplyBinary<TB, TE, TB>(ctx, *a, *b, a->dtype(),
                                         [](CB x, typename TE::C y) { return PowOf(x, y); });
        },
        "Pow");
  });
}

// ---- PRelu ----
// Slope broadcasts to X numpy-style. Like the ONNX reference, a 1-D slope that does not
// broadcast is matched to the only dim of X with the same size (old opset models).
Status ComputePRelu(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* slope, ctx.RequireInput(1));
  if (x->dtype() != slope->dtype())
    return ctx.Invalid(std::string("X and slope must have the same dtype, got ") + DataTypeName(x->dtype()) + " and " +
                       DataTypeName(slope->dtype()));
  Tensor holder;
  if (!BroadcastShapes({x->shape(), slope->shape()}).ok() && slope->rank() == 1) {
    int found = -1, count = 0;
    for (int d = 0; d < x->rank(); ++d)
      if (x->dim(d) == slope->dim(0)) found = d, ++count;
    if (count == 1) {
      Shape s(x->rank(), 1);
      s[found] = slope->dim(0);
      IL_ASSIGN_OR_RETURN(holder, slope->Reshaped(std::move(s)));
      slope = &holder;
    }
  }
  return DispatchAllNumeric(
      x->dtype(),
      [&](auto tag) -> Status {
        using Tr = typename decltype(tag)::type;
        using C = typename Tr::C;
        return ApplyBinary<Tr, Tr, Tr>(ctx, *x, *slope, x->dtype(),
                                       [](C v, C s) -> C { return v < C(0) ? MulOp(v, s) : v; });
      },
      "PRelu");
}

}  // namespace

void RegisterElementwiseBinary(KernelRegistry& r) {
  auto add = [](auto x, auto y) -> decltype(x) { return AddOp(x, y); };
  auto sub = [](auto x, auto y) -> decltype(x) { return SubOp(x, y); };
  auto mul = [](auto x, auto y) -> decltype(x) { return MulOp(x, y); };
  auto div = [](auto x, auto y) -> decltype(x) { return DivOp(x, y); };
  static const FloatArith kAdd{simd::BinaryOp::kAdd, [](float x, float y) { return x + y; }};
  static const FloatArith kSub{simd::BinaryOp::kSub, [](float x, float y) { return x - y; }};
  static const FloatArith kMul{simd::BinaryOp::kMul, [](float x, float y) { return x * y; }};
  static const FloatArith kDiv{simd::BinaryOp::kDiv, [](float x, float y) { return x / y; }};
  RegBinary<Types::kNumeric, false>(r, "Add", 1, add, &kAdd);
  RegBinary<Types::kNumeric, false>(r, "Sub", 1, sub, &kSub);
  RegBinary<Types::kNumeric, false>(r, "Mul", 1, mul, &kMul);
  RegBinary<Types::kNumeric, false>(r, "Div", 1, div, &kDiv);

  RegBinary<Types::kNumericBoolString, true>(r, "Equal", 1, [](const auto& x, const auto& y) -> bool { return x == y; });
  RegBinary<Types::kNumeric, true>(r, "Greater", 1, [](auto x, auto y) -> bool { return x > y; });
  RegBinary<Types::kNumeric, true>(r, "Less", 1, [](auto x, auto y) -> bool { return x < y; });
  RegBinary<Types::kNumeric, true>(r, "GreaterOrEqual", 12, [](auto x, auto y) -> bool { return x >= y; });
  RegBinary<Types::kNumeric, true>(r, "LessOrEqual", 12, [](auto x, auto y) -> bool { return x <= y; });

  RegBinary<Types::kBool, true>(r, "And", 1, [](bool x, bool y) -> bool { return x && y; });
  RegBinary<Types::kBool, true>(r, "Or", 1, [](bool x, bool y) -> bool { return x || y; });
  RegBinary<Types::kBool, true>(r, "Xor", 1, [](bool x, bool y) -> bool { return x != y; });

  RegBinary<Types::kInt, false>(r, "BitwiseAnd", 18, [](auto x, auto y) -> decltype(x) { return x & y; });
  RegBinary<Types::kInt, false>(r, "BitwiseOr", 18, [](auto x, auto y) -> decltype(x) { return x | y; });
  RegBinary<Types::kInt, false>(r, "BitwiseXor", 18, [](auto x, auto y) -> decltype(x) { return x ^ y; });

  r.Register("", "BitShift", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const std::string dir = info.GetString("direction", "");
    if (dir != "LEFT" && dir != "RIGHT")
      return info.Invalid("attribute direction must be 'LEFT' or 'RIGHT', got '" + dir + "'");
    const bool left = dir == "LEFT";
    return MakeKernel([left](KernelContext& ctx) -> Status {
      const Tensor *a, *b;
      Tensor holder;
      IL_RETURN_IF_ERROR(GetBinaryInputs(ctx, LegacyBroadcast{}, a, b, holder));
      return DispatchInt(
          a->dtype(),
          [&](auto tag) -> Status {
            using Tr = typename decltype(tag)::type;
            using T = typename Tr::C;
            if (left) return ApplyBinary<Tr, Tr, Tr>(ctx, *a, *b, a->dtype(), [](T x, T y) { return ShiftLeft(x, y); });
            return ApplyBinary<Tr, Tr, Tr>(ctx, *a, *b, a->dtype(), [](T x, T y) { return ShiftRight(x, y); });
          },
          "BitShift");
    });
  });

  r.Register("", "Mod", 10, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const int64_t fmod = info.GetInt("fmod", 0);
    if (fmod != 0 && fmod != 1) return info.Invalid("attribute fmod must be 0 or 1, got " + std::to_string(fmod));
    return MakeKernel([fmod](KernelContext& ctx) -> Status {
      const Tensor *a, *b;
      Tensor holder;
      IL_RETURN_IF_ERROR(GetBinaryInputs(ctx, LegacyBroadcast{}, a, b, holder));
      return DispatchAllNumeric(
          a->dtype(),
          [&](auto tag) -> Status {
            using Tr = typename decltype(tag)::type;
            using T = typename Tr::C;
            if (fmod) return ApplyBinary<Tr, Tr, Tr>(ctx, *a, *b, a->dtype(), [](T x, T y) { return ModTrunc(x, y); });
            return ApplyBinary<Tr, Tr, Tr>(ctx, *a, *b, a->dtype(), [](T x, T y) { return ModFloor(x, y); });
          },
          "Mod");
    });
  });

  r.Register("", "Pow", 1, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const LegacyBroadcast lb = LegacyBroadcast::FromInfo(info);
    return MakeKernel([lb](KernelContext& ctx) -> Status { return ComputePow(ctx, lb); });
  });

  r.Register("", "PRelu", 1, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status { return ComputePRelu(ctx); });
  });
}

}  // namespace elementwise
}  // namespace inferloop
