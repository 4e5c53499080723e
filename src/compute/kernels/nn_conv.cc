// Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv.
// Conv-like ops lower each (image, group) to im2col over column tiles + a blocked GEMM;
// ConvTranspose is GEMM + col2im; DeformConv samples its columns bilinearly.
#include <cmath>
#include <cstring>
#include <limits>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_kernels.h"
#include "compute/kernels/nn_common.h"

namespace inferloop {
namespace nn {
namespace {

// Per kernel element (row of the column matrix, ignoring channels): kernel offset per
// spatial dim, k_d * dilation_d - pad_begin_d.
std::vector<int64_t> KernelOffsets(const WindowGeom& g) {
  const int nd = g.nd;
  const int64_t kp = g.kernel_size();
  std::vector<int64_t> ofs(static_cast<size_t>(kp * nd));
  std::vector<int64_t> kidx(nd, 0);
  for (int64_t kk = 0; kk < kp; ++kk) {
    for (int d = 0; d < nd; ++d) ofs[kk * nd + d] = kidx[d] * g.dilations[d] - g.pad_begin[d];
    for (int d = nd - 1; d >= 0; --d) {
      if (++kidx[d] < g.kernel[d]) break;
      kidx[d] = 0;
    }
  }
  return ofs;
}

// Walks columns [j0, j1) of a grid `grid` (row-major positions p) for one kernel element with
// offsets `kofs`: target coordinate t_d = p_d * stride_d + kofs_d must lie in [0, target_d).
// Calls f(jt, zeros_before, valid, zeros_after, t_first, t_step) per run along the last axis:
// jt is the tile-relative column of the run, t_first the flat target index of its first valid
// column (when valid > 0) and t_step the flat target step between valid columns.
template <typename F>
void ForEachRun(const std::vector<int64_t>& grid, const std::vector<int64_t>& target, const std::vector<int64_t>& strides,
                const int64_t* kofs, int64_t j0, int64_t j1, F&& f) {
  const int nd = static_cast<int>(grid.size());
  const int64_t L = grid[nd - 1], TL = target[nd - 1], sL = strides[nd - 1], oL = kofs[nd - 1];
  // Valid range of last-axis grid positions: 0 <= p * s + o < TL.
  const int64_t vlo = std::max<int64_t>(0, CeilDiv(-oL, sL));
  const int64_t vhi = std::min<int64_t>(L, std::max<int64_t>(0, CeilDiv(TL - oL, sL)));
  int64_t j = j0;
  while (j < j1) {
    int64_t outer = j / L;
    const int64_t p0 = j % L;
    const int64_t len = std::min(L - p0, j1 - j);
    // Outer axes: target base (flat) or invalid.
    bool ok = true;
    int64_t base = 0, tstride = TL;
    for (int d = nd - 2; d >= 0; --d) {
      const int64_t p = outer % grid[d];
      outer /= grid[d];
      const int64_t t = p * strides[d] + kofs[d];
      if (t < 0 || t >= target[d]) ok = false;
      base += t * tstride;
      tstride *= target[d];
    }
    if (!ok) {
      f(j - j0, len, 0, 0, 0, sL);
    } else {
      const int64_t lo = std::clamp(vlo, p0, p0 + len), hi = std::clamp(vhi, lo, p0 + len);
      f(j - j0, lo - p0, hi - lo, p0 + len - hi, base + lo * sL + oL, sL);
    }
    j += len;
  }
}

// y[N, M, out] (+)= conv(x[N, C, in], w[M, C/group, k]) + bias[M]. T: float, double or int32.
template <typename T>
void ConvForward(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t M, int64_t group,
                 const WindowGeom& g) {
  const int64_t Cg = C / group, Mg = M / group, kp = g.kernel_size();
  const int64_t K = Cg * kp, in_size = g.in_size(), out_size = g.out_size();
  bool identity = true;
  for (int d = 0; d < g.nd; ++d)
    identity = identity && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  const std::vector<int64_t> kofs = KernelOffsets(g);
  const int64_t tile = ColumnTile(K, out_size);
  std::vector<T> col(identity ? 0 : static_cast<size_t>(K * tile));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gr = 0; gr < group; ++gr) {
      T* yg = y + (n * M + gr * Mg) * out_size;
      const T* xg = x + (n * C + gr * Cg) * in_size;
      const T* wg = w + gr * Mg * K;
      for (int64_t m = 0; m < Mg; ++m) std::fill_n(yg + m * out_size, out_size, bias ? bias[gr * Mg + m] : T(0));
      if (identity) {
        GemmAccumulate<T>(Mg, out_size, K, wg, K, 1, xg, in_size, yg, out_size);
        continue;
      }
      for (int64_t j0 = 0; j0 < out_size; j0 += tile) {
        const int64_t j1 = std::min(out_size, j0 + tile), tw = j1 - j0;
        for (int64_t c = 0; c < Cg; ++c) {
          const T* xc = xg + c * in_size;
          for (int64_t kk = 0; kk < kp; ++kk) {
            T* row = col.data() + (c * kp + kk) * tw;
            ForEachRun(g.out, g.in, g.strides, kofs.data() + kk * g.nd, j0, j1,
                       [&](int64_t jt, int64_t z0, int64_t nv, int64_t z1, int64_t t, int64_t st) {
                         T* r = row + jt;
                         std::fill_n(r, z0, T(0));
                         r += z0;
                         if (st == 1) std::memcpy(r, xc + t, sizeof(T) * nv);
                         else
                           for (int64_t i = 0; i < nv; ++i) r[i] = xc[t + i * st];
                         std::fill_n(r + nv, z1, T(0));
                       });
          }
        }
        GemmAccumulate<T>(Mg, tw, K, wg, K, 1, col.data(), tw, yg + j0, out_size);
      }
    }
  }
}

// Checks X/W shapes of Conv-like ops and resolves the geometry; W is [M, C/group, k...].
Result<WindowGeom> ConvGeometry(const KernelContext& ctx, const WindowAttrs& a, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3) return ctx.Invalid("X must have rank >= 3 (N, C, spatial...), got shape " + ShapeToString(x.shape()));
  if (w.rank() != x.rank())
    return ctx.Invalid("W must have the rank of X (" + std::to_string(x.rank()) + "), got shape " + ShapeToString(w.shape()));
  const int64_t C = x.dim(1), M = w.dim(0);
  if (C % a.group != 0)
    return ctx.Invalid("input channels " + std::to_string(C) + " are not divisible by group " + std::to_string(a.group));
  if (w.dim(1) * a.group != C)
    return ctx.Invalid("W expects " + std::to_string(w.dim(1) * a.group) + " input channels (W " + ShapeToString(w.shape()) +
                       ", group " + std::to_string(a.group) + ") but X has " + std::to_string(C));
  if (M % a.group != 0)
    return ctx.Invalid("output channels " + std::to_string(M) + " are not divisible by group " + std::to_string(a.group));
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  if (!a.kernel_shape.empty() && a.kernel_shape != kernel)
    return ctx.Invalid("kernel_shape " + VecToString(a.kernel_shape) + " does not match W's spatial shape " + VecToString(kernel));
  Shape in_spatial(x.shape().begin() + 2, x.shape().end());
  return ResolveWindow(ctx, a, in_spatial, kernel, /*pool_style=*/false);
}

