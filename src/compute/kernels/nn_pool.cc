// Pooling: AveragePool, MaxPool (with Indices), LpPool, GlobalAveragePool, GlobalMaxPool,
// GlobalLpPool, MaxUnpool.
#include <cmath>
#include <limits>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/kernels/dnnl_kernels.h"
#include "compute/kernels/nn_common.h"

namespace inferloop {
namespace nn {
namespace {

// Per spatial dim and output coordinate: the window start (input coordinate of kernel element
// 0), the range [klo, khi) of kernel elements that fall inside the input, and how many fall
// inside the input plus its explicit padding (count_include_pad divisor).
struct PoolTables {
  WindowGeom g;
  std::vector<std::vector<int64_t>> start, klo, khi, cnt;
  std::vector<int64_t> in_stride;
};

PoolTables MakeTables(WindowGeom g) {
  PoolTables t;
  const int nd = g.nd;
  t.start.resize(nd);
  t.klo.resize(nd);
  t.khi.resize(nd);
  t.cnt.resize(nd);
  t.in_stride.assign(nd, 1);
  for (int d = nd - 2; d >= 0; --d) t.in_stride[d] = t.in_stride[d + 1] * g.in[d + 1];
  for (int d = 0; d < nd; ++d) {
    const int64_t s = g.strides[d], dil = g.dilations[d], K = g.kernel[d], in = g.in[d];
    for (int64_t o = 0; o < g.out[d]; ++o) {
      const int64_t st = o * s - g.pad_begin[d];
      const int64_t lo = std::clamp<int64_t>(CeilDiv(-st, dil), 0, K);
      const int64_t hi = std::clamp<int64_t>(CeilDiv(in - st, dil), lo, K);
      const int64_t c = std::clamp<int64_t>(CeilDiv(in + g.pad_end[d] - st, dil), 0, K);
      t.start[d].push_back(st);
      t.klo[d].push_back(lo);
      t.khi[d].push_back(hi);
      t.cnt[d].push_back(c);
    }
  }
  t.g = std::move(g);
  return t;
}

// Calls visit(flat_input_index) for each in-bounds element of the window at output coords `o`.
template <typename F>
void ForWindow(const PoolTables& t, const int64_t* o, F&& visit) {
  const int nd = t.g.nd;
  int64_t k[16];
  for (int d = 0; d < nd; ++d) {
    if (t.klo[d][o[d]] >= t.khi[d][o[d]]) return;
    k[d] = t.klo[d][o[d]];
  }
  const int L = nd - 1;
  const int64_t stL = t.start[L][o[L]], dilL = t.g.dilations[L], loL = t.klo[L][o[L]], hiL = t.khi[L][o[L]];
  while (true) {
    int64_t base = 0;
    for (int d = 0; d < L; ++d) base += (t.start[d][o[d]] + k[d] * t.g.dilations[d]) * t.in_stride[d];
    for (int64_t kl = loL; kl < hiL; ++kl) visit(base + stL + kl * dilL);
    int d = L - 1;
    for (; d >= 0; --d) {
      if (++k[d] < t.khi[d][o[d]]) break;
      k[d] = t.klo[d][o[d]];
    }
    if (d < 0) return;
  }
}

// Iterates all output positions of one plane: f(j, o) with j the flat output index.
template <typename F>
void ForOutputs(const WindowGeom& g, F&& f) {
  const int nd = g.nd;
  int64_t o[16] = {0};
  const int64_t n = g.out_size();
  for (int64_t j = 0; j < n; ++j) {
    f(j, o);
    for (int d = nd - 1; d >= 0; --d) {
      if (++o[d] < g.out[d]) break;
      o[d] = 0;
    }
  }
}

Result<PoolTables> PoolSetup(const KernelContext& ctx, const WindowAttrs& a, const Tensor& x) {
  if (x.rank() < 3) return ctx.Invalid("X must have rank >= 3 (N, C, spatial...), got shape " + ShapeToString(x.shape()));
  if (x.rank() - 2 > 16) return Status::Unimplemented("pooling supports at most 16 spatial axes");
  if (static_cast<int>(a.kernel_shape.size()) != x.rank() - 2)
    return ctx.Invalid("kernel_shape has " + std::to_string(a.kernel_shape.size()) + " values but X has " +
                       std::to_string(x.rank() - 2) + " spatial axes (shape " + ShapeToString(x.shape()) + ")");
  Shape in_spatial(x.shape().begin() + 2, x.shape().end());
  IL_ASSIGN_OR_RETURN(WindowGeom g, ResolveWindow(ctx, a, in_spatial, a.kernel_shape, /*pool_style=*/true));
  return MakeTables(std::move(g));
}

Shape PoolOutShape(const Tensor& x, const WindowGeom& g) {
  Shape s{x.dim(0), x.dim(1)};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

// ---------------------------------------------------------------------------------------------
// AveragePool and LpPool

enum class AvgKind { kAverage, kLp };

Result<std::unique_ptr<Kernel>> MakeAvgLpPool(const KernelInfo& info, AvgKind kind) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, true));
  const bool count_include_pad = info.GetInt("count_include_pad", 0) != 0;
  double p = 2;
  if (kind == AvgKind::kLp) {
    const Attribute* pa = info.attr("p");
    if (pa && pa->type == Attribute::Type::kFloat) p = pa->f;  // opset 1
    else if (pa) p = static_cast<double>(info.GetInt("p", 2));
    if (!(p > 0)) return info.Invalid("p must be positive, got " + std::to_string(p));
  }
  const char* name = kind == AvgKind::kLp ? "LpPool" : "AveragePool";
  return MakeKernel([a, count_include_pad, p, kind, name](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    return DispatchFloatCompute(x->dtype(), name, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      IL_ASSIGN_OR_RETURN(PoolTables t, PoolSetup(ctx, a, *x));
      const WindowGeom& g = t.g;
      const DataType ct = ComputeTypeOf(x->dtype());
      IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, PoolOutShape(*x, g)));
      const int64_t planes = x->dim(0) * x->dim(1), in_size = g.in_size(), out_size = g.out_size();
      for (int64_t pl = 0; pl < planes; ++pl) {
        const T* xp = xc.data<T>() + pl * in_size;
        T* yp = y.data<T>() + pl * out_size;
        ForOutputs(g, [&](int64_t j, const int64_t* o) {
          double sum = 0;
          int64_t n = 0;
          if (kind == AvgKind::kAverage) {
            ForWindow(t, o, [&](int64_t i) { sum += xp[i]; ++n; });
            if (count_include_pad) {
              n = 1;
              for (int d = 0; d < g.nd; ++d) n *= t.cnt[d][o[d]];
            }
            yp[j] = static_cast<T>(sum / static_cast<double>(n));
          } else if (p == 2) {
            ForWindow(t, o, [&](int64_t i) { sum += static_cast<double>(xp[i]) * xp[i]; });
            yp[j] = static_cast<T>(std::sqrt(sum));
          } else if (p == 1) {
            ForWindow(t, o, [&](int64_t i) { sum += std::fabs(static_cast<double>(xp[i])); });
            yp[j] = static_cast<T>(sum);
          } else {
            ForWindow(t, o, [&](int64_t i) { sum += std::pow(std::fabs(static_cast<double>(xp[i])), p); });
            yp[j] = static_cast<T>(std::pow(sum, 1.0 / p));
          }
        });
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    });
  });
}

