// Registration of the shape kernel family, shared helpers, and the simple shape ops:
// Constant, ConstantOfShape, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Expand, Range,
// EyeLike, Trilu, NonZero, OneHot.
// Other members live in shape_movement.cc, shape_index.cc and shape_misc.cc.
#include <cmath>
#include <cstring>
#include <limits>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/broadcast.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/shape_common.h"

namespace inferloop {
namespace shape_detail {

Result<std::vector<int64_t>> ReadInt64s(const Tensor& t, const std::string& what) {
  std::vector<int64_t> v(static_cast<size_t>(t.size()));
  const int64_t n = t.size();
  switch (t.dtype()) {
    case DataType::kInt64: std::memcpy(v.data(), t.data<int64_t>(), n * sizeof(int64_t)); break;
    case DataType::kInt32: for (int64_t i = 0; i < n; ++i) v[i] = t.data<int32_t>()[i]; break;
    case DataType::kInt16: for (int64_t i = 0; i < n; ++i) v[i] = t.data<int16_t>()[i]; break;
    case DataType::kInt8: for (int64_t i = 0; i < n; ++i) v[i] = t.data<int8_t>()[i]; break;
    case DataType::kUInt8: for (int64_t i = 0; i < n; ++i) v[i] = t.data<uint8_t>()[i]; break;
    case DataType::kUInt16: for (int64_t i = 0; i < n; ++i) v[i] = t.data<uint16_t>()[i]; break;
    case DataType::kUInt32: for (int64_t i = 0; i < n; ++i) v[i] = t.data<uint32_t>()[i]; break;
    case DataType::kUInt64:
      for (int64_t i = 0; i < n; ++i) {
        uint64_t x = t.data<uint64_t>()[i];
        if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return Status::InvalidArgument(what + ": value " + std::to_string(x) + " does not fit in int64");
        v[i] = static_cast<int64_t>(x);
      }
      break;
    default:
      return Status::InvalidArgument(what + " must be an integer tensor, got " + DataTypeName(t.dtype()));
  }
  return v;
}

Result<std::vector<double>> ReadDoubles(const Tensor& t, const std::string& what) {
  const int64_t n = t.size();
  std::vector<double> v(static_cast<size_t>(n));
  DataType dt = t.dtype();
  if (dt == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) v[i] = HalfToFloat(t.data<uint16_t>()[i]);
    return v;
  }
  if (dt == DataType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) v[i] = BFloat16ToFloat(t.data<uint16_t>()[i]);
    return v;
  }
  if (dt == DataType::kBool) {
    for (int64_t i = 0; i < n; ++i) v[i] = t.data<uint8_t>()[i] ? 1.0 : 0.0;
    return v;
  }
  if (IsSmallFloat(dt)) {
    for (int64_t i = 0; i < n; ++i) v[i] = SmallFloatToFloat(dt, t.data<uint8_t>()[i]);
    return v;
  }
  Status st = DispatchNumeric(dt, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(p[i]);
    return Status::Ok();
  });
  if (!st.ok()) return Status::InvalidArgument(what + " must be numeric, got " + DataTypeName(dt));
  return v;
}