Shape OutShape(int64_t N, int64_t M, const WindowGeom& g) {
  Shape s{N, M};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

Status CheckBias(const KernelContext& ctx, const Tensor* b, int64_t M) {
  if (b && (b->rank() != 1 || b->dim(0) != M))
    return ctx.Invalid("bias B must have shape [" + std::to_string(M) + "], got " + ShapeToString(b->shape()));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Conv

Result<std::unique_ptr<Kernel>> MakeConv(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, false));
  return MakeKernel([a](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* w, ctx.RequireInput(1));
    const Tensor* b = ctx.input(2);
    if (w->dtype() != x->dtype())
      return ctx.Invalid(std::string("W must have X's dtype ") + DataTypeName(x->dtype()) + ", got " + DataTypeName(w->dtype()));
    IL_ASSIGN_OR_RETURN(WindowGeom g, ConvGeometry(ctx, a, *x, *w));
    const int64_t N = x->dim(0), C = x->dim(1), M = w->dim(0);
    IL_RETURN_IF_ERROR(CheckBias(ctx, b, M));
    return DispatchFloatCompute(x->dtype(), "Conv", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor wc, ConvertTo(*w, ct));
      Tensor bc;
      if (b) { IL_ASSIGN_OR_RETURN(bc, ConvertTo(*b, ct)); }
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, OutShape(N, M, g)));
      ConvForward<T>(xc.data<T>(), wc.data<T>(), b ? bc.data<T>() : nullptr, y.data<T>(), N, C, M, a.group, g);
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose

