// Registration of the quantize kernel family: QuantizeLinear and DequantizeLinear (opsets
// 10..25: per-tensor, per-axis and blocked scales; integer, float8 and float4 quantized types)
// and DynamicQuantizeLinear (11).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/simd/quantize_linear.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

bool IsIntQuantType(DataType t) {
  switch (t) {
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt16: case DataType::kUInt16:
    case DataType::kInt4: case DataType::kUInt4: case DataType::kInt2: case DataType::kUInt2:
      return true;
    default: return false;
  }
}

bool IsFloat8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ || t == DataType::kFloat8E5M2 ||
         t == DataType::kFloat8E5M2FNUZ;
}

bool IsQuantType(DataType t) { return IsIntQuantType(t) || IsFloat8(t) || t == DataType::kFloat4E2M1; }

void IntRange(DataType t, double* lo, double* hi) {
  switch (t) {
    case DataType::kInt8: *lo = -128; *hi = 127; break;
    case DataType::kUInt8: *lo = 0; *hi = 255; break;
    case DataType::kInt16: *lo = -32768; *hi = 32767; break;
    case DataType::kUInt16: *lo = 0; *hi = 65535; break;
    case DataType::kInt4: *lo = -8; *hi = 7; break;
    case DataType::kUInt4: *lo = 0; *hi = 15; break;
    case DataType::kInt2: *lo = -2; *hi = 1; break;
    case DataType::kUInt2: *lo = 0; *hi = 3; break;
    default: *lo = 0; *hi = 0;
  }
}

// Reads element i of a numeric tensor of any dtype as a double.
class Reader {
 public:
  explicit Reader(const Tensor& t) : t_(t) {}
  double operator()(int64_t i) const {
    const void* p = t_.raw_data();
    switch (t_.dtype()) {
      case DataType::kFloat: return static_cast<const float*>(p)[i];
      case DataType::kDouble: return static_cast<const double*>(p)[i];
      case DataType::kFloat16: return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
      case DataType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(p)[i]);
      case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: return static_cast<const int8_t*>(p)[i];
      case DataType::kUInt8: case DataType::kUInt4: case DataType::kUInt2: return static_cast<const uint8_t*>(p)[i];
      case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
      case DataType::kUInt16: return static_cast<const uint16_t*>(p)[i];
      case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
      case DataType::kUInt32: return static_cast<const uint32_t*>(p)[i];
      case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
      case DataType::kUInt64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
      default: return SmallFloatToFloat(t_.dtype(), static_cast<const uint8_t*>(p)[i]);
    }
  }

 private:
  const Tensor& t_;
};

// Calls f(read) with read(i) -> double, specialised for x's dtype (the element loops below are
// hot for large weight tensors). Small float types decode through a 256-entry table.
template <typename F>
void WithReader(const Tensor& t, F&& f) {
  switch (t.dtype()) {
    case DataType::kFloat: { const float* p = t.data<float>(); f([p](int64_t i) { return static_cast<double>(p[i]); }); return; }
    case DataType::kDouble: { const double* p = t.data<double>(); f([p](int64_t i) { return p[i]; }); return; }
    case DataType::kFloat16: { const uint16_t* p = t.data<uint16_t>(); f([p](int64_t i) { return static_cast<double>(HalfToFloat(p[i])); }); return; }
    case DataType::kBFloat16: { const uint16_t* p = t.data<uint16_t>(); f([p](int64_t i) { return static_cast<double>(BFloat16ToFloat(p[i])); }); return; }
    case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: { const int8_t* p = t.data<int8_t>(); f([p](int64_t i) { return static_cast<double>(p[i]); }); return; }
    case DataType::kUInt8: case DataType::kUInt4: case DataType::kUInt2: { const uint8_t* p = t.data<uint8_t>(); f([p](int64_t i) { return static_cast<double>(p[i]); }); return; }
    case DataType::kInt16: { const int16_t* p = t.data<int16_t>(); f([p](int64_t i) { return static_cast<double>(p[i]); }); return; }
    case DataType::kUInt16: { const uint16_t* p = t.data<uint16_t>(); f([p](int64_t i) { return static_cast<double>(p[i]); }); return; }
    case DataType::kInt32: { const int32_t* p = t.data<int32_t>(); f([p](int64_t i) { return static_cast<double>(p[i]); }); return; }
    default: {
      Reader r(t);
      if (IsSmallFloat(t.dtype())) {
        double table[256];
        for (int c = 0; c < 256; ++c) table[c] = SmallFloatToFloat(t.dtype(), static_cast<uint8_t>(c));
        const uint8_t* p = t.data<uint8_t>();
        const double* tab = table;
        f([p, tab](int64_t i) { return tab[p[i]]; });
        return;
      }
      f([&r](int64_t i) { return r(i); });
    }
  }
}

