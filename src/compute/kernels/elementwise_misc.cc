// Variadic Max/Min/Sum/Mean, Clip, Where and Identity.
#include <cmath>
#include <cstring>
#include <optional>

#include "base/status_macros.h"
#include "compute/kernels/elementwise_common.h"

namespace inferloop {
namespace elementwise {
namespace {

// acc[i] = f(acc[i], Load(p[i])) in vectorizable blocks.
template <typename Tr, typename F>
void FoldRow(typename Tr::C* __restrict acc, const typename Tr::S* __restrict p, int64_t n, F& f) {
  int64_t i = 0;
  for (; i + kMapBlock <= n; i += kMapBlock)
    for (int64_t j = 0; j < kMapBlock; ++j) acc[i + j] = f(acc[i + j], Tr::Load(p[i + j]));
  for (; i < n; ++i) acc[i] = f(acc[i], Tr::Load(p[i]));
}

// acc[i] = first ? v : f(acc[i], v) with v the element of `in` broadcast to `out_shape`.
template <typename Tr, typename F>
void FoldInto(typename Tr::C* acc, const Shape& out_shape, const Tensor& in, bool first, F& f) {
  using C = typename Tr::C;
  const auto* p = in.data<typename Tr::S>();
  ForEachBroadcastRow2(out_shape, BroadcastStrides(out_shape, out_shape), BroadcastStrides(in.shape(), out_shape),
                       [&](int64_t o, int64_t, int64_t ib, int64_t len, int64_t, int64_t sb) {
                         C* row = acc + o;
                         if (first) {
                           for (int64_t k = 0; k < len; ++k) row[k] = Tr::Load(p[ib + k * sb]);
                         } else if (sb == 1) {
                           FoldRow<Tr>(row, p + ib, len, f);
                         } else {
                           for (int64_t k = 0; k < len; ++k) row[k] = f(row[k], Tr::Load(p[ib + k * sb]));
                         }
                       });
}

// Max / Min / Sum / Mean over 1..N inputs with multidirectional broadcasting.
template <typename F>
Status ComputeVariadic(KernelContext& ctx, const char* op, bool mean, F f) {
  const int n = ctx.num_inputs();
  if (n < 1) return ctx.Invalid("expected at least one input");
  std::vector<const Tensor*> ins(n);
  std::vector<Shape> shapes(n);
  for (int i = 0; i < n; ++i) {
    IL_ASSIGN_OR_RETURN(ins[i], ctx.RequireInput(i));
    if (ins[i]->dtype() != ins[0]->dtype())
      return ctx.Invalid("input " + std::to_string(i) + " has dtype " + DataTypeName(ins[i]->dtype()) + ", expected " +
                         DataTypeName(ins[0]->dtype()) + " like input 0");
    shapes[i] = ins[i]->shape();
  }
  IL_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes(shapes));
  const DataType t = ins[0]->dtype();
  return DispatchAllNumeric(
      t,
      [&](auto tag) -> Status {
        using Tr = typename decltype(tag)::type;
        using C = typename Tr::C;
        if (n == 2 && !mean) return ApplyBinary<Tr, Tr, Tr>(ctx, *ins[0], *ins[1], t, f);
        IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(t, out_shape));
        Tensor wide;  // float accumulator for float16/bfloat16
        C* acc;
        if constexpr (std::is_same_v<typename Tr::S, C>) {
          acc = out.data<C>();
        } else {
          IL_ASSIGN_OR_RETURN(wide, ctx.Allocate(DataType::kFloat, out_shape));
          acc = wide.data<C>();
        }
        for (int i = 0; i < n; ++i) FoldInto<Tr>(acc, out_shape, *ins[i], i == 0, f);
        const int64_t m = out.size();
        if (mean) {
          const C cnt = static_cast<C>(n);
          for (int64_t i = 0; i < m; ++i) acc[i] = DivOp(acc[i], cnt);
        }
        if constexpr (!std::is_same_v<typename Tr::S, C>) {
          auto* po = out.data<typename Tr::S>();
          for (int64_t i = 0; i < m; ++i) po[i] = Tr::Store(acc[i]);
        }
        ctx.SetOutput(0, std::move(out));
        return Status::Ok();
      },
      op);
}

void RegVariadic(KernelRegistry& r, const char* op, bool mean, int kind) {
  r.Register("", op, 1, [op, mean, kind](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([op, mean, kind](KernelContext& ctx) -> Status {
      switch (kind) {
        case 0: return ComputeVariadic(ctx, op, mean, [](auto x, auto y) -> decltype(x) { return MaxOp(x, y); });
        case 1: return ComputeVariadic(ctx, op, mean, [](auto x, auto y) -> decltype(x) { return MinOp(x, y); });
        default: return ComputeVariadic(ctx, op, mean, [](auto x, auto y) -> decltype(x) { return AddOp(x, y); });
      }
    });
  });
}

// ---- Clip ----
struct ClipAttrs {
  bool from_inputs = true;  // opset >= 11
  std::optional<float> min, max;
};

// A bound given as input i: absent -> nullopt; else a one-element tensor of X's dtype.
template <typename Tr>
Result<std::optional<typename Tr::C>> ClipBound(const KernelContext& ctx, int i, DataType t, const char* name) {
  const Value* v = ctx.input_value(i);
  if (!v || v->is_none()) return std::optional<typename Tr::C>();
  if (!v->is_tensor()) return ctx.Invalid(std::string(name) + " must be a tensor");
  const Tensor& b = v->tensor();
  if (b.dtype() != t)
    return ctx.Invalid(std::string(name) + " has dtype " + DataTypeName(b.dtype()) + ", expected " + DataTypeName(t) +
                       " like input");
  if (b.size() != 1)
    return ctx.Invalid(std::string(name) + " must be a scalar, got shape " + ShapeToString(b.shape()));
  return std::optional<typename Tr::C>(Tr::Load(b.data<typename Tr::S>()[0]));
}

Status ComputeClip(KernelContext& ctx, const ClipAttrs& attrs) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  const DataType t = x->dtype();
  return DispatchAllNumeric(
      t,
      [&](auto tag) -> Status {
        using Tr = typename decltype(tag)::type;
        using C = typename Tr::C;
        std::optional<C> lo, hi;
        if (attrs.from_inputs) {
          IL_ASSIGN_OR_RETURN(lo, ClipBound<Tr>(ctx, 1, t, "min"));
          IL_ASSIGN_OR_RETURN(hi, ClipBound<Tr>(ctx, 2, t, "max"));
        } else {
          if (attrs.min) lo = SaturateCast<C>(*attrs.min);
          if (attrs.max) hi = SaturateCast<C>(*attrs.max);
        }
        // numpy clip: minimum(maximum(x, lo), hi); so min > max gives max everywhere.
        if constexpr (std::is_same_v<Tr, Plain<float>>) {
          const float l = lo ? *lo : -std::numeric_limits<float>::infinity();
          const float h = hi ? *hi : std::numeric_limits<float>::infinity();
          if ((lo || hi) && !std::isnan(l) && !std::isnan(h)) return FloatUnary(ctx, *x, simd::UnaryOp::kClip, {l, h});
        }
        if (lo && hi) {
          const C l = *lo, h = *hi;
          return ApplyUnary<Tr, Tr>(ctx, *x, t, [l, h](C v) { return MinOp(MaxOp(v, l), h); });
        }
        if (lo) {
          const C l = *lo;
          return ApplyUnary<Tr, Tr>(ctx, *x, t, [l](C v) { return MaxOp(v, l); });
        }
        if (hi) {
          const C h = *hi;
          return ApplyUnary<Tr, Tr>(ctx, *x, t, [h](C v) { return MinOp(v, h); });
        }
        ctx.SetOutput(0, *x);  // nothing to clip: tensors are immutable, share the buffer
        return Status::Ok();
      },
      "Clip");
}

