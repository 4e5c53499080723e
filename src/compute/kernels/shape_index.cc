// Index-driven shape kernels: Gather, GatherElements, GatherND, Scatter, ScatterElements,
// ScatterND, TensorScatter, Compress.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/shape_common.h"

namespace inferloop {

using namespace shape_detail;  // NOLINT

namespace {

using KernelResult = Result<std::unique_ptr<Kernel>>;

// Reads integer indices and wraps negatives against `dim`; any value outside [-dim, dim-1] is an error.
Result<std::vector<int64_t>> ReadIndices(KernelContext& ctx, const Tensor& t, int64_t dim, const char* what) {
  if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64)
    return ctx.Invalid(std::string(what) + " must be int32 or int64, got " + DataTypeName(t.dtype()));
  auto r = ReadInt64s(t, what);
  if (!r.ok()) return r.status().WithContext(ctx.node().Describe());
  std::vector<int64_t> v = std::move(r).value();
  for (int64_t& x : v) {
    if (x < -dim || x >= dim)
      return ctx.Invalid(std::string(what) + " value " + std::to_string(x) + " is out of range [" + std::to_string(-dim) +
                         ", " + std::to_string(dim - 1) + "]");
    if (x < 0) x += dim;
  }
  return v;
}

// A copy of `t` allocated within the session's limits.
Result<Tensor> CopyTensor(KernelContext& ctx, const Tensor& t) {
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(t.dtype(), t.shape()));
  if (t.dtype() == DataType::kString) {
    std::copy(t.strings(), t.strings() + t.size(), out.strings());
  } else if (t.nbytes() > 0) {
    std::memcpy(out.raw_data(), t.raw_data(), t.nbytes());
  }
  return out;
}

Result<std::vector<int64_t>> ReadRawIndices(KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64)
    return ctx.Invalid(std::string(what) + " must be int32 or int64, got " + DataTypeName(t.dtype()));
  auto r = ReadInt64s(t, what);
  if (!r.ok()) return r.status().WithContext(ctx.node().Describe());
  return std::move(r).value();
}

// ---------------------------------------------------------------------------------------------
// Gather

// Gather of a non-string tensor with int32/int64 indices (already known valid axis), reading
// the indices in place: every output slice is one memcpy of the dims after `axis`, split over
// the pool. Out-of-range indices are reported before anything is written.
template <typename I>
Status GatherBytesTyped(KernelContext& ctx, const Tensor& data, const Tensor& ind, int axis) {
  const int64_t dim = data.dim(axis);
  const I* idx = ind.data<I>();
  const int64_t n = ind.size();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t x = static_cast<int64_t>(idx[j]);
    if (x < -dim || x >= dim)
      return ctx.Invalid("indices value " + std::to_string(x) + " is out of range [" + std::to_string(-dim) + ", " +
                         std::to_string(dim - 1) + "]");
  }
  const int r = data.rank();
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), ind.shape().begin(), ind.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(data.dtype(), std::move(out_shape)));
  if (out.size() > 0) {
    const size_t slice = static_cast<size_t>(Product(data.shape(), axis + 1, r)) * DataTypeSize(data.dtype());
    const auto* src = static_cast<const uint8_t*>(data.raw_data());
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    const int64_t outer = Product(data.shape(), 0, axis);
    const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>((size_t{64} << 10) / std::max<size_t>(1, slice)));
    ParallelFor(ctx.thread_pool(), outer * n, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / n;
        int64_t x = static_cast<int64_t>(idx[k % n]);
        if (x < 0) x += dim;
        std::memcpy(dst + static_cast<size_t>(k) * slice, src + static_cast<size_t>(o * dim + x) * slice, slice);
      }
    });
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

Status GatherBytes(KernelContext& ctx, const Tensor& data, const Tensor& ind, int axis) {
  if (ind.dtype() == DataType::kInt32) return GatherBytesTyped<int32_t>(ctx, data, ind, axis);
  return GatherBytesTyped<int64_t>(ctx, data, ind, axis);
}