namespace {
template <typename T>
T SaturatingCast(double v) {
  if (std::isnan(v)) return T(0);
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
}  // namespace

Result<Tensor> ScalarFromDouble(DataType dtype, double v) {
  IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, {}));
  switch (dtype) {
    case DataType::kFloat: *t.data<float>() = static_cast<float>(v); break;
    case DataType::kDouble: *t.data<double>() = v; break;
    case DataType::kFloat16: *t.data<uint16_t>() = FloatToHalf(static_cast<float>(v)); break;
    case DataType::kBFloat16: *t.data<uint16_t>() = FloatToBFloat16(static_cast<float>(v)); break;
    case DataType::kBool: *t.data<uint8_t>() = v != 0 ? 1 : 0; break;
    case DataType::kComplex64: t.data<float>()[0] = static_cast<float>(v); break;
    case DataType::kComplex128: t.data<double>()[0] = v; break;
    case DataType::kInt8: *t.data<int8_t>() = SaturatingCast<int8_t>(v); break;
    case DataType::kInt16: *t.data<int16_t>() = SaturatingCast<int16_t>(v); break;
    case DataType::kInt32: *t.data<int32_t>() = SaturatingCast<int32_t>(v); break;
    case DataType::kInt64: *t.data<int64_t>() = SaturatingCast<int64_t>(v); break;
    case DataType::kUInt8: *t.data<uint8_t>() = SaturatingCast<uint8_t>(v); break;
    case DataType::kUInt16: *t.data<uint16_t>() = SaturatingCast<uint16_t>(v); break;
    case DataType::kUInt32: *t.data<uint32_t>() = SaturatingCast<uint32_t>(v); break;
    case DataType::kUInt64: *t.data<uint64_t>() = SaturatingCast<uint64_t>(v); break;
    case DataType::kInt4: *t.data<int8_t>() = static_cast<int8_t>(std::clamp(v, -8.0, 7.0)); break;
    case DataType::kUInt4: *t.data<uint8_t>() = static_cast<uint8_t>(std::clamp(v, 0.0, 15.0)); break;
    case DataType::kInt2: *t.data<int8_t>() = static_cast<int8_t>(std::clamp(v, -2.0, 1.0)); break;
    case DataType::kUInt2: *t.data<uint8_t>() = static_cast<uint8_t>(std::clamp(v, 0.0, 3.0)); break;
    default:
      if (IsSmallFloat(dtype)) {
        *t.data<uint8_t>() = FloatToSmallFloat(dtype, static_cast<float>(v));
        break;
      }
      return Status::Unimplemented(std::string("cannot make a numeric value of dtype ") + DataTypeName(dtype));
  }
  return t;
}

Result<Tensor> OneOf(DataType dtype) { return ScalarFromDouble(dtype, 1.0); }

Status AxisMapGatherAny(const Tensor& in, Tensor& out, const std::vector<std::vector<int64_t>>& maps,
                        const Tensor* fill) {
  if (out.size() == 0) return Status::Ok();
  return DispatchAny(in.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    AxisMapGather<T>(in.data<T>(), out.data<T>(), out.shape(), maps, fill ? fill->data<T>() : nullptr);
    return Status::Ok();
  });
}

Result<Tensor> TransposeView(KernelContext& ctx, const Tensor& in, const Shape& in_view,
                             const std::vector<int64_t>& perm, const Shape& out_shape) {
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in.dtype(), out_shape));
  if (out.size() == 0) return out;
  std::vector<int64_t> st = ContiguousStrides(in_view);
  std::vector<std::vector<int64_t>> maps(perm.size());
  Shape view_out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    int64_t ax = perm[d];
    view_out[d] = in_view[ax];
    maps[d].resize(static_cast<size_t>(in_view[ax]));
    for (int64_t i = 0; i < in_view[ax]; ++i) maps[d][i] = i * st[ax];
  }
  IL_ASSIGN_OR_RETURN(Tensor view, out.Reshaped(view_out));
  IL_RETURN_IF_ERROR(AxisMapGatherAny(in, view, maps, nullptr));
  return out;
}

}  // namespace shape_detail

using namespace shape_detail;  // NOLINT