// ---------------------------------------------------------------------------------------------
// MaxPool

template <typename T>
void MaxPoolPlanes(const PoolTables& t, const T* x, T* y, int64_t* ind, int64_t planes, bool col_major) {
  const WindowGeom& g = t.g;
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * in_size;
    T* yp = y + pl * out_size;
    ForOutputs(g, [&](int64_t j, const int64_t* o) {
      int64_t best = -1;
      T bv{};
      ForWindow(t, o, [&](int64_t i) {
        if (best < 0 || xp[i] > bv) {
          bv = xp[i];
          best = i;
        }
      });
      if (best < 0) {
        // Window entirely in padding: lowest value, no index (cannot happen with valid pads).
        yp[j] = std::numeric_limits<T>::lowest();
        if (ind) ind[pl * out_size + j] = -1;
        return;
      }
      yp[j] = bv;
      if (ind) {
        int64_t idx = best;
        if (col_major) {
          int64_t rem = best, mul = 1;
          idx = 0;
          std::vector<int64_t> coord(g.nd);
          for (int d = g.nd - 1; d >= 0; --d) {
            coord[d] = rem % g.in[d];
            rem /= g.in[d];
          }
          for (int d = 0; d < g.nd; ++d) {
            idx += coord[d] * mul;
            mul *= g.in[d];
          }
        }
        ind[pl * out_size + j] = pl * in_size + idx;
      }
    });
  }
}