KernelResult MakeGather(const KernelInfo& info) {
  const int64_t axis = info.GetInt("axis", 0);
  return MakeKernel([axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* data, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(1));
    const int r = data->rank();
    if (r < 1) return ctx.Invalid("data must have rank >= 1");
    int64_t a = axis;
    if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
    const int64_t dim = data->dim(static_cast<int>(a));
    if (data->dtype() != DataType::kString && (ind->dtype() == DataType::kInt64 || ind->dtype() == DataType::kInt32))
      return GatherBytes(ctx, *data, *ind, static_cast<int>(a));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, *ind, dim, "indices"));
    Shape out_shape(data->shape().begin(), data->shape().begin() + a);
    out_shape.insert(out_shape.end(), ind->shape().begin(), ind->shape().end());
    out_shape.insert(out_shape.end(), data->shape().begin() + a + 1, data->shape().end());
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(data->dtype(), out_shape));
    if (out.size() > 0) {
      const int64_t outer = Product(data->shape(), 0, a), inner = Product(data->shape(), a + 1, r);
      const int64_t n = static_cast<int64_t>(idx.size());
      IL_RETURN_IF_ERROR(DispatchAny(data->dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* src = data->data<T>();
        T* dst = out.data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < n; ++j) {
            const T* s = src + (o * dim + idx[j]) * inner;
            dst = std::copy(s, s + inner, dst);
          }
        return Status::Ok();
      }));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// Shared shape checks for GatherElements / ScatterElements: returns the data offsets that each
// element of `indices` addresses (after wrapping negatives and range checks).
Result<std::vector<int64_t>> ElementOffsets(KernelContext& ctx, const Tensor& data, const Tensor& ind, int64_t axis) {
  const int r = data.rank();
  if (r < 1) return ctx.Invalid("data must have rank >= 1");
  int64_t a = axis;
  if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
  if (ind.rank() != r)
    return ctx.Invalid("indices has shape " + ShapeToString(ind.shape()) + ", expected rank " + std::to_string(r) +
                       " like data " + ShapeToString(data.shape()));
  for (int d = 0; d < r; ++d)
    if (d != a && ind.dim(d) > data.dim(d))
      return ctx.Invalid("indices shape " + ShapeToString(ind.shape()) + " exceeds data shape " + ShapeToString(data.shape()) +
                         " on axis " + std::to_string(d));
  const int64_t dim = data.dim(static_cast<int>(a));
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, ind, dim, "indices"));
  const int64_t n = ind.size();
  if (n == 0) return idx;
  std::vector<int64_t> st = ContiguousStrides(data.shape());
  std::vector<int64_t> pos(r, 0);
  int64_t base = 0;  // offset of pos with the axis coordinate excluded
  for (int64_t i = 0; i < n; ++i) {
    idx[i] = base + idx[i] * st[a];
    for (int d = r - 1; d >= 0; --d) {
      if (++pos[d] < ind.dim(d)) {
        if (d != a) base += st[d];
        break;
      }
      if (d != a) base -= st[d] * (ind.dim(d) - 1);
      pos[d] = 0;
    }
  }
  return idx;
}

KernelResult MakeGatherElements(const KernelInfo& info) {
  const int64_t axis = info.GetInt("axis", 0);
  return MakeKernel([axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* data, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> offs, ElementOffsets(ctx, *data, *ind, axis));
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(data->dtype(), ind->shape()));
    IL_RETURN_IF_ERROR(DispatchAny(data->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* src = data->data<T>();
      T* dst = out.data<T>();
      for (size_t i = 0; i < offs.size(); ++i) dst[i] = src[offs[i]];
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// GatherND / ScatterND addressing
struct NdPlan {
  int64_t batches = 1;      // prod(data[:b])
  int64_t per_batch = 1;    // index tuples per batch
  int64_t slice = 1;        // elements per addressed slice
  int64_t batch_stride = 1; // data elements per batch
  std::vector<int64_t> offsets;  // data offset (incl. batch) of each tuple, batches*per_batch
};

Result<NdPlan> PlanND(KernelContext& ctx, const Tensor& data, const Tensor& ind, int64_t b) {
  const int r = data.rank(), q = ind.rank();
  if (r < 1 || q < 1) return ctx.Invalid("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return ctx.Invalid("batch_dims " + std::to_string(b) + " must be in [0, " + std::to_string(std::min(r, q) - 1) + "]");
  const int64_t k = ind.dim(q - 1);
  if (k < 1 || k > r - b)
    return ctx.Invalid("indices last dimension " + std::to_string(k) + " must be in [1, " + std::to_string(r - b) + "]");
  for (int d = 0; d < b; ++d)
    if (ind.dim(d) != data.dim(d))
      return ctx.Invalid("batch dimensions of indices " + ShapeToString(ind.shape()) + " and data " +
                         ShapeToString(data.shape()) + " differ");
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> raw, ReadRawIndices(ctx, ind, "indices"));
  NdPlan p;
  p.batches = Product(data.shape(), 0, b);
  p.per_batch = Product(ind.shape(), b, q - 1);
  p.slice = Product(data.shape(), b + k, r);
  p.batch_stride = Product(data.shape(), b, r);
  std::vector<int64_t> st = ContiguousStrides(data.shape());
  const int64_t tuples = p.batches * p.per_batch;
  p.offsets.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / std::max<int64_t>(p.per_batch, 1)) * p.batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = data.dim(static_cast<int>(b + j));
      int64_t x = raw[t * k + j];
      if (x < -dim || x >= dim)
        return ctx.Invalid("index " + std::to_string(x) + " is out of range [" + std::to_string(-dim) + ", " +
                           std::to_string(dim - 1) + "] for data axis " + std::to_string(b + j));
      if (x < 0) x += dim;
      off += x * st[b + j];
    }
    p.offsets[t] = off;
  }
  return p;
}