namespace {

using KernelResult = Result<std::unique_ptr<Kernel>>;

// ---------------------------------------------------------------------------------------------
// Constant
KernelResult MakeConstant(const KernelInfo& info) {
  Tensor value;
  int count = 0;
  if (const Tensor* t = info.GetTensor("value")) { value = *t; ++count; }
  if (info.has_attr("sparse_value")) {
    const Tensor* t = info.GetTensor("sparse_value");
    if (!t) return info.Invalid("attribute 'sparse_value' must be a sparse tensor");
    value = *t;
    ++count;
  }
  if (const Attribute* a = info.attr("value_float")) {
    if (a->type != Attribute::Type::kFloat) return info.Invalid("attribute 'value_float' must be a float");
    value = Tensor::FromVector<float>(DataType::kFloat, {}, {a->f});
    ++count;
  }
  if (const Attribute* a = info.attr("value_floats")) {
    if (a->type != Attribute::Type::kFloats) return info.Invalid("attribute 'value_floats' must be floats");
    value = Tensor::FromVector<float>(DataType::kFloat, {static_cast<int64_t>(a->floats.size())}, a->floats);
    ++count;
  }
  if (const Attribute* a = info.attr("value_int")) {
    if (a->type != Attribute::Type::kInt) return info.Invalid("attribute 'value_int' must be an int");
    value = Tensor::FromVector<int64_t>(DataType::kInt64, {}, {a->i});
    ++count;
  }
  if (const Attribute* a = info.attr("value_ints")) {
    if (a->type != Attribute::Type::kInts) return info.Invalid("attribute 'value_ints' must be ints");
    value = Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(a->ints.size())}, a->ints);
    ++count;
  }
  if (const Attribute* a = info.attr("value_string")) {
    if (a->type != Attribute::Type::kString) return info.Invalid("attribute 'value_string' must be a string");
    value = Tensor::FromStrings({}, {a->s});
    ++count;
  }
  if (const Attribute* a = info.attr("value_strings")) {
    if (a->type != Attribute::Type::kStrings) return info.Invalid("attribute 'value_strings' must be strings");
    value = Tensor::FromStrings({static_cast<int64_t>(a->strings.size())}, a->strings);
    ++count;
  }
  if (count != 1) {
    return info.Invalid("exactly one of value, sparse_value, value_float(s), value_int(s), value_string(s) must be set, got " +
                        std::to_string(count));
  }
  if (!value.defined()) return info.Invalid("constant value could not be built");
  return MakeKernel([value](KernelContext& ctx) -> Status {
    ctx.SetOutput(0, value);
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// ConstantOfShape
KernelResult MakeConstantOfShape(const KernelInfo& info) {
  Tensor value;
  if (const Tensor* t = info.GetTensor("value")) {
    if (t->size() != 1) return info.Invalid("attribute 'value' must have exactly one element, got " + std::to_string(t->size()));
    value = *t;
  } else {
    value = Tensor::FromVector<float>(DataType::kFloat, {}, {0.0f});
  }
  return MakeKernel([value](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    if (in->rank() != 1) return ctx.Invalid("input shape must be 1-D, got rank " + std::to_string(in->rank()));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInt64s(*in, "shape"));
    for (int64_t d : dims)
      if (d < 0) return ctx.Invalid("shape dimensions must be non-negative, got " + ShapeToString(dims));
    if (ShapeElementCount(dims) == -2)
      return Status::ResourceExhausted(ctx.node().Describe() + ": output shape " + ShapeToString(dims) + " overflows");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(value.dtype(), dims));
    IL_RETURN_IF_ERROR(DispatchAny(value.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      std::fill(out.data<T>(), out.data<T>() + out.size(), value.data<T>()[0]);
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Shape, Size
KernelResult MakeShape(const KernelInfo& info) {
  int64_t start = info.GetInt("start", 0);
  bool has_end = info.has_attr("end");
  int64_t end = info.GetInt("end", 0);
  return MakeKernel([start, end, has_end](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    const int64_t r = in->rank();
    auto clampi = [r](int64_t v) {
      if (v < 0) v += r;
      return std::clamp<int64_t>(v, 0, r);
    };
    int64_t s = clampi(start), e = has_end ? clampi(end) : r;
    int64_t n = std::max<int64_t>(0, e - s);
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt64, {n}));
    for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = in->dim(static_cast<int>(s + i));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

KernelResult MakeSize(const KernelInfo&) {
  return MakeKernel([](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt64, {}));
    *out.data<int64_t>() = in->size();
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Reshape
Result<Shape> ComputeReshape(const Shape& in, const Shape& spec, bool allowzero, int64_t in_size) {
  Shape out(spec.size());
  int infer = -1;
  bool has_zero = false;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer >= 0) return Status::InvalidArgument("shape " + ShapeToString(spec) + " has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (d < -1) return Status::InvalidArgument("invalid dimension " + std::to_string(d) + " in shape " + ShapeToString(spec));
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        return Status::InvalidArgument("shape " + ShapeToString(spec) + " copies dimension " + std::to_string(i) +
                                       " (0) but the input " + ShapeToString(in) + " has rank " + std::to_string(in.size()));
      d = in[i];
    }
    if (d == 0) has_zero = true;
    out[i] = d;
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d)
      return Status::InvalidArgument("shape " + ShapeToString(spec) + " overflows");
    known *= d;
  }
  if (infer >= 0) {
    if (allowzero && has_zero)
      return Status::InvalidArgument("shape " + ShapeToString(spec) + " has both 0 and -1 with allowzero=1");
    if (known == 0) {
      if (in_size != 0) return Status::InvalidArgument("cannot reshape " + ShapeToString(in) + " to " + ShapeToString(spec));
      out[infer] = 0;  // ambiguous; choose 0 like other runtimes
    } else {
      if (in_size % known != 0)
        return Status::InvalidArgument("cannot reshape " + ShapeToString(in) + " to " + ShapeToString(spec));
      out[infer] = in_size / known;
    }
  } else if (known != in_size) {
    return Status::InvalidArgument("cannot reshape " + ShapeToString(in) + " (" + std::to_string(in_size) +
                                   " elements) to " + ShapeToString(out));
  }
  return out;
}

KernelResult MakeReshape(const KernelInfo& info) {
  bool allowzero = info.GetInt("allowzero", 0) != 0;
  bool from_attr = info.opset() < 5;
  std::vector<int64_t> attr_shape = info.GetInts("shape");
  if (from_attr && !info.has_attr("shape")) return info.Invalid("attribute 'shape' is required in opset < 5");
  return MakeKernel([allowzero, from_attr, attr_shape](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    Shape spec(attr_shape.begin(), attr_shape.end());  // inline storage: no allocation per run
    if (!from_attr) {
      IL_ASSIGN_OR_RETURN(const Tensor* s, ctx.RequireInput(1));
      if (s->rank() != 1) return ctx.Invalid("shape input must be 1-D, got rank " + std::to_string(s->rank()));
      if (s->dtype() == DataType::kInt64) {
        spec.assign(s->data<int64_t>(), s->data<int64_t>() + s->size());
      } else {
        IL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInt64s(*s, "shape"));
        spec = v;
      }
    }
    auto out_shape = ComputeReshape(in->shape(), spec, allowzero, in->size());
    if (!out_shape.ok()) return out_shape.status().WithContext(ctx.node().Describe());
    IL_ASSIGN_OR_RETURN(Tensor out, in->Reshaped(*out_shape));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Flatten
KernelResult MakeFlatten(const KernelInfo& info) {
  int64_t axis = info.GetInt("axis", 1);
  return MakeKernel([axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    const int64_t r = in->rank();
    int64_t a = axis;
    if (a < -r || a > r)
      return ctx.Invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) +
                         " (expected [" + std::to_string(-r) + ", " + std::to_string(r) + "])");
    if (a < 0) a += r;
    Shape out{Product(in->shape(), 0, a), Product(in->shape(), a, r)};
    IL_ASSIGN_OR_RETURN(Tensor t, in->Reshaped(out));
    ctx.SetOutput(0, std::move(t));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Squeeze / Unsqueeze
KernelResult MakeSqueeze(const KernelInfo& info) {
  bool axes_from_input = info.opset() >= 13;
  bool has_attr_axes = info.has_attr("axes");
  std::vector<int64_t> attr_axes = info.GetInts("axes");
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    const int64_t r = in->rank();
    bool have_axes = false;
    std::vector<int64_t> axes;
    if (axes_from_input) {
      if (const Tensor* a = ctx.input(1)) {
        IL_ASSIGN_OR_RETURN(axes, ReadInt64s(*a, "axes"));
        have_axes = true;
      }
    } else if (has_attr_axes) {
      axes = attr_axes;
      have_axes = true;
    }
    std::vector<char> drop(r, 0);
    if (have_axes) {
      for (int64_t a : axes) {
        int64_t n = a;
        if (!NormalizeAxis(n, r)) return ctx.Invalid(AxisError(a, r));
        if (drop[n]) return ctx.Invalid("axis " + std::to_string(a) + " is repeated in axes");
        if (in->dim(static_cast<int>(n)) != 1)
          return ctx.Invalid("cannot squeeze axis " + std::to_string(a) + " of shape " + ShapeToString(in->shape()) +
                             ": its size is not 1");
        drop[n] = 1;
      }
    } else {
      for (int64_t d = 0; d < r; ++d) drop[d] = in->dim(static_cast<int>(d)) == 1;
    }
    Shape out;
    for (int64_t d = 0; d < r; ++d)
      if (!drop[d]) out.push_back(in->dim(static_cast<int>(d)));
    IL_ASSIGN_OR_RETURN(Tensor t, in->Reshaped(out));
    ctx.SetOutput(0, std::move(t));
    return Status::Ok();
  });
}

KernelResult MakeUnsqueeze(const KernelInfo& info) {
  bool axes_from_input = info.opset() >= 13;
  if (!axes_from_input && !info.has_attr("axes")) return info.Invalid("attribute 'axes' is required in opset < 13");
  std::vector<int64_t> attr_axes = info.GetInts("axes");
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    std::vector<int64_t> axes = attr_axes;
    if (axes_from_input) {
      IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(1));
      if (a->rank() > 1) return ctx.Invalid("axes must be a scalar or 1-D, got rank " + std::to_string(a->rank()));
      IL_ASSIGN_OR_RETURN(axes, ReadInt64s(*a, "axes"));
    }
    const int64_t out_rank = in->rank() + static_cast<int64_t>(axes.size());
    std::vector<char> ins(out_rank, 0);
    for (int64_t a : axes) {
      int64_t n = a;
      if (!NormalizeAxis(n, out_rank)) return ctx.Invalid(AxisError(a, out_rank));
      if (ins[n]) return ctx.Invalid("axis " + std::to_string(a) + " is repeated in axes");
      ins[n] = 1;
    }
    Shape out(out_rank);
    int j = 0;
    for (int64_t d = 0; d < out_rank; ++d) out[d] = ins[d] ? 1 : in->dim(j++);
    IL_ASSIGN_OR_RETURN(Tensor t, in->Reshaped(out));
    ctx.SetOutput(0, std::move(t));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Expand
KernelResult MakeExpand(const KernelInfo&) {
  return MakeKernel([](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* s, ctx.RequireInput(1));
    if (s->rank() != 1) return ctx.Invalid("shape input must be 1-D, got rank " + std::to_string(s->rank()));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInt64s(*s, "shape"));
    for (int64_t d : dims)
      if (d < 0) return ctx.Invalid("shape dimensions must be non-negative, got " + ShapeToString(dims));
    auto bs = BroadcastShapes({in->shape(), dims});
    if (!bs.ok()) return bs.status().WithContext(ctx.node().Describe());
    const Shape& out_shape = *bs;
    if (ShapeElementCount(out_shape) == -2)
      return Status::ResourceExhausted(ctx.node().Describe() + ": output shape " + ShapeToString(out_shape) + " overflows");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in->dtype(), out_shape));
    if (out.size() > 0) {
      const int R = static_cast<int>(out_shape.size());
      const int off = R - in->rank();
      std::vector<int64_t> st = ContiguousStrides(in->shape());
      std::vector<std::vector<int64_t>> maps(R);
      for (int d = 0; d < R; ++d) {
        maps[d].assign(static_cast<size_t>(out_shape[d]), 0);
        int ia = d - off;
        if (ia >= 0 && in->dim(ia) != 1)
          for (int64_t i = 0; i < out_shape[d]; ++i) maps[d][i] = i * st[ia];
      }
      IL_RETURN_IF_ERROR(AxisMapGatherAny(*in, out, maps, nullptr));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Range
KernelResult MakeRange(const KernelInfo& info) {
  int64_t stash = info.GetInt("stash_type", 1);
  if (info.opset() >= 27 && stash != 1 && stash != 11)
    return info.Invalid("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
  return MakeKernel([stash](KernelContext& ctx) -> Status {
    const Tensor* t[3];
    for (int i = 0; i < 3; ++i) {
      IL_ASSIGN_OR_RETURN(t[i], ctx.RequireInput(i));
      if (t[i]->size() != 1)
        return ctx.Invalid("input " + std::to_string(i) + " must be a scalar, got shape " + ShapeToString(t[i]->shape()));
      if (t[i]->dtype() != t[0]->dtype()) return ctx.Invalid("start, limit and delta must have the same dtype");
    }
    const DataType dt = t[0]->dtype();
    const bool is_int = dt == DataType::kInt16 || dt == DataType::kInt32 || dt == DataType::kInt64 ||
                        dt == DataType::kInt8 || dt == DataType::kUInt8 || dt == DataType::kUInt16 ||
                        dt == DataType::kUInt32 || dt == DataType::kUInt64;
    int64_t n = 0;
    if (is_int) {
      std::vector<int64_t> v[3];
      for (int i = 0; i < 3; ++i) { IL_ASSIGN_OR_RETURN(v[i], ReadInt64s(*t[i], "Range input")); }
      __int128 start = v[0][0], limit = v[1][0], delta = v[2][0];
      if (delta == 0) return ctx.Invalid("delta must not be zero");
      __int128 diff = limit - start;
      __int128 cnt = 0;
      if ((diff > 0 && delta > 0) || (diff < 0 && delta < 0)) {
        __int128 ad = delta > 0 ? delta : -delta, adiff = diff > 0 ? diff : -diff;
        cnt = (adiff + ad - 1) / ad;
      }
      if (cnt > static_cast<__int128>(std::numeric_limits<int64_t>::max()))
        return Status::ResourceExhausted(ctx.node().Describe() + ": the range has too many elements");
      n = static_cast<int64_t>(cnt);
      IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, {n}));
      IL_RETURN_IF_ERROR(DispatchInteger(dt, [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        T* p = out.data<T>();
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<__int128>(i) * delta);
        return Status::Ok();
      }));
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    if (dt != DataType::kFloat && dt != DataType::kDouble && dt != DataType::kFloat16 && dt != DataType::kBFloat16)
      return ctx.Invalid(std::string("unsupported dtype ") + DataTypeName(dt));
    std::vector<double> v[3];
    for (int i = 0; i < 3; ++i) { IL_ASSIGN_OR_RETURN(v[i], ReadDoubles(*t[i], "Range input")); }
    double start = v[0][0], limit = v[1][0], delta = v[2][0];
    if (delta == 0) return ctx.Invalid("delta must not be zero");
    double cnt = std::ceil((limit - start) / delta);
    if (std::isnan(cnt)) return ctx.Invalid("start, limit and delta must not be NaN");
    if (cnt > 4.0e18)
      return Status::ResourceExhausted(ctx.node().Describe() + ": the range has too many elements");
    n = cnt > 0 ? static_cast<int64_t>(cnt) : 0;
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, {n}));
    const bool low = dt == DataType::kFloat16 || dt == DataType::kBFloat16;
    for (int64_t i = 0; i < n; ++i) {
      double x;
      if (low && stash == 1) {
        x = static_cast<float>(start) + static_cast<float>(i) * static_cast<float>(delta);
      } else {
        x = start + static_cast<double>(i) * delta;
      }
      switch (dt) {
        case DataType::kFloat: out.data<float>()[i] = static_cast<float>(x); break;
        case DataType::kDouble: out.data<double>()[i] = x; break;
        case DataType::kFloat16: out.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(x)); break;
        default: out.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(x)); break;
      }
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// EyeLike
KernelResult MakeEyeLike(const KernelInfo& info) {
  int64_t k = info.GetInt("k", 0);
  bool has_dtype = info.has_attr("dtype");
  int64_t dtype_i = info.GetInt("dtype", 0);
  if (has_dtype && (!IsKnownDataType(static_cast<int32_t>(dtype_i)) || dtype_i == static_cast<int64_t>(DataType::kString)))
    return info.Invalid("unsupported dtype " + std::to_string(dtype_i));
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    if (in->rank() != 2) return ctx.Invalid("input must be 2-D, got shape " + ShapeToString(in->shape()));
    DataType dt = has_dtype ? static_cast<DataType>(dtype_i) : in->dtype();
    if (dt == DataType::kString) return ctx.Invalid("EyeLike does not support string outputs");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, in->shape()));
    IL_ASSIGN_OR_RETURN(Tensor one, OneOf(dt));
    const int64_t rows = in->dim(0), cols = in->dim(1);
    IL_RETURN_IF_ERROR(DispatchAny(dt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* p = out.data<T>();
      const T v = one.data<T>()[0];
      if (k > cols || k < -rows) return Status::Ok();
      for (int64_t i = std::max<int64_t>(0, -k); i < rows; ++i) {
        int64_t j = i + k;
        if (j >= cols) break;
        p[i * cols + j] = v;
      }
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Trilu
KernelResult MakeTrilu(const KernelInfo& info) {
  bool upper = info.GetInt("upper", 1) != 0;
  return MakeKernel([upper](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    if (in->rank() < 2) return ctx.Invalid("input must have rank >= 2, got shape " + ShapeToString(in->shape()));
    int64_t k = 0;
    if (const Tensor* kt = ctx.input(1)) {
      if (kt->size() != 1) return ctx.Invalid("k must be a scalar, got shape " + ShapeToString(kt->shape()));
      IL_ASSIGN_OR_RETURN(std::vector<int64_t> kv, ReadInt64s(*kt, "k"));
      k = kv[0];
    }
    const int r = in->rank();
    const int64_t N = in->dim(r - 2), M = in->dim(r - 1);
    k = std::clamp<int64_t>(k, -N - 1, M + 1);
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in->dtype(), in->shape()));
    if (out.size() == 0) {
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    const int64_t batches = in->size() / (N * M);
    IL_RETURN_IF_ERROR(DispatchAny(in->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* src = in->data<T>();
      T* dst = out.data<T>();
      for (int64_t b = 0; b < batches; ++b) {
        for (int64_t i = 0; i < N; ++i) {
          int64_t lo, hi;  // kept columns [lo, hi)
          if (upper) {
            lo = std::clamp<int64_t>(i + k, 0, M);
            hi = M;
          } else {
            lo = 0;
            hi = std::clamp<int64_t>(i + k + 1, 0, M);
          }
          const int64_t row = (b * N + i) * M;
          if (lo < hi) std::copy(src + row + lo, src + row + hi, dst + row + lo);
        }
      }
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// NonZero
Result<std::vector<char>> NonZeroFlags(const Tensor& t) {
  const int64_t n = t.size();
  std::vector<char> f(static_cast<size_t>(n));
  const DataType dt = t.dtype();
  switch (dt) {
    case DataType::kString:
      for (int64_t i = 0; i < n; ++i) f[i] = !t.strings()[i].empty();
      return f;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) f[i] = (t.data<uint16_t>()[i] & 0x7fffu) != 0;
      return f;
    case DataType::kComplex64:
      for (int64_t i = 0; i < n; ++i) f[i] = t.data<float>()[2 * i] != 0 || t.data<float>()[2 * i + 1] != 0;
      return f;
    case DataType::kComplex128:
      for (int64_t i = 0; i < n; ++i) f[i] = t.data<double>()[2 * i] != 0 || t.data<double>()[2 * i + 1] != 0;
      return f;
    case DataType::kBool: case DataType::kInt4: case DataType::kUInt4: case DataType::kInt2: case DataType::kUInt2:
      for (int64_t i = 0; i < n; ++i) f[i] = t.data<uint8_t>()[i] != 0;
      return f;
    default: break;
  }
  if (IsSmallFloat(dt)) {
    for (int64_t i = 0; i < n; ++i) f[i] = SmallFloatToFloat(dt, t.data<uint8_t>()[i]) != 0.0f;
    return f;
  }
  IL_RETURN_IF_ERROR(DispatchNumeric(dt, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) f[i] = p[i] != T(0);
    return Status::Ok();
  }, "NonZero"));
  return f;
}

KernelResult MakeNonZero(const KernelInfo&) {
  return MakeKernel([](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(std::vector<char> flags, NonZeroFlags(*in));
    int64_t nnz = 0;
    for (char c : flags) nnz += c ? 1 : 0;
    const int r = in->rank();
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt64, {r, nnz}));
    int64_t* p = out.data<int64_t>();
    if (r > 0 && nnz > 0) {
      std::vector<int64_t> idx(r, 0);
      int64_t col = 0;
      for (int64_t i = 0; i < in->size(); ++i) {
        if (flags[i]) {
          for (int d = 0; d < r; ++d) p[d * nnz + col] = idx[d];
          ++col;
        }
        for (int d = r - 1; d >= 0; --d) {
          if (++idx[d] < in->dim(d)) break;
          idx[d] = 0;
        }
      }
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// OneHot
KernelResult MakeOneHot(const KernelInfo& info) {
  int64_t axis = info.GetInt("axis", -1);
  return MakeKernel([axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* dep, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(const Tensor* vals, ctx.RequireInput(2));
    if (dep->size() != 1) return ctx.Invalid("depth must have exactly one element, got shape " + ShapeToString(dep->shape()));
    if (vals->size() != 2) return ctx.Invalid("values must have exactly two elements [off, on], got shape " + ShapeToString(vals->shape()));
    IL_ASSIGN_OR_RETURN(std::vector<double> dv, ReadDoubles(*dep, "depth"));
    if (!(dv[0] >= 0) || dv[0] > 9.0e18) return ctx.Invalid("depth must be non-negative, got " + std::to_string(dv[0]));
    const int64_t depth = static_cast<int64_t>(dv[0]);
    IL_ASSIGN_OR_RETURN(std::vector<double> iv, ReadDoubles(*ind, "indices"));
    const int64_t r = ind->rank();
    int64_t a = axis;
    if (a < -(r + 1) || a > r)
      return ctx.Invalid("axis " + std::to_string(axis) + " is out of range for output rank " + std::to_string(r + 1));
    if (a < 0) a += r + 1;
    Shape out_shape = ind->shape();
    out_shape.insert(out_shape.begin() + a, depth);
    if (ShapeElementCount(out_shape) == -2)
      return Status::ResourceExhausted(ctx.node().Describe() + ": output shape overflows");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(vals->dtype(), out_shape));
    const int64_t outer = Product(ind->shape(), 0, a), inner = Product(ind->shape(), a, r);
    IL_RETURN_IF_ERROR(DispatchAny(vals->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* p = out.data<T>();
      const T off = vals->data<T>()[0], on = vals->data<T>()[1];
      std::fill(p, p + out.size(), off);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          double x = iv[o * inner + i];
          if (std::isnan(x) || x >= static_cast<double>(depth) || x < -static_cast<double>(depth)) continue;
          int64_t v = static_cast<int64_t>(x);
          if (v < 0) v += depth;
          if (v < 0 || v >= depth) continue;
          p[(o * depth + v) * inner + i] = on;
        }
      }
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  r.Register("", "Constant", 1, MakeConstant);
  r.Register("", "ConstantOfShape", 9, MakeConstantOfShape);
  r.Register("", "Shape", 1, MakeShape);
  r.Register("", "Size", 1, MakeSize);
  r.Register("", "Reshape", 1, MakeReshape);
  r.Register("", "Flatten", 1, MakeFlatten);
  r.Register("", "Squeeze", 1, MakeSqueeze);
  r.Register("", "Unsqueeze", 1, MakeUnsqueeze);
  r.Register("", "Expand", 8, MakeExpand);
  r.Register("", "Range", 11, MakeRange);
  r.Register("", "EyeLike", 9, MakeEyeLike);
  r.Register("", "Trilu", 14, MakeTrilu);
  r.Register("", "NonZero", 9, MakeNonZero);
  r.Register("", "OneHot", 9, MakeOneHot);
  RegisterShapeMovementKernels(r);
  RegisterShapeIndexKernels(r);
  RegisterShapeMiscKernels(r);
}

}  // namespace inferloop