Result<std::unique_ptr<Kernel>> MakeMaxPool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, true));
  const int64_t storage_order = info.GetInt("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) return info.Invalid("storage_order must be 0 or 1, got " + std::to_string(storage_order));
  return MakeKernel([a, storage_order](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(PoolTables t, PoolSetup(ctx, a, *x));
    const Shape out_shape = PoolOutShape(*x, t.g);
    const int64_t planes = x->dim(0) * x->dim(1);
    const bool want_ind = ctx.num_outputs() > 1 && ctx.output_wanted(1);
    Tensor ind;
    if (want_ind) { IL_ASSIGN_OR_RETURN(ind, ctx.Allocate(DataType::kInt64, out_shape)); }
    int64_t* pind = want_ind ? ind.data<int64_t>() : nullptr;
    auto run = [&](auto tag, const Tensor& xin, DataType want) -> Status {
      using T = typename decltype(tag)::type;
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(xin.dtype(), out_shape));
      MaxPoolPlanes<T>(t, xin.data<T>(), y.data<T>(), pind, planes, storage_order == 1);
      return SetOutputAs(ctx, 0, std::move(y), want);
    };
    Status st;
    switch (x->dtype()) {
      case DataType::kFloat: st = run(TypeTag<float>{}, *x, x->dtype()); break;
      case DataType::kDouble: st = run(TypeTag<double>{}, *x, x->dtype()); break;
      case DataType::kInt8: st = run(TypeTag<int8_t>{}, *x, x->dtype()); break;
      case DataType::kUInt8: st = run(TypeTag<uint8_t>{}, *x, x->dtype()); break;
      case DataType::kFloat16:
      case DataType::kBFloat16: {
        IL_ASSIGN_OR_RETURN(Tensor xf, ConvertTo(*x, DataType::kFloat));
        st = run(TypeTag<float>{}, xf, x->dtype());
        break;
      }
      default: return UnsupportedType("MaxPool", x->dtype());
    }
    IL_RETURN_IF_ERROR(st);
    if (want_ind) ctx.SetOutput(1, std::move(ind));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Global pools

enum class GlobalKind { kAverage, kMax, kLp };

Result<std::unique_ptr<Kernel>> MakeGlobalPool(const KernelInfo& info, GlobalKind kind) {
  double p = 2;
  if (kind == GlobalKind::kLp) {
    const Attribute* pa = info.attr("p");
    if (pa && pa->type == Attribute::Type::kFloat) p = pa->f;
    else if (pa) p = static_cast<double>(info.GetInt("p", 2));
    if (!(p > 0)) return info.Invalid("p must be positive, got " + std::to_string(p));
  }
  const char* name = kind == GlobalKind::kAverage ? "GlobalAveragePool" : kind == GlobalKind::kMax ? "GlobalMaxPool" : "GlobalLpPool";
  return MakeKernel([kind, p, name](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->rank() < 2) return ctx.Invalid("X must have rank >= 2 (N, C, spatial...), got shape " + ShapeToString(x->shape()));
    Shape out_shape{x->dim(0), x->dim(1)};
    for (int d = 2; d < x->rank(); ++d) out_shape.push_back(1);
    const int64_t planes = x->dim(0) * x->dim(1);
    const int64_t spatial = planes > 0 ? x->size() / planes : 0;
    auto run = [&](auto tag, const Tensor& xin) -> Status {
      using T = typename decltype(tag)::type;
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(xin.dtype(), out_shape));
      const T* px = xin.data<T>();
      T* py = y.data<T>();
      for (int64_t pl = 0; pl < planes; ++pl) {
        const T* xp = px + pl * spatial;
        if (kind == GlobalKind::kMax) {
          if (spatial == 0) return ctx.Invalid("GlobalMaxPool of an empty spatial extent");
          T m = xp[0];
          for (int64_t i = 1; i < spatial; ++i)
            if (xp[i] > m) m = xp[i];
          py[pl] = m;
        } else if (kind == GlobalKind::kAverage) {
          double s = 0;
          for (int64_t i = 0; i < spatial; ++i) s += xp[i];
          py[pl] = static_cast<T>(s / static_cast<double>(spatial));
        } else {
          double s = 0;
          for (int64_t i = 0; i < spatial; ++i) s += std::pow(std::fabs(static_cast<double>(xp[i])), p);
          py[pl] = static_cast<T>(std::pow(s, 1.0 / p));
        }
      }
      return SetOutputAs(ctx, 0, std::move(y), x->dtype());
    };
    switch (x->dtype()) {
      case DataType::kFloat: return run(TypeTag<float>{}, *x);
      case DataType::kDouble: return run(TypeTag<double>{}, *x);
      case DataType::kFloat16:
      case DataType::kBFloat16: {
        IL_ASSIGN_OR_RETURN(Tensor xf, ConvertTo(*x, DataType::kFloat));
        return run(TypeTag<float>{}, xf);
      }
      case DataType::kInt8:
        if (kind == GlobalKind::kMax) return run(TypeTag<int8_t>{}, *x);
        break;
      case DataType::kUInt8:
        if (kind == GlobalKind::kMax) return run(TypeTag<uint8_t>{}, *x);
        break;
      default: break;
    }
    return UnsupportedType(name, x->dtype());
  });
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool: scatters X into a zero tensor of the inferred unpooled shape at the flat Indices
// (as MaxPool produced them); with output_shape the result is that tensor zero-extended
// at the end of each spatial axis (the ONNX reference semantics).

Result<std::unique_ptr<Kernel>> MakeMaxUnpool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(info, true));
  return MakeKernel([a](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(1));
    const Tensor* oshape_t = ctx.input(2);
    if (x->rank() < 3) return ctx.Invalid("X must have rank >= 3 (N, C, spatial...), got shape " + ShapeToString(x->shape()));
    const int nd = x->rank() - 2;
    if (static_cast<int>(a.kernel_shape.size()) != nd)
      return ctx.Invalid("kernel_shape has " + std::to_string(a.kernel_shape.size()) + " values but X has " + std::to_string(nd) + " spatial axes");
    if (ind->dtype() != DataType::kInt64) return ctx.Invalid(std::string("I must be int64, got ") + DataTypeName(ind->dtype()));
    if (ind->shape() != x->shape())
      return ctx.Invalid("I must have X's shape " + ShapeToString(x->shape()) + ", got " + ShapeToString(ind->shape()));
    Shape inferred{x->dim(0), x->dim(1)};
    for (int d = 0; d < nd; ++d) {
      const int64_t s = a.strides.empty() ? 1 : a.strides[d];
      const int64_t pads = a.pads.empty() ? 0 : a.pads[d] + a.pads[d + nd];
      const int64_t v = (x->dim(d + 2) - 1) * s - pads + a.kernel_shape[d];
      if (v <= 0) return ctx.Invalid("inferred output spatial size is not positive for X " + ShapeToString(x->shape()));
      inferred.push_back(v);
    }
    Shape out_shape = inferred;
    if (oshape_t) {
      if (oshape_t->dtype() != DataType::kInt64 || oshape_t->rank() != 1 || oshape_t->size() != x->rank())
        return ctx.Invalid("output_shape must be a 1-D int64 tensor of " + std::to_string(x->rank()) + " values, got " +
                           std::string(DataTypeName(oshape_t->dtype())) + " " + ShapeToString(oshape_t->shape()));
      out_shape.assign(oshape_t->data<int64_t>(), oshape_t->data<int64_t>() + x->rank());
      if (out_shape[0] != x->dim(0) || out_shape[1] != x->dim(1))
        return ctx.Invalid("output_shape " + ShapeToString(out_shape) + " must keep X's N and C " + ShapeToString(x->shape()));
      for (int d = 2; d < x->rank(); ++d)
        if (out_shape[d] < inferred[d])
          return ctx.Invalid("output_shape " + ShapeToString(out_shape) + " is smaller than the unpooled shape " + ShapeToString(inferred));
    }
    const int64_t total = ShapeElementCount(inferred);
    const int64_t* pi = ind->data<int64_t>();
    for (int64_t i = 0; i < ind->size(); ++i)
      if (pi[i] < 0 || pi[i] >= total)
        return ctx.Invalid("index " + std::to_string(pi[i]) + " in I is out of range [0, " + std::to_string(total) + ")");
    return DispatchBySize(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(x->dtype(), out_shape));
      const T* px = x->data<T>();
      T* py = y.data<T>();
      if (out_shape == inferred) {
        for (int64_t i = 0; i < x->size(); ++i) py[pi[i]] = px[i];
      } else {
        // Map a flat index of `inferred` to the same coordinates in `out_shape`.
        for (int64_t i = 0; i < x->size(); ++i) {
          int64_t rem = pi[i], flat = 0, mul = 1;
          for (int d = x->rank() - 1; d >= 0; --d) {
            flat += (rem % inferred[d]) * mul;
            rem /= inferred[d];
            mul *= out_shape[d];
          }
          py[flat] = px[i];
        }
      }
      ctx.SetOutput(0, std::move(y));
      return Status::Ok();
    }, "MaxUnpool");
  });
}

}  // namespace