// Rounds a double to the precision of `t` (float, float16, bfloat16; double unchanged).
double RoundTo(DataType t, double v) {
  switch (t) {
    case DataType::kFloat: return static_cast<float>(v);
    case DataType::kFloat16: return HalfToFloat(DoubleToHalf(v));
    case DataType::kBFloat16: return BFloat16ToFloat(DoubleToBFloat16(v));
    default: return v;
  }
}

// How scale / zero-point elements map onto x's elements.
struct Granularity {
  enum Mode { kTensor, kAxis, kBlocked } mode = kTensor;
  int64_t outer = 1, dim = 1, inner = 1, block = 1, scale_dim = 1;
};

// Checks the scale's shape against x's (and the zero point's against the scale's).
Result<Granularity> ResolveGranularity(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor* zp,
                                       int64_t axis, int64_t block_size) {
  Granularity g;
  // (A one-element zero point may accompany a scalar scale and vice versa, as in ONNX's tests.)
  if (zp && zp->shape() != scale.shape() && !(zp->size() == 1 && scale.size() == 1))
    return ctx.Invalid("zero point shape " + ShapeToString(zp->shape()) + " must equal the scale's shape " +
                       ShapeToString(scale.shape()));
  if (scale.size() == 1 && (scale.rank() <= 1 || block_size <= 0)) return g;  // per tensor
  if (scale.size() == 0) return ctx.Invalid("scale is empty");
  const int r = x.rank();
  if (axis < -r || axis >= r)
    return ctx.Invalid("axis " + std::to_string(axis) + " is out of range for input of rank " + std::to_string(r));
  if (axis < 0) axis += r;
  for (int d = 0; d < axis; ++d) g.outer *= x.dim(d);
  g.dim = x.dim(static_cast<int>(axis));
  for (int d = static_cast<int>(axis) + 1; d < r; ++d) g.inner *= x.dim(d);
  if (block_size <= 0) {
    if (scale.rank() != 1 || scale.dim(0) != g.dim)
      return ctx.Invalid("per-axis scale must be 1-D of length " + std::to_string(g.dim) + " (input dim " +
                         std::to_string(axis) + "), got shape " + ShapeToString(scale.shape()));
    g.mode = Granularity::kAxis;
    return g;
  }
  // Blocked: same shape as x except along axis, where it holds ceil(dim / block_size) blocks.
  bool ok = scale.rank() == r;
  for (int d = 0; ok && d < r; ++d)
    if (d != axis && scale.dim(d) != x.dim(d)) ok = false;
  if (ok) {
    const int64_t s = scale.dim(static_cast<int>(axis));
    ok = s == (g.dim + block_size - 1) / block_size;
  }
  if (!ok)
    return ctx.Invalid("blocked scale shape " + ShapeToString(scale.shape()) + " does not match input shape " +
                       ShapeToString(x.shape()) + " with axis " + std::to_string(axis) + " and block_size " +
                       std::to_string(block_size));
  g.mode = Granularity::kBlocked;
  g.block = block_size;
  g.scale_dim = scale.dim(static_cast<int>(axis));
  return g;
}

// Calls f(element index, scale index) for every element of x.
template <typename F>
void ForEachScaled(const Granularity& g, int64_t n, F f) {
  if (g.mode == Granularity::kTensor) {
    for (int64_t i = 0; i < n; ++i) f(i, 0);
    return;
  }
  int64_t i = 0;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t a = 0; a < g.dim; ++a) {
      const int64_t srow = g.mode == Granularity::kAxis ? a : o * g.scale_dim + a / g.block;
      if (g.mode == Granularity::kAxis) {
        for (int64_t k = 0; k < g.inner; ++k) f(i++, srow);
      } else {
        for (int64_t k = 0; k < g.inner; ++k) f(i++, srow * g.inner + k);
      }
    }
}

