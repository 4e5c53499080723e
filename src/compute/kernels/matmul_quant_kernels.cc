// MatMulInteger and QLinearMatMul (part of the matmul kernel family).
//
// Both subtract the zero points first (materializing int32 operands, or float operands for
// float8 inputs), run the batched numpy-style matmul, and (QLinearMatMul) requantize.
// Zero points / scales are per tensor (one element), per row of A / per column of B (a 1-D
// vector of M / N elements), or N-D tensors shaped [..., M, 1] / [..., 1, N].
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernels/matmul_internal.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace matmul {
namespace {

bool IsInt8Like(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// The shape a quantization parameter is read as, relative to its operand of shape `x`.
// per_row: A's parameters (vary along M); else B's (vary along N). Error message or "".
std::string ParamView(const Tensor& param, const Shape& x, bool per_row, const char* name, Shape* view) {
  if (param.size() == 1) {
    view->clear();
    return "";
  }
  const int xr = static_cast<int>(x.size());
  if (xr < 2)
    return std::string(name) + " must have a single element when its operand is 1-D, got shape " +
           ShapeToString(param.shape());
  const int64_t M = x[xr - 2], N = x[xr - 1];
  if (param.rank() == 1) {
    const int64_t want = per_row ? M : N;
    if (param.dim(0) != want)
      return std::string(name) + " has " + std::to_string(param.dim(0)) + " elements, expected 1 or " +
             std::to_string(want) + (per_row ? " (rows of A)" : " (columns of B)");
    *view = per_row ? Shape{M, 1} : Shape{1, N};
    return "";
  }
  *view = param.shape();
  const int vr = param.rank();
  bool ok = vr <= xr;
  for (int i = 0; ok && i < vr; ++i) {
    const int64_t v = (*view)[vr - 1 - i], d = x[xr - 1 - i];
    ok = v == 1 || v == d;
  }
  if (ok) ok = per_row ? (*view)[vr - 1] == 1 : (*view)[vr - 2] == 1;
  if (!ok)
    return std::string(name) + " of shape " + ShapeToString(param.shape()) + " does not fit its operand of shape " +
           ShapeToString(x) + (per_row ? " (expected [..., M, 1])" : " (expected [..., 1, N])");
  return "";
}

// Reads element i of an integer or float8 tensor as a double.
double ReadQuant(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kUInt8: return t.data<uint8_t>()[i];
    default: return SmallFloatToFloat(t.dtype(), t.data<uint8_t>()[i]);
  }
}

// x - zero_point as int32 (integer x) into out32, or as float (float8 x) into outf.
Status Dezero(KernelContext& ctx, const Tensor& x, const Tensor* zp, const Shape& view, bool as_float, Tensor* out) {
  IL_ASSIGN_OR_RETURN(*out, ctx.Allocate(as_float ? DataType::kFloat : DataType::kInt32, x.shape()));
  const int64_t n = x.size();
  if (n == 0) return Status::Ok();
  std::vector<int64_t> xs(x.rank(), 0), zs = BroadcastStrides(view, x.shape());
  int64_t st = 1;
  for (int d = x.rank() - 1; d >= 0; --d) {
    xs[d] = st;
    st *= x.dim(d);
  }
  if (as_float) {
    float* po = out->data<float>();
    if (x.rank() == 0) {
      po[0] = static_cast<float>(ReadQuant(x, 0) - (zp ? ReadQuant(*zp, 0) : 0.0));
      return Status::Ok();
    }
    ForEachBroadcast2(x.shape(), xs, zs, [&](int64_t i, int64_t, int64_t iz) {
      po[i] = static_cast<float>(ReadQuant(x, i)) - (zp ? static_cast<float>(ReadQuant(*zp, iz)) : 0.0f);
    });
    return Status::Ok();
  }
  int32_t* po = out->data<int32_t>();
  auto run = [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    const X* px = x.data<X>();
    const X* pz = zp ? zp->data<X>() : nullptr;
    if (x.rank() == 0) {
      po[0] = static_cast<int32_t>(px[0]) - (pz ? static_cast<int32_t>(pz[0]) : 0);
      return;
    }
    ForEachBroadcast2(x.shape(), xs, zs, [&](int64_t i, int64_t, int64_t iz) {
      po[i] = static_cast<int32_t>(px[i]) - (pz ? static_cast<int32_t>(pz[iz]) : 0);
    });
  };
  if (x.dtype() == DataType::kInt8) run(TypeTag<int8_t>{});
  else run(TypeTag<uint8_t>{});
  return Status::Ok();
}

Status CheckZeroPoint(KernelContext& ctx, const Tensor* zp, const Tensor& x, const char* name) {
  if (zp && zp->dtype() != x.dtype())
    return ctx.Invalid(std::string(name) + " must have the dtype of its input (" + DataTypeName(x.dtype()) + "), got " +
                       DataTypeName(zp->dtype()));
  return Status::Ok();
}

Status ComputeMatMulInteger(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(1));
  const Tensor* azp = ctx.input(2);
  const Tensor* bzp = ctx.input(3);
  if (!IsInt8Like(a->dtype()) || !IsInt8Like(b->dtype()))
    return ctx.Invalid(std::string("A and B must be int8 or uint8, got ") + DataTypeName(a->dtype()) + " and " +
                       DataTypeName(b->dtype()));
  IL_RETURN_IF_ERROR(CheckZeroPoint(ctx, azp, *a, "a_zero_point"));
  IL_RETURN_IF_ERROR(CheckZeroPoint(ctx, bzp, *b, "b_zero_point"));
  MatMulPlan plan;
  std::string err = PlanMatMul(a->shape(), b->shape(), &plan);
  if (!err.empty()) return ctx.Invalid(err);
  Shape av, bv;
  if (azp) err = ParamView(*azp, a->shape(), true, "a_zero_point", &av);
  if (err.empty() && bzp) err = ParamView(*bzp, b->shape(), false, "b_zero_point", &bv);
  if (!err.empty()) return ctx.Invalid(err);
  Tensor a32, b32;
  IL_RETURN_IF_ERROR(Dezero(ctx, *a, azp, av, false, &a32));
  IL_RETURN_IF_ERROR(Dezero(ctx, *b, bzp, bv, false, &b32));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt32, plan.out_shape));
  RunMatMul<int32_t>(plan, a32.data<int32_t>(), b32.data<int32_t>(), out.data<int32_t>());
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