// ---- Where ----
template <typename T>
void SelectRow(const uint8_t* __restrict pc, const T* __restrict px, const T* __restrict py, T* __restrict po,
               int64_t n) {
  for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? px[i] : py[i];
}

template <typename T>
Status WhereTyped(KernelContext& ctx, const Tensor& c, const Tensor& x, const Tensor& y) {
  IL_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes({c.shape(), x.shape(), y.shape()}));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(x.dtype(), out_shape));
  const auto* pc = c.data<uint8_t>();
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.size();
  if (c.shape() == out_shape && x.shape() == out_shape && y.shape() == out_shape) {
    SelectRow(pc, px, py, po, n);
  } else {
    ForEachBroadcast3(out_shape, BroadcastStrides(c.shape(), out_shape), BroadcastStrides(x.shape(), out_shape),
                      BroadcastStrides(y.shape(), out_shape),
                      [&](int64_t i, int64_t ic, int64_t ix, int64_t iy) { po[i] = pc[ic] ? px[ix] : py[iy]; });
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

Status ComputeWhere(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* c, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(const Tensor* y, ctx.RequireInput(2));
  if (c->dtype() != DataType::kBool)
    return ctx.Invalid(std::string("condition must be bool, got ") + DataTypeName(c->dtype()));
  if (x->dtype() != y->dtype())
    return ctx.Invalid(std::string("X and Y must have the same dtype, got ") + DataTypeName(x->dtype()) + " and " +
                       DataTypeName(y->dtype()));
  if (x->dtype() == DataType::kString) return WhereTyped<std::string>(ctx, *c, *x, *y);
  return DispatchBySize(
      x->dtype(),
      [&](auto tag) -> Status { return WhereTyped<typename decltype(tag)::type>(ctx, *c, *x, *y); }, "Where");
}

}  // namespace

void RegisterElementwiseMisc(KernelRegistry& r) {
  RegVariadic(r, "Max", false, 0);
  RegVariadic(r, "Min", false, 1);
  RegVariadic(r, "Sum", false, 2);
  RegVariadic(r, "Mean", true, 2);

  r.Register("", "Clip", 1, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    ClipAttrs attrs;
    attrs.from_inputs = info.opset() >= 11;
    if (!attrs.from_inputs) {
      // Opsets 1-10: attributes, defaulting to -FLT_MAX / FLT_MAX (so they clip infinities).
      attrs.min = info.GetFloat("min", std::numeric_limits<float>::lowest());
      attrs.max = info.GetFloat("max", std::numeric_limits<float>::max());
    }
    return MakeKernel([attrs](KernelContext& ctx) -> Status { return ComputeClip(ctx, attrs); });
  });

  r.Register("", "Where", 9, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status { return ComputeWhere(ctx); });
  });

  // Identity passes any Value through: tensor, sequence or (empty) optional.
  r.Register("", "Identity", 1, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    if (!info.has_input(0)) return info.Invalid("expected one input");
    return MakeKernel([](KernelContext& ctx) -> Status {
      const Value* v = ctx.input_value(0);
      ctx.SetOutput(0, v ? *v : Value::None());
      return Status::Ok();
    });
  });
}

}  // namespace elementwise
}  // namespace inferloop