bool IsFloatInput(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

bool IsScaleType(DataType t) { return IsFloatInput(t) || t == DataType::kInt32 || t == DataType::kFloat8E8M0; }

struct QuantizeAttrs {
  int64_t axis = 1;
  int64_t block_size = 0;
  bool saturate = true;
  DataType output_dtype = DataType::kUndefined;
  DataType precision = DataType::kUndefined;
};

Status RunQuantize(KernelContext& ctx, const QuantizeAttrs& a) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* scale, ctx.RequireInput(1));
  const Tensor* zp = ctx.input(2);
  if (!IsFloatInput(x->dtype()) && x->dtype() != DataType::kInt32)
    return ctx.Invalid(std::string("input x must be float, float16, bfloat16 or int32, got ") + DataTypeName(x->dtype()));
  if (!IsScaleType(scale->dtype()))
    return ctx.Invalid(std::string("y_scale must be a float type or int32, got ") + DataTypeName(scale->dtype()));
  DataType out_type = a.output_dtype != DataType::kUndefined ? a.output_dtype : DataType::kUInt8;
  if (zp) {
    if (a.output_dtype != DataType::kUndefined && zp->dtype() != a.output_dtype)
      return ctx.Invalid(std::string("output_dtype ") + DataTypeName(a.output_dtype) + " differs from y_zero_point's type " +
                         DataTypeName(zp->dtype()));
    out_type = zp->dtype();
  }
  if (!IsQuantType(out_type)) return ctx.Invalid(std::string("unsupported quantized type ") + DataTypeName(out_type));
  IL_ASSIGN_OR_RETURN(Granularity g, ResolveGranularity(ctx, *x, *scale, zp, a.axis, a.block_size));
  DataType precision = a.precision;
  if (precision == DataType::kUndefined)
    precision = IsFloatInput(scale->dtype()) ? scale->dtype() : DataType::kFloat;  // int32 / e8m0 scales: float
  if (x->dtype() == DataType::kFloat && scale->dtype() == DataType::kFloat && scale->size() == 1 &&
      precision == DataType::kFloat && (out_type == DataType::kUInt8 || out_type == DataType::kInt8) &&
      (!zp || zp->size() == 1)) {  // per-tensor float32 -> 8 bits: the vectorized path
    const float s = scale->data<float>()[0];
    const int32_t z = !zp ? 0 : out_type == DataType::kUInt8 ? zp->data<uint8_t>()[0] : zp->data<int8_t>()[0];
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(out_type, x->shape()));
    const float* px = x->data<float>();
    ParallelFor(ctx.thread_pool(), x->size(), 1 << 16, [&](int64_t b, int64_t e) {
      if (out_type == DataType::kUInt8) simd::QuantizeToU8(px + b, y.data<uint8_t>() + b, e - b, s, z);
      else simd::QuantizeToS8(px + b, y.data<int8_t>() + b, e - b, s, z);
    });
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(out_type, x->shape()));
  Reader rs(*scale);
  std::vector<double> scales(static_cast<size_t>(scale->size()));
  for (int64_t k = 0; k < scale->size(); ++k) scales[k] = RoundTo(precision, rs(k));
  // Without a zero point every scale index reads 0: size the table like the scales.
  std::vector<double> zps(static_cast<size_t>(zp ? zp->size() : std::max<int64_t>(scale->size(), 1)), 0.0);
  if (zp) {
    Reader rz(*zp);
    for (int64_t k = 0; k < zp->size(); ++k) zps[k] = rz(k);
  }
  const bool saturate = a.saturate;
  const int64_t n = x->size();
  // Quotient x / scale, in the division's precision.
  auto quotient = [&](double xv, int64_t s) { return RoundTo(precision, RoundTo(precision, xv) / scales[s]); };
  if (IsIntQuantType(out_type)) {
    double lo = 0, hi = 0;
    IntRange(out_type, &lo, &hi);
    // Round half to even, add the zero point, saturate.
    auto integer = [&](double q, int64_t s) {
      double v = std::nearbyint(q) + zps[s];
      if (std::isnan(v)) v = zps[s];
      return std::clamp(v, lo, hi);
    };
    WithReader(*x, [&](auto rx) {
      switch (out_type) {
        case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: {
          int8_t* py = y.data<int8_t>();
          ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = static_cast<int8_t>(integer(quotient(rx(i), s), s)); });
          break;
        }
        case DataType::kUInt8: case DataType::kUInt4: case DataType::kUInt2: {
          uint8_t* py = y.data<uint8_t>();
          ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = static_cast<uint8_t>(integer(quotient(rx(i), s), s)); });
          break;
        }
        case DataType::kInt16: {
          int16_t* py = y.data<int16_t>();
          ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = static_cast<int16_t>(integer(quotient(rx(i), s), s)); });
          break;
        }
        default: {
          uint16_t* py = y.data<uint16_t>();
          ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = static_cast<uint16_t>(integer(quotient(rx(i), s), s)); });
          break;
        }
      }
    });
  } else {
    // Float targets: like ONNX's reference, a zero zero-point is not added for float8 (so -0
    // stays -0); float4e2m1 always adds it.
    const bool add_zp_always = out_type == DataType::kFloat4E2M1;
    uint8_t* py = y.data<uint8_t>();
    WithReader(*x, [&](auto rx) {
      ForEachScaled(g, n, [&](int64_t i, int64_t s) {
        const double q = quotient(rx(i), s);
        const double v = (add_zp_always || zps[s] != 0.0) ? q + zps[s] : q;
        py[i] = DoubleToSmallFloat(out_type, v, saturate);
      });
    });
  }
  ctx.SetOutput(0, std::move(y));
  return Status::Ok();
}