KernelResult MakeGatherND(const KernelInfo& info) {
  const int64_t b = info.GetInt("batch_dims", 0);
  if (b < 0) return info.Invalid("batch_dims must be non-negative, got " + std::to_string(b));
  return MakeKernel([b](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* data, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(NdPlan p, PlanND(ctx, *data, *ind, b));
    const int q = ind->rank();
    const int64_t k = ind->dim(q - 1);
    Shape out_shape(ind->shape().begin(), ind->shape().end() - 1);
    out_shape.insert(out_shape.end(), data->shape().begin() + b + k, data->shape().end());
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(data->dtype(), out_shape));
    IL_RETURN_IF_ERROR(DispatchAny(data->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* src = data->data<T>();
      T* dst = out.data<T>();
      for (int64_t off : p.offsets) dst = std::copy(src + off, src + off + p.slice, dst);
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Scatter reductions
enum class Red { kNone, kAdd, kMul, kMax, kMin };

Result<Red> ParseReduction(const KernelInfo& info) {
  std::string s = info.GetString("reduction", "none");
  if (s == "none") return Red::kNone;
  if (s == "add") return Red::kAdd;
  if (s == "mul") return Red::kMul;
  if (s == "max") return Red::kMax;
  if (s == "min") return Red::kMin;
  return info.Invalid("unsupported reduction '" + s + "' (expected none, add, mul, max or min)");
}

template <typename T>
T Apply(Red red, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (red) {
      case Red::kAdd: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Red::kMul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Red::kMax: return b > a ? b : a;
      case Red::kMin: return b < a ? b : a;
      default: return b;
    }
  } else {
    switch (red) {
      case Red::kAdd: return a + b;
      case Red::kMul: return a * b;
      case Red::kMax: return (b > a || b != b) ? b : a;
      case Red::kMin: return (b < a || b != b) ? b : a;
      default: return b;
    }
  }
}

// Calls f(TypeTag<T>{}, combine) with combine(T& dst, const T& src) implementing `red` for dtype.
template <typename F>
Status DispatchScatter(DataType dt, Red red, F&& f) {
  if (red == Red::kNone) {
    return DispatchAny(dt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      return f(tag, [](T& d, const T& s) { d = s; });
    });
  }
  if (dt == DataType::kFloat16) {
    return f(TypeTag<uint16_t>{}, [red](uint16_t& d, const uint16_t& s) {
      d = FloatToHalf(Apply(red, HalfToFloat(d), HalfToFloat(s)));
    });
  }
  if (dt == DataType::kBFloat16) {
    return f(TypeTag<uint16_t>{}, [red](uint16_t& d, const uint16_t& s) {
      d = FloatToBFloat16(Apply(red, BFloat16ToFloat(d), BFloat16ToFloat(s)));
    });
  }
  if (dt == DataType::kBool) {
    const bool is_or = red == Red::kAdd || red == Red::kMax;
    return f(TypeTag<uint8_t>{}, [is_or](uint8_t& d, const uint8_t& s) { d = is_or ? (d || s) : (d && s); });
  }
  return DispatchNumeric(dt, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return f(tag, [red](T& d, const T& s) { d = Apply(red, d, s); });
  }, "scatter reduction");
}

// ---------------------------------------------------------------------------------------------
// ScatterElements / Scatter
KernelResult MakeScatterElements(const KernelInfo& info) {
  const int64_t axis = info.GetInt("axis", 0);
  IL_ASSIGN_OR_RETURN(Red red, ParseReduction(info));
  return MakeKernel([axis, red](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* data, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(const Tensor* upd, ctx.RequireInput(2));
    if (upd->shape() != ind->shape())
      return ctx.Invalid("updates shape " + ShapeToString(upd->shape()) + " must equal indices shape " +
                         ShapeToString(ind->shape()));
    if (upd->dtype() != data->dtype())
      return ctx.Invalid(std::string("updates dtype ") + DataTypeName(upd->dtype()) + " must equal data dtype " +
                         DataTypeName(data->dtype()));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> offs, ElementOffsets(ctx, *data, *ind, axis));
    IL_ASSIGN_OR_RETURN(Tensor out, CopyTensor(ctx, *data));
    IL_RETURN_IF_ERROR(DispatchScatter(data->dtype(), red, [&](auto tag, auto combine) -> Status {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      const T* src = upd->data<T>();
      for (size_t i = 0; i < offs.size(); ++i) combine(dst[offs[i]], src[i]);
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// ScatterND
KernelResult MakeScatterND(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(Red red, ParseReduction(info));
  return MakeKernel([red](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* data, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ind, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(const Tensor* upd, ctx.RequireInput(2));
    if (upd->dtype() != data->dtype())
      return ctx.Invalid(std::string("updates dtype ") + DataTypeName(upd->dtype()) + " must equal data dtype " +
                         DataTypeName(data->dtype()));
    IL_ASSIGN_OR_RETURN(NdPlan p, PlanND(ctx, *data, *ind, 0));
    const int q = ind->rank();
    const int64_t k = ind->dim(q - 1);
    Shape expect(ind->shape().begin(), ind->shape().end() - 1);
    expect.insert(expect.end(), data->shape().begin() + k, data->shape().end());
    if (upd->shape() != expect)
      return ctx.Invalid("updates shape " + ShapeToString(upd->shape()) + " must be " + ShapeToString(expect));
    IL_ASSIGN_OR_RETURN(Tensor out, CopyTensor(ctx, *data));
    IL_RETURN_IF_ERROR(DispatchScatter(data->dtype(), red, [&](auto tag, auto combine) -> Status {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      const T* src = upd->data<T>();
      for (size_t t = 0; t < p.offsets.size(); ++t)
        for (int64_t s = 0; s < p.slice; ++s) combine(dst[p.offsets[t] + s], src[t * p.slice + s]);
      return Status::Ok();
    }));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// TensorScatter
KernelResult MakeTensorScatter(const KernelInfo& info) {
  const std::string mode = info.GetString("mode", "linear");
  if (mode != "linear" && mode != "circular") return info.Invalid("mode must be 'linear' or 'circular', got '" + mode + "'");
  const bool circular = mode == "circular";
  const int64_t axis = info.GetInt("axis", -2);
  return MakeKernel([circular, axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* cache, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* upd, ctx.RequireInput(1));
    const int r = cache->rank();
    int64_t a = axis;
    if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
    if (a == 0) return ctx.Invalid("axis must not be the batch axis 0");
    if (upd->dtype() != cache->dtype())
      return ctx.Invalid(std::string("update dtype ") + DataTypeName(upd->dtype()) + " must equal past_cache dtype " +
                         DataTypeName(cache->dtype()));
    bool ok = upd->rank() == r;
    for (int d = 0; ok && d < r; ++d) ok = d == a ? upd->dim(d) <= cache->dim(d) : upd->dim(d) == cache->dim(d);
    if (!ok)
      return ctx.Invalid("update shape " + ShapeToString(upd->shape()) + " is incompatible with past_cache shape " +
                         ShapeToString(cache->shape()) + " on axis " + std::to_string(a));
    const int64_t batch = cache->dim(0), max_seq = cache->dim(static_cast<int>(a)), seq = upd->dim(static_cast<int>(a));
    std::vector<int64_t> wi(static_cast<size_t>(batch), 0);
    if (const Tensor* w = ctx.input(2)) {
      IL_ASSIGN_OR_RETURN(wi, ReadRawIndices(ctx, *w, "write_indices"));
      if (w->rank() != 1 || static_cast<int64_t>(wi.size()) != batch)
        return ctx.Invalid("write_indices must have shape [" + std::to_string(batch) + "], got " + ShapeToString(w->shape()));
    }
    for (int64_t& x : wi) {
      if (circular) {
        if (max_seq > 0) x = ((x % max_seq) + max_seq) % max_seq;
      } else if (x < 0 || x > max_seq - seq) {
        return ctx.Invalid("write index " + std::to_string(x) + " with " + std::to_string(seq) +
                           " updates exceeds the cache length " + std::to_string(max_seq));
      }
    }
    IL_ASSIGN_OR_RETURN(Tensor out, CopyTensor(ctx, *cache));
    if (upd->size() > 0) {
      const int64_t outer = Product(cache->shape(), 0, a), per_batch = Product(cache->shape(), 1, a);
      const int64_t inner = Product(cache->shape(), a + 1, r);
      IL_RETURN_IF_ERROR(DispatchAny(cache->dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        T* dst = out.data<T>();
        const T* src = upd->data<T>();
        for (int64_t o = 0; o < outer; ++o) {
          const int64_t b = o / per_batch;
          for (int64_t s = 0; s < seq; ++s) {
            int64_t c = wi[b] + s;
            if (circular) c %= max_seq;
            const T* from = src + (o * seq + s) * inner;
            std::copy(from, from + inner, dst + (o * max_seq + c) * inner);
          }
        }
        return Status::Ok();
      }));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Compress
KernelResult MakeCompress(const KernelInfo& info) {
  const bool has_axis = info.has_attr("axis");
  const int64_t axis = info.GetInt("axis", 0);
  return MakeKernel([has_axis, axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* cond, ctx.RequireInput(1));
    if (cond->dtype() != DataType::kBool)
      return ctx.Invalid(std::string("condition must be bool, got ") + DataTypeName(cond->dtype()));
    if (cond->rank() != 1) return ctx.Invalid("condition must be 1-D, got shape " + ShapeToString(cond->shape()));
    const uint8_t* c = cond->data<uint8_t>();
    const int r = in->rank();
    int64_t a = 0, dim, outer, inner;
    if (has_axis) {
      a = axis;
      if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
      dim = in->dim(static_cast<int>(a));
      outer = Product(in->shape(), 0, a);
      inner = Product(in->shape(), a + 1, r);
    } else {
      dim = in->size();
      outer = 1;
      inner = 1;
    }
    std::vector<int64_t> sel;
    for (int64_t i = 0; i < cond->size(); ++i) {
      if (!c[i]) continue;
      if (i >= dim)
        return ctx.Invalid("condition selects index " + std::to_string(i) + " but the axis has length " + std::to_string(dim));
      sel.push_back(i);
    }
    Shape out_shape;
    if (has_axis) {
      out_shape = in->shape();
      out_shape[a] = static_cast<int64_t>(sel.size());
    } else {
      out_shape = {static_cast<int64_t>(sel.size())};
    }
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in->dtype(), out_shape));
    if (out.size() > 0) {
      IL_RETURN_IF_ERROR(DispatchAny(in->dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* src = in->data<T>();
        T* dst = out.data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i : sel) {
            const T* s = src + (o * dim + i) * inner;
            dst = std::copy(s, s + inner, dst);
          }
        return Status::Ok();
      }));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

}  // namespace

void RegisterShapeIndexKernels(KernelRegistry& r) {
  r.Register("", "Gather", 1, MakeGather);
  r.Register("", "GatherElements", 11, MakeGatherElements);
  r.Register("", "GatherND", 11, MakeGatherND);
  r.Register("", "Scatter", 9, MakeScatterElements);
  r.Register("", "ScatterElements", 11, MakeScatterElements);
  r.Register("", "ScatterND", 11, MakeScatterND);
  r.Register("", "TensorScatter", 24, MakeTensorScatter);
  r.Register("", "Compress", 9, MakeCompress);
}

}  // namespace inferloop