bool IsScaleType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

float ReadScale(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat16: return HalfToFloat(t.data<uint16_t>()[i]);
    case DataType::kBFloat16: return BFloat16ToFloat(t.data<uint16_t>()[i]);
    default: return t.data<float>()[i];
  }
}

// Rounds a float32 result to the scale type (so a*b/c is computed in that type, like numpy).
float RoundToScaleType(DataType t, float v) {
  switch (t) {
    case DataType::kFloat16: return HalfToFloat(FloatToHalf(v));
    case DataType::kBFloat16: return BFloat16ToFloat(FloatToBFloat16(v));
    default: return v;
  }
}

Status ComputeQLinearMatMul(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* as, ctx.RequireInput(1));
  const Tensor* azp = ctx.input(2);
  IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(3));
  IL_ASSIGN_OR_RETURN(const Tensor* bs, ctx.RequireInput(4));
  const Tensor* bzp = ctx.input(5);
  IL_ASSIGN_OR_RETURN(const Tensor* ys, ctx.RequireInput(6));
  const Tensor* yzp = ctx.input(7);
  for (const Tensor* q : {a, b}) {
    if (!IsInt8Like(q->dtype()) && !IsSmallFloat(q->dtype()))
      return ctx.Invalid(std::string("a and b must be int8, uint8 or float8, got ") + DataTypeName(q->dtype()));
  }
  IL_RETURN_IF_ERROR(CheckZeroPoint(ctx, azp, *a, "a_zero_point"));
  IL_RETURN_IF_ERROR(CheckZeroPoint(ctx, bzp, *b, "b_zero_point"));
  const DataType sdt = as->dtype();
  if (!IsScaleType(sdt) || bs->dtype() != sdt || ys->dtype() != sdt)
    return ctx.Invalid(std::string("a_scale, b_scale and y_scale must share one of float/float16/bfloat16, got ") +
                       DataTypeName(sdt) + ", " + DataTypeName(bs->dtype()) + ", " + DataTypeName(ys->dtype()));
  const DataType ydt = yzp ? yzp->dtype() : a->dtype();
  if (!IsInt8Like(ydt) && !IsSmallFloat(ydt))
    return ctx.Invalid(std::string("y_zero_point must be int8, uint8 or float8, got ") + DataTypeName(ydt));

  MatMulPlan plan;
  std::string err = PlanMatMul(a->shape(), b->shape(), &plan);
  if (!err.empty()) return ctx.Invalid(err);
  Shape azv, bzv, asv, bsv;
  if (azp) err = ParamView(*azp, a->shape(), true, "a_zero_point", &azv);
  if (err.empty() && bzp) err = ParamView(*bzp, b->shape(), false, "b_zero_point", &bzv);
  if (err.empty()) err = ParamView(*as, a->shape(), true, "a_scale", &asv);
  if (err.empty()) err = ParamView(*bs, b->shape(), false, "b_scale", &bsv);
  if (!err.empty()) return ctx.Invalid(err);
  const Shape& out_shape = plan.out_shape;
  // Output-side parameters: one element, or broadcastable to the output (e.g. per column [N]).
  for (const Tensor* p : {ys, yzp}) {
    if (!p || p->size() == 1) continue;
    auto bshape = BroadcastShapes({p->shape(), out_shape});
    if (!bshape.ok() || *bshape != out_shape)
      return ctx.Invalid("y_scale / y_zero_point of shape " + ShapeToString(p->shape()) +
                         " do not broadcast to the output shape " + ShapeToString(out_shape));
  }
  // Per-row / per-column views must line up with the output's [..., M, N] layout.
  const bool a1 = a->rank() == 1, b1 = b->rank() == 1;
  if ((a1 || b1) && (as->size() != 1 || bs->size() != 1))
    return ctx.Invalid("per-row / per-column scales need 2-D or higher a and b");

  const bool as_float = IsSmallFloat(a->dtype()) || IsSmallFloat(b->dtype());
  Tensor qa, qb;
  IL_RETURN_IF_ERROR(Dezero(ctx, *a, azp, azv, as_float, &qa));
  IL_RETURN_IF_ERROR(Dezero(ctx, *b, bzp, bzv, as_float, &qb));
  IL_ASSIGN_OR_RETURN(Tensor acc, ctx.Allocate(as_float ? DataType::kFloat : DataType::kInt32, out_shape));
  if (as_float) RunMatMul<float>(plan, qa.data<float>(), qb.data<float>(), acc.data<float>());
  else RunMatMul<int32_t>(plan, qa.data<int32_t>(), qb.data<int32_t>(), acc.data<int32_t>());

  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(ydt, out_shape));
  const int64_t n = out.size();
  if (n == 0) {
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  const Shape ysv = ys->size() == 1 ? Shape{} : ys->shape();
  const Shape yzv = (!yzp || yzp->size() == 1) ? Shape{} : yzp->shape();
  std::vector<std::vector<int64_t>> strides = {BroadcastStrides(asv, out_shape), BroadcastStrides(bsv, out_shape),
                                               BroadcastStrides(ysv, out_shape), BroadcastStrides(yzv, out_shape)};
  auto element = [&](int64_t i, const std::vector<int64_t>& off) {
    const float s = RoundToScaleType(
        sdt, RoundToScaleType(sdt, ReadScale(*as, off[0]) * ReadScale(*bs, off[1])) / ReadScale(*ys, off[2]));
    const double c = as_float ? static_cast<double>(acc.data<float>()[i]) : static_cast<double>(acc.data<int32_t>()[i]);
    const double z = yzp ? ReadQuant(*yzp, off[3]) : 0.0;
    const double v = c * static_cast<double>(s) + z;
    switch (ydt) {
      case DataType::kInt8:
        out.data<int8_t>()[i] = static_cast<int8_t>(std::min(127.0, std::max(-128.0, std::nearbyint(v))));
        break;
      case DataType::kUInt8:
        out.data<uint8_t>()[i] = static_cast<uint8_t>(std::min(255.0, std::max(0.0, std::nearbyint(v))));
        break;
      default: out.data<uint8_t>()[i] = FloatToSmallFloat(ydt, static_cast<float>(v), true); break;
    }
  };
  if (out_shape.empty()) element(0, {0, 0, 0, 0});
  else ForEachBroadcastN(out_shape, strides, element);
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

}  // namespace

void RegisterQuantMatmulKernels(KernelRegistry& r) {
  r.Register("", "MatMulInteger", 10, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) { return ComputeMatMulInteger(ctx); });
  });
  r.Register("", "QLinearMatMul", 10, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) { return ComputeQLinearMatMul(ctx); });
  });
}

}  // namespace matmul
}  // namespace inferloop