void RegisterPoolKernels(KernelRegistry& r) {
  // float32 runs on oneDNN (dnnl_pool.cc) where it can; these scalar kernels keep the rest.
  using dnnl_kernels::MakePool;
  using dnnl_kernels::PoolKind;
  r.Register("", "AveragePool", 1, [](const KernelInfo& i) {
    return MakePool(i, PoolKind::kAverage, [](const KernelInfo& j) { return MakeAvgLpPool(j, AvgKind::kAverage); });
  });
  r.Register("", "LpPool", 1, [](const KernelInfo& i) { return MakeAvgLpPool(i, AvgKind::kLp); });
  r.Register("", "MaxPool", 1, [](const KernelInfo& i) { return MakePool(i, PoolKind::kMax, MakeMaxPool); });
  r.Register("", "GlobalAveragePool", 1, [](const KernelInfo& i) {
    return MakePool(i, PoolKind::kGlobalAverage, [](const KernelInfo& j) { return MakeGlobalPool(j, GlobalKind::kAverage); });
  });
  r.Register("", "GlobalMaxPool", 1, [](const KernelInfo& i) {
    return MakePool(i, PoolKind::kGlobalMax, [](const KernelInfo& j) { return MakeGlobalPool(j, GlobalKind::kMax); });
  });
  // The same pools on channel-blocked tensors (attribute layout = "NCHW16c"; dnnl_pool.cc).
  r.Register("com.inferloop", "MaxPool", 1, [](const KernelInfo& i) { return MakePool(i, PoolKind::kMax, MakeMaxPool); });
  r.Register("com.inferloop", "AveragePool", 1, [](const KernelInfo& i) {
    return MakePool(i, PoolKind::kAverage, [](const KernelInfo& j) { return MakeAvgLpPool(j, AvgKind::kAverage); });
  });
  r.Register("com.inferloop", "GlobalAveragePool", 1, [](const KernelInfo& i) {
    return MakePool(i, PoolKind::kGlobalAverage, [](const KernelInfo& j) { return MakeGlobalPool(j, GlobalKind::kAverage); });
  });
  r.Register("com.inferloop", "GlobalMaxPool", 1, [](const KernelInfo& i) {
    return MakePool(i, PoolKind::kGlobalMax, [](const KernelInfo& j) { return MakeGlobalPool(j, GlobalKind::kMax); });
  });
  r.Register("", "GlobalLpPool", 1, [](const KernelInfo& i) { return MakeGlobalPool(i, GlobalKind::kLp); });
  r.Register("", "MaxUnpool", 9, MakeMaxUnpool);
}

}  // namespace nn
}  // namespace inferloop