bool IsDequantInput(DataType t) { return IsQuantType(t) || t == DataType::kInt32; }

Status RunDequantize(KernelContext& ctx, int64_t axis, int64_t block_size, DataType output_dtype) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* scale, ctx.RequireInput(1));
  const Tensor* zp = ctx.input(2);
  if (!IsDequantInput(x->dtype())) return ctx.Invalid(std::string("unsupported quantized input type ") + DataTypeName(x->dtype()));
  if (!IsFloatInput(scale->dtype()) && scale->dtype() != DataType::kFloat8E8M0)
    return ctx.Invalid(std::string("x_scale must be float, float16, bfloat16 or float8e8m0, got ") + DataTypeName(scale->dtype()));
  if (zp && zp->dtype() != x->dtype())
    return ctx.Invalid(std::string("x_zero_point type ") + DataTypeName(zp->dtype()) + " must equal x's type " +
                       DataTypeName(x->dtype()));
  DataType out_type = output_dtype;
  if (out_type == DataType::kUndefined) out_type = IsFloatInput(scale->dtype()) ? scale->dtype() : DataType::kFloat;
  IL_ASSIGN_OR_RETURN(Granularity g, ResolveGranularity(ctx, *x, *scale, zp, axis, block_size));
  if ((x->dtype() == DataType::kUInt8 || x->dtype() == DataType::kInt8) && scale->dtype() == DataType::kFloat &&
      scale->size() == 1 && out_type == DataType::kFloat && (!zp || zp->size() == 1)) {  // the vectorized path
    const float s = scale->data<float>()[0];
    const int32_t z = !zp ? 0 : x->dtype() == DataType::kUInt8 ? zp->data<uint8_t>()[0] : zp->data<int8_t>()[0];
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, x->shape()));
    float* py = y.data<float>();
    ParallelFor(ctx.thread_pool(), x->size(), 1 << 16, [&](int64_t b, int64_t e) {
      if (x->dtype() == DataType::kUInt8) simd::DequantizeU8(x->data<uint8_t>() + b, py + b, e - b, s, z);
      else simd::DequantizeS8(x->data<int8_t>() + b, py + b, e - b, s, z);
    });
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(out_type, x->shape()));
  Reader rs(*scale);
  std::vector<double> scales(static_cast<size_t>(scale->size()));
  for (int64_t k = 0; k < scale->size(); ++k) scales[k] = rs(k);
  // Without a zero point every scale index reads 0: size the table like the scales.
  std::vector<double> zps(static_cast<size_t>(zp ? zp->size() : std::max<int64_t>(scale->size(), 1)), 0.0);
  if (zp) {
    Reader rz(*zp);
    for (int64_t k = 0; k < zp->size(); ++k) zps[k] = rz(k);
  }
  const int64_t n = x->size();
  // The product is exact in double for every quantized type but int32, then rounded once to
  // the output type.
  WithReader(*x, [&](auto rx) {
    auto value = [&](int64_t i, int64_t s) { return (rx(i) - zps[s]) * scales[s]; };
    switch (out_type) {
      case DataType::kFloat: {
        float* py = y.data<float>();
        ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = static_cast<float>(value(i, s)); });
        break;
      }
      case DataType::kDouble: {
        double* py = y.data<double>();
        ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = value(i, s); });
        break;
      }
      case DataType::kFloat16: {
        uint16_t* py = y.data<uint16_t>();
        ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = DoubleToHalf(value(i, s)); });
        break;
      }
      default: {
        uint16_t* py = y.data<uint16_t>();
        ForEachScaled(g, n, [&](int64_t i, int64_t s) { py[i] = DoubleToBFloat16(value(i, s)); });
        break;
      }
    }
  });
  ctx.SetOutput(0, std::move(y));
  return Status::Ok();
}