Result<std::unique_ptr<Kernel>> MakeConvTranspose(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, false));
  std::vector<int64_t> output_padding = info.GetInts("output_padding");
  std::vector<int64_t> output_shape = info.GetInts("output_shape");
  for (int64_t p : output_padding)
    if (p < 0) return info.Invalid("output_padding must be non-negative, got " + VecToString(output_padding));
  for (int64_t s : output_shape)
    if (s <= 0) return info.Invalid("output_shape values must be positive, got " + VecToString(output_shape));
  return MakeKernel([a, output_padding, output_shape](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* w, ctx.RequireInput(1));
    const Tensor* b = ctx.input(2);
    if (w->dtype() != x->dtype())
      return ctx.Invalid(std::string("W must have X's dtype ") + DataTypeName(x->dtype()) + ", got " + DataTypeName(w->dtype()));
    if (x->rank() < 3) return ctx.Invalid("X must have rank >= 3 (N, C, spatial...), got shape " + ShapeToString(x->shape()));
    if (w->rank() != x->rank())
      return ctx.Invalid("W must have the rank of X (" + std::to_string(x->rank()) + "), got shape " + ShapeToString(w->shape()));
    const int nd = x->rank() - 2;
    const int64_t N = x->dim(0), C = x->dim(1);
    if (w->dim(0) != C)
      return ctx.Invalid("W's first dim must equal X's channels " + std::to_string(C) + ", got W " + ShapeToString(w->shape()));
    if (C % a.group != 0)
      return ctx.Invalid("input channels " + std::to_string(C) + " are not divisible by group " + std::to_string(a.group));
    const int64_t Mg = w->dim(1), M = Mg * a.group;
    IL_RETURN_IF_ERROR(CheckBias(ctx, b, M));
    std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
    if (!a.kernel_shape.empty() && a.kernel_shape != kernel)
      return ctx.Invalid("kernel_shape " + VecToString(a.kernel_shape) + " does not match W's spatial shape " + VecToString(kernel));
    for (int64_t k : kernel)
      if (k <= 0) return ctx.Invalid("W's spatial dims must be positive, got W " + ShapeToString(w->shape()));
    auto sized = [&](const std::vector<int64_t>& v, size_t n, int64_t def, const char* name, std::vector<int64_t>* out) -> Status {
      if (v.empty()) { out->assign(n, def); return Status::Ok(); }
      if (v.size() != n) return ctx.Invalid(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(n));
      *out = v;
      return Status::Ok();
    };
    WindowGeom g;
    g.nd = nd;
    g.in.assign(x->shape().begin() + 2, x->shape().end());
    g.kernel = kernel;
    std::vector<int64_t> opad, pads;
    IL_RETURN_IF_ERROR(sized(a.strides, nd, 1, "strides", &g.strides));
    IL_RETURN_IF_ERROR(sized(a.dilations, nd, 1, "dilations", &g.dilations));
    IL_RETURN_IF_ERROR(sized(output_padding, nd, 0, "output_padding", &opad));
    IL_RETURN_IF_ERROR(sized(a.pads, 2 * nd, 0, "pads", &pads));
    std::vector<int64_t> oshape;
    if (!output_shape.empty()) {
      if (output_shape.size() == static_cast<size_t>(nd)) oshape = output_shape;
      else if (output_shape.size() == static_cast<size_t>(nd + 2)) oshape.assign(output_shape.begin() + 2, output_shape.end());
      else return ctx.Invalid("output_shape has " + std::to_string(output_shape.size()) + " values, expected " + std::to_string(nd));
    }
    g.pad_begin.assign(nd, 0);
    g.pad_end.assign(nd, 0);
    g.out.assign(nd, 0);
    const bool same = a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower;
    for (int d = 0; d < nd; ++d) {
      const int64_t ek = (kernel[d] - 1) * g.dilations[d] + 1;
      const int64_t full = g.strides[d] * (g.in[d] - 1) + opad[d] + ek;
      if (!oshape.empty() || same) {
        const int64_t out = !oshape.empty() ? oshape[d] : g.in[d] * g.strides[d];
        const int64_t total = full - out;
        // SAME_UPPER puts the extra padding at the end; otherwise at the beginning.
        const int64_t half = FloorDiv(total, 2);
        g.pad_begin[d] = a.auto_pad == AutoPad::kSameUpper ? half : total - half;
        g.pad_end[d] = total - g.pad_begin[d];
        g.out[d] = out;
      } else {
        if (a.auto_pad == AutoPad::kNotSet) {
          g.pad_begin[d] = pads[d];
          g.pad_end[d] = pads[d + nd];
        }
        g.out[d] = full - g.pad_begin[d] - g.pad_end[d];
      }
      if (g.out[d] <= 0)
        return ctx.Invalid("output spatial shape would be empty (input " + ShapeToString(g.in) + ", kernel " + VecToString(kernel) + ")");
    }
    return DispatchFloatCompute(x->dtype(), "ConvTranspose", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor wc, ConvertTo(*w, ct));
      Tensor bc;
      if (b) { IL_ASSIGN_OR_RETURN(bc, ConvertTo(*b, ct)); }
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, OutShape(N, M, g)));
      const T* px = xc.data<T>();
      const T* pw = wc.data<T>();
      T* py = y.data<T>();
      const int64_t Cg = C / a.group, kp = g.kernel_size(), R = Mg * kp;
      const int64_t in_size = g.in_size(), out_size = g.out_size();
      // Offsets map input positions onto output positions: o = i * s + k * dil - pad_begin.
      const std::vector<int64_t> kofs = KernelOffsets(g);
      const int64_t tile = ColumnTile(R, in_size);
      std::vector<T> col(static_cast<size_t>(R * tile));
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t gr = 0; gr < a.group; ++gr) {
          T* yg = py + (n * M + gr * Mg) * out_size;
          const T* xg = px + (n * C + gr * Cg) * in_size;
          const T* wg = pw + gr * Cg * R;
          for (int64_t m = 0; m < Mg; ++m)
            std::fill_n(yg + m * out_size, out_size, b ? bc.data<T>()[gr * Mg + m] : T(0));
          for (int64_t j0 = 0; j0 < in_size; j0 += tile) {
            const int64_t j1 = std::min(in_size, j0 + tile), tw = j1 - j0;
            std::fill(col.begin(), col.begin() + R * tw, T(0));
            GemmAccumulate<T>(R, tw, Cg, wg, 1, R, xg + j0, in_size, col.data(), tw);
            for (int64_t m = 0; m < Mg; ++m) {
              T* ym = yg + m * out_size;
              for (int64_t kk = 0; kk < kp; ++kk) {
                const T* row = col.data() + (m * kp + kk) * tw;
                ForEachRun(g.in, g.out, g.strides, kofs.data() + kk * nd, j0, j1,
                           [&](int64_t jt, int64_t z0, int64_t nv, int64_t, int64_t t, int64_t st) {
                             const T* r = row + jt + z0;
                             for (int64_t i = 0; i < nv; ++i) ym[t + i * st] += r[i];
                           });
              }
            }
          }
        }
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