Result<DataType> ReadDtypeAttr(const KernelInfo& info, const char* name, bool (*allowed)(DataType)) {
  const int64_t v = info.GetInt(name, 0);
  if (v == 0) return DataType::kUndefined;
  if (!IsKnownDataType(static_cast<int32_t>(v)) || v != static_cast<int32_t>(v) || !allowed(static_cast<DataType>(v)))
    return info.Invalid(std::string("attribute '") + name + "' has unsupported data type " + std::to_string(v));
  return static_cast<DataType>(v);
}

Result<std::unique_ptr<Kernel>> MakeQuantize(const KernelInfo& info) {
  QuantizeAttrs a;
  a.axis = info.GetInt("axis", 1);
  a.block_size = info.GetInt("block_size", 0);
  if (a.block_size < 0) return info.Invalid("attribute 'block_size' must be positive, got " + std::to_string(a.block_size));
  const int64_t sat = info.GetInt("saturate", 1);
  if (sat != 0 && sat != 1) return info.Invalid("attribute 'saturate' must be 0 or 1, got " + std::to_string(sat));
  a.saturate = sat != 0;
  IL_ASSIGN_OR_RETURN(a.output_dtype, ReadDtypeAttr(info, "output_dtype", IsQuantType));
  IL_ASSIGN_OR_RETURN(a.precision, ReadDtypeAttr(info, "precision", IsFloatInput));
  return MakeKernel([a](KernelContext& ctx) { return RunQuantize(ctx, a); });
}

Result<std::unique_ptr<Kernel>> MakeDequantize(const KernelInfo& info) {
  const int64_t axis = info.GetInt("axis", 1);
  const int64_t block_size = info.GetInt("block_size", 0);
  if (block_size < 0) return info.Invalid("attribute 'block_size' must be positive, got " + std::to_string(block_size));
  IL_ASSIGN_OR_RETURN(DataType output_dtype, ReadDtypeAttr(info, "output_dtype", IsFloatInput));
  return MakeKernel([axis, block_size, output_dtype](KernelContext& ctx) {
    return RunDequantize(ctx, axis, block_size, output_dtype);
  });
}

// DynamicQuantizeLinear: uint8 asymmetric quantization with the range taken from the data
// (widened to include 0), all arithmetic in float32 like the ONNX reference.
Status RunDynamicQuantize(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  if (x->dtype() != DataType::kFloat) return ctx.Invalid(std::string("input must be float, got ") + DataTypeName(x->dtype()));
  const float* px = x->data<float>();
  const int64_t n = x->size();
  float maxx = 0.0f, minx = 0.0f;
  simd::MinMaxWithZero(px, n, &minx, &maxx);
  const float qmin = 0.0f, qmax = 255.0f;
  const float scale = (maxx == minx ? 1.0f : (maxx - minx)) / (qmax - qmin);
  const float initial_zp = qmin - minx / scale;
  float zp = std::nearbyint(std::clamp(initial_zp, qmin, qmax));
  if (!(zp >= qmin)) zp = qmin;  // NaN when x holds infinities
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(DataType::kUInt8, x->shape()));
  uint8_t* py = y.data<uint8_t>();
  simd::DynamicQuantizeToU8(px, py, n, scale, zp);  // round(x / scale) + zp, clamped to [0, 255], NaN -> 0
  IL_ASSIGN_OR_RETURN(Tensor ys, ctx.Allocate(DataType::kFloat, {}));
  *ys.data<float>() = scale;
  IL_ASSIGN_OR_RETURN(Tensor yz, ctx.Allocate(DataType::kUInt8, {}));
  *yz.data<uint8_t>() = static_cast<uint8_t>(zp);
  ctx.SetOutput(0, std::move(y));
  ctx.SetOutput(1, std::move(ys));
  ctx.SetOutput(2, std::move(yz));
  return Status::Ok();
}

}  // namespace

void RegisterQuantizeKernels(KernelRegistry& r) {
  r.Register("", "QuantizeLinear", 10, MakeQuantize);
  r.Register("", "DequantizeLinear", 10, MakeDequantize);
  r.Register("", "DynamicQuantizeLinear", 11, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel(RunDynamicQuantize);
  });
}

}  // namespace inferloop