// ---------------------------------------------------------------------------------------------
// ConvInteger and QLinearConv: int32 convolution of zero-point-shifted 8-bit tensors.

bool Is8Bit(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

int32_t Read8(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? static_cast<int32_t>(t.data<int8_t>()[i]) : static_cast<int32_t>(t.data<uint8_t>()[i]);
}

// A zero point: scalar (or 1-element) of `like`'s 8-bit dtype, or (per_channel > 0) [per_channel].
// Fills `zp` with 1 or per_channel values; absent input gives {0}.
Status ReadZeroPoint(const KernelContext& ctx, const Tensor* t, DataType like, int64_t per_channel, const char* name,
                     std::vector<int32_t>* zp) {
  zp->assign(1, 0);
  if (!t) return Status::Ok();
  if (t->dtype() != like)
    return ctx.Invalid(std::string(name) + " must have dtype " + DataTypeName(like) + ", got " + DataTypeName(t->dtype()));
  if (t->size() == 1) {
    (*zp)[0] = Read8(*t, 0);
    return Status::Ok();
  }
  if (per_channel > 0 && t->rank() == 1 && t->dim(0) == per_channel) {
    zp->resize(per_channel);
    for (int64_t i = 0; i < per_channel; ++i) (*zp)[i] = Read8(*t, i);
    return Status::Ok();
  }
  return ctx.Invalid(std::string(name) + " must be a scalar" + (per_channel > 0 ? " or have shape [" + std::to_string(per_channel) + "]" : std::string()) +
                     ", got shape " + ShapeToString(t->shape()));
}

// int32 Y = conv(X - x_zp, W - w_zp) (+ bias). w_zp may be per output channel.
Status IntegerConv(KernelContext& ctx, const WindowAttrs& a, const Tensor& x, const Tensor& w, const std::vector<int32_t>& xzp,
                   const std::vector<int32_t>& wzp, const int32_t* bias, Tensor* y_out, WindowGeom* geom) {
  IL_ASSIGN_OR_RETURN(WindowGeom g, ConvGeometry(ctx, a, x, w));
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0);
  IL_ASSIGN_OR_RETURN(Tensor xi, ctx.Allocate(DataType::kInt32, x.shape()));
  IL_ASSIGN_OR_RETURN(Tensor wi, ctx.Allocate(DataType::kInt32, w.shape()));
  int32_t* pxi = xi.data<int32_t>();
  for (int64_t i = 0; i < x.size(); ++i) pxi[i] = Read8(x, i) - xzp[0];
  int32_t* pwi = wi.data<int32_t>();
  const int64_t per_m = M > 0 ? w.size() / M : 0;
  for (int64_t i = 0; i < w.size(); ++i) pwi[i] = Read8(w, i) - wzp[wzp.size() == 1 ? 0 : i / per_m];
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(DataType::kInt32, OutShape(N, M, g)));
  ConvForward<int32_t>(pxi, pwi, bias, y.data<int32_t>(), N, C, M, a.group, g);
  *y_out = std::move(y);
  *geom = std::move(g);
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeConvInteger(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, false));
  return MakeKernel([a](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* w, ctx.RequireInput(1));
    if (!Is8Bit(x->dtype())) return UnsupportedType("ConvInteger input X", x->dtype());
    if (!Is8Bit(w->dtype())) return UnsupportedType("ConvInteger input W", w->dtype());
    if (w->rank() < 1) return ctx.Invalid("W must have rank >= 3, got shape " + ShapeToString(w->shape()));
    std::vector<int32_t> xzp, wzp;
    IL_RETURN_IF_ERROR(ReadZeroPoint(ctx, ctx.input(2), x->dtype(), 0, "x_zero_point", &xzp));
    IL_RETURN_IF_ERROR(ReadZeroPoint(ctx, ctx.input(3), w->dtype(), w->dim(0), "w_zero_point", &wzp));
    Tensor y;
    WindowGeom g;
    IL_RETURN_IF_ERROR(IntegerConv(ctx, a, *x, *w, xzp, wzp, nullptr, &y, &g));
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  });
}

// A positive float scale: scalar, or (per_channel > 0) [per_channel].
Status ReadScale(const KernelContext& ctx, const Tensor* t, int64_t per_channel, const char* name, std::vector<float>* out) {
  if (!t) return ctx.Invalid(std::string("required input ") + name + " is missing");
  if (t->dtype() != DataType::kFloat && t->dtype() != DataType::kFloat16 && t->dtype() != DataType::kBFloat16 &&
      t->dtype() != DataType::kDouble)
    return ctx.Invalid(std::string(name) + " must be a float tensor, got " + DataTypeName(t->dtype()));
  const bool ok = t->size() == 1 || (per_channel > 0 && t->rank() == 1 && t->dim(0) == per_channel);
  if (!ok)
    return ctx.Invalid(std::string(name) + " must be a scalar" + (per_channel > 0 ? " or have shape [" + std::to_string(per_channel) + "]" : std::string()) +
                       ", got shape " + ShapeToString(t->shape()));
  IL_ASSIGN_OR_RETURN(Tensor f, ConvertTo(*t, DataType::kFloat));
  out->assign(f.data<float>(), f.data<float>() + f.size());
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeQLinearConv(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, false));
  return MakeKernel([a](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* w, ctx.RequireInput(3));
    if (!Is8Bit(x->dtype())) return UnsupportedType("QLinearConv input x", x->dtype());
    if (!Is8Bit(w->dtype())) return UnsupportedType("QLinearConv input w", w->dtype());
    if (w->rank() < 1) return ctx.Invalid("w must have rank >= 3, got shape " + ShapeToString(w->shape()));
    const int64_t M = w->dim(0);
    std::vector<float> xs, ws, ys;
    IL_RETURN_IF_ERROR(ReadScale(ctx, ctx.input(1), 0, "x_scale", &xs));
    IL_RETURN_IF_ERROR(ReadScale(ctx, ctx.input(4), M, "w_scale", &ws));
    IL_RETURN_IF_ERROR(ReadScale(ctx, ctx.input(6), 0, "y_scale", &ys));
    const Tensor* yzp_t = ctx.input(7);
    const DataType out_type = yzp_t ? yzp_t->dtype() : x->dtype();
    if (!Is8Bit(out_type)) return UnsupportedType("QLinearConv output", out_type);
    std::vector<int32_t> xzp, wzp, yzp;
    IL_RETURN_IF_ERROR(ReadZeroPoint(ctx, ctx.input(2), x->dtype(), 0, "x_zero_point", &xzp));
    IL_RETURN_IF_ERROR(ReadZeroPoint(ctx, ctx.input(5), w->dtype(), M, "w_zero_point", &wzp));
    IL_RETURN_IF_ERROR(ReadZeroPoint(ctx, yzp_t, out_type, 0, "y_zero_point", &yzp));
    const Tensor* b = ctx.input(8);
    if (b) {
      if (b->dtype() != DataType::kInt32) return ctx.Invalid(std::string("B must be int32, got ") + DataTypeName(b->dtype()));
      IL_RETURN_IF_ERROR(CheckBias(ctx, b, M));
    }
    Tensor acc;
    WindowGeom g;
    IL_RETURN_IF_ERROR(IntegerConv(ctx, a, *x, *w, xzp, wzp, b ? b->data<int32_t>() : nullptr, &acc, &g));
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(out_type, acc.shape()));
    const int64_t out_size = g.out_size(), N = acc.dim(0);
    const double lo = out_type == DataType::kInt8 ? -128.0 : 0.0, hi = out_type == DataType::kInt8 ? 127.0 : 255.0;
    const int32_t* pa = acc.data<int32_t>();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t m = 0; m < M; ++m) {
        const float mult = xs[0] * ws[ws.size() == 1 ? 0 : m] / ys[0];
        const int64_t base = (n * M + m) * out_size;
        for (int64_t j = 0; j < out_size; ++j) {
          double v = std::nearbyint(static_cast<double>(pa[base + j]) * static_cast<double>(mult)) + yzp[0];
          v = std::clamp(v, lo, hi);
          if (out_type == DataType::kInt8) y.data<int8_t>()[base + j] = static_cast<int8_t>(v);
          else y.data<uint8_t>()[base + j] = static_cast<uint8_t>(v);
        }
      }
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// DeformConv: columns are sampled at kernel positions shifted by learned offsets
// (multilinear interpolation, zero outside), optionally scaled by a mask.

template <typename T>
T SampleLinear(const T* img, const std::vector<int64_t>& in, const T* pos, int nd) {
  int64_t lo[8];
  T frac[8];
  for (int d = 0; d < nd; ++d) {
    const T f = std::floor(pos[d]);
    if (!(f > T(-2) && f < static_cast<T>(in[d]))) return T(0);  // all corners outside (or NaN)
    lo[d] = static_cast<int64_t>(f);
    frac[d] = pos[d] - f;
  }
  T acc = 0;
  for (int corner = 0; corner < (1 << nd); ++corner) {
    T wgt = 1;
    int64_t idx = 0;
    bool ok = true;
    for (int d = 0; d < nd; ++d) {
      const int bit = (corner >> (nd - 1 - d)) & 1;
      const int64_t c = lo[d] + bit;
      if (c < 0 || c >= in[d]) { ok = false; break; }
      wgt *= bit ? frac[d] : T(1) - frac[d];
      idx = idx * in[d] + c;
    }
    if (ok && wgt != T(0)) acc += wgt * img[idx];
  }
  return acc;
}

Result<std::unique_ptr<Kernel>> MakeDeformConv(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, false));
  const int64_t offset_group = info.GetInt("offset_group", 1);
  if (offset_group <= 0) return info.Invalid("offset_group must be positive, got " + std::to_string(offset_group));
  a.auto_pad = AutoPad::kNotSet;
  return MakeKernel([a, offset_group](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* w, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(const Tensor* off, ctx.RequireInput(2));
    const Tensor* b = ctx.input(3);
    const Tensor* mask = ctx.input(4);
    if (w->dtype() != x->dtype() || off->dtype() != x->dtype())
      return ctx.Invalid(std::string("W and offset must have X's dtype ") + DataTypeName(x->dtype()));
    IL_ASSIGN_OR_RETURN(WindowGeom g, ConvGeometry(ctx, a, *x, *w));
    const int nd = g.nd;
    if (nd > 8) return Status::Unimplemented("DeformConv supports at most 8 spatial axes");
    const int64_t N = x->dim(0), C = x->dim(1), M = w->dim(0), kp = g.kernel_size();
    IL_RETURN_IF_ERROR(CheckBias(ctx, b, M));
    if (C % offset_group != 0)
      return ctx.Invalid("input channels " + std::to_string(C) + " are not divisible by offset_group " + std::to_string(offset_group));
    Shape want_off{N, offset_group * kp * nd};
    want_off.insert(want_off.end(), g.out.begin(), g.out.end());
    if (off->shape() != want_off)
      return ctx.Invalid("offset must have shape " + ShapeToString(want_off) + ", got " + ShapeToString(off->shape()));
    Shape want_mask{N, offset_group * kp};
    want_mask.insert(want_mask.end(), g.out.begin(), g.out.end());
    if (mask && mask->shape() != want_mask)
      return ctx.Invalid("mask must have shape " + ShapeToString(want_mask) + ", got " + ShapeToString(mask->shape()));
    return DispatchFloatCompute(x->dtype(), "DeformConv", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor wc, ConvertTo(*w, ct));
      IL_ASSIGN_OR_RETURN(Tensor oc, ConvertTo(*off, ct));
      Tensor bc, mc;
      if (b) { IL_ASSIGN_OR_RETURN(bc, ConvertTo(*b, ct)); }
      if (mask) { IL_ASSIGN_OR_RETURN(mc, ConvertTo(*mask, ct)); }
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, OutShape(N, M, g)));
      const T* px = xc.data<T>();
      const T* pw = wc.data<T>();
      const T* po = oc.data<T>();
      const T* pm = mask ? mc.data<T>() : nullptr;
      T* py = y.data<T>();
      const int64_t Cg = C / a.group, Mg = M / a.group, K = Cg * kp, in_size = g.in_size(), out_size = g.out_size();
      const int64_t c_per_og = C / offset_group;
      const std::vector<int64_t> kofs = KernelOffsets(g);
      const int64_t tile = ColumnTile(K, out_size);
      std::vector<T> col(static_cast<size_t>(K * tile));
      std::vector<T> pos(nd);
      std::vector<int64_t> oidx(nd);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t gr = 0; gr < a.group; ++gr) {
          T* yg = py + (n * M + gr * Mg) * out_size;
          for (int64_t m = 0; m < Mg; ++m)
            std::fill_n(yg + m * out_size, out_size, b ? bc.data<T>()[gr * Mg + m] : T(0));
          for (int64_t j0 = 0; j0 < out_size; j0 += tile) {
            const int64_t j1 = std::min(out_size, j0 + tile), tw = j1 - j0;
            for (int64_t cl = 0; cl < Cg; ++cl) {
              const int64_t c = gr * Cg + cl, og = c / c_per_og;
              const T* img = px + (n * C + c) * in_size;
              const T* og_off = po + (n * offset_group + og) * kp * nd * out_size;
              const T* og_mask = pm ? pm + (n * offset_group + og) * kp * out_size : nullptr;
              for (int64_t kk = 0; kk < kp; ++kk) {
                T* row = col.data() + (cl * kp + kk) * tw;
                for (int64_t j = j0; j < j1; ++j) {
                  int64_t rem = j;
                  for (int d = nd - 1; d >= 0; --d) {
                    oidx[d] = rem % g.out[d];
                    rem /= g.out[d];
                  }
                  for (int d = 0; d < nd; ++d)
                    pos[d] = static_cast<T>(oidx[d] * g.strides[d] + kofs[kk * nd + d]) + og_off[(kk * nd + d) * out_size + j];
                  T v = SampleLinear<T>(img, g.in, pos.data(), nd);
                  if (og_mask) v *= og_mask[kk * out_size + j];
                  row[j - j0] = v;
                }
              }
            }
            GemmAccumulate<T>(Mg, tw, K, pw + gr * Mg * K, K, 1, col.data(), tw, yg + j0, out_size);
          }
        }
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  // float32 runs on oneDNN (dnnl_conv.cc); the scalar kernel keeps the rest.
  r.Register("", "Conv", 1, [](const KernelInfo& i) { return dnnl_kernels::MakeConv(i, MakeConv); });
  r.Register("com.inferloop", "FusedConv", 1, [](const KernelInfo& i) { return dnnl_kernels::MakeFusedConv(i, MakeConv); });
  r.Register("com.inferloop", "ReorderToNchwc", 1, dnnl_kernels::MakeReorderToNchwc);
  r.Register("com.inferloop", "ReorderFromNchwc", 1, dnnl_kernels::MakeReorderFromNchwc);
  r.Register("", "ConvTranspose", 1, [](const KernelInfo& i) { return dnnl_kernels::MakeConvTranspose(i, MakeConvTranspose); });
  r.Register("", "ConvInteger", 10, MakeConvInteger);
  r.Register("", "QLinearConv", 10, MakeQLinearConv);
  r.Register("", "DeformConv", 19, MakeDeformConv);
}

}  // namespace nn
}  // namespace inferloop
