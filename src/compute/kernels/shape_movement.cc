// Data-movement shape kernels: Transpose, Concat, Split, Slice, Tile, Pad, DepthToSpace,
// SpaceToDepth, CenterCropPad, ReverseSequence.
#include <algorithm>
#include <cstring>
#include <limits>

#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/shape_common.h"
#include "compute/simd/transpose.h"

namespace inferloop {

using namespace shape_detail;  // NOLINT

namespace {

using KernelResult = Result<std::unique_ptr<Kernel>>;

Status Overflow(KernelContext& ctx, const std::string& what) {
  return Status::ResourceExhausted(ctx.node().Describe() + ": " + what + " overflows int64");
}

// ---------------------------------------------------------------------------------------------
// Transpose
KernelResult MakeTranspose(const KernelInfo& info) {
  bool has_perm = info.has_attr("perm");
  std::vector<int64_t> perm = info.GetInts("perm");
  if (has_perm) {
    std::vector<char> seen(perm.size(), 0);
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
        return info.Invalid("perm " + ShapeToString(perm) + " is not a permutation of [0, " + std::to_string(perm.size()) + ")");
      seen[p] = 1;
    }
  }
  return MakeKernel([has_perm, perm](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    const int r = in->rank();
    // Fast path: any non-string dtype up to rank 8, written straight into the output.
    constexpr int kFastRank = 8;
    if (in->dtype() != DataType::kString && r <= kFastRank && (!has_perm || static_cast<int>(perm.size()) == r)) {
      int64_t pv[kFastRank];
      Shape out_shape(r);
      for (int d = 0; d < r; ++d) {
        pv[d] = has_perm ? perm[d] : r - 1 - d;
        out_shape[d] = in->dim(static_cast<int>(pv[d]));
      }
      IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(in->dtype(), std::move(out_shape)));
      if (simd::TransposeBytes(ctx.thread_pool(), in->raw_data(), out.raw_data(), DataTypeSize(in->dtype()),
                               in->shape().data(), pv, r)) {
        ctx.SetOutput(0, std::move(out));
        return Status::Ok();
      }
    }
    std::vector<int64_t> p = perm;
    if (!has_perm) {
      p.resize(r);
      for (int d = 0; d < r; ++d) p[d] = r - 1 - d;
    } else if (static_cast<int>(p.size()) != r) {
      return ctx.Invalid("perm has " + std::to_string(p.size()) + " entries but the input " +
                         ShapeToString(in->shape()) + " has rank " + std::to_string(r));
    }
    Shape out_shape(r);
    for (int d = 0; d < r; ++d) out_shape[d] = in->dim(static_cast<int>(p[d]));
    IL_ASSIGN_OR_RETURN(Tensor out, TransposeView(ctx, *in, in->shape(), p, out_shape));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Concat

// Copies the n inputs (non-string, validated) into `out` along `axis`: each output row (one
// index of the dims before axis) is the inputs' blocks back to back. The output bytes are
// split over the pool in chunks of at least 256 KiB, each walking the blocks it covers.
void ConcatBytes(ThreadPool* pool, const Tensor* const* ins, int n, int axis, Tensor& out) {
  const size_t es = DataTypeSize(out.dtype());
  const int64_t inner = Product(out.shape(), axis + 1, out.rank()) * static_cast<int64_t>(es);
  const int64_t total = static_cast<int64_t>(out.nbytes());
  if (total <= 0) return;
  const int64_t row = out.dim(axis) * inner;  // bytes per output row
  auto block = [&](int i) { return ins[i]->dim(axis) * inner; };
  uint8_t* dst = static_cast<uint8_t*>(out.raw_data());
  ParallelFor(pool, total, int64_t{256} << 10, [&](int64_t b, int64_t e) {
    int64_t o = b / row, off = b % row;  // row, and offset within it
    int i = 0;
    int64_t start = 0;  // offset of input i's block within the row
    while (off >= start + block(i)) start += block(i++);
    for (int64_t pos = b; pos < e;) {
      const int64_t bi = block(i), in_off = off - start, len = std::min(bi - in_off, e - pos);
      std::memcpy(dst + pos, static_cast<const uint8_t*>(ins[i]->raw_data()) + o * bi + in_off, static_cast<size_t>(len));
      pos += len;
      off += len;
      while (pos < e && off >= start + block(i)) {  // next non-empty block, wrapping to the next row
        start += block(i++);
        if (i == n) {
          i = 0;
          start = off = 0;
          ++o;
        }
      }
    }
  });
}

KernelResult MakeConcat(const KernelInfo& info) {
  if (info.opset() >= 4 && !info.has_attr("axis")) return info.Invalid("attribute 'axis' is required");
  int64_t axis = info.GetInt("axis", 1);
  return MakeKernel([axis](KernelContext& ctx) -> Status {
    const int n = ctx.num_inputs();
    if (n < 1) return ctx.Invalid("needs at least one input");
    constexpr int kInline = 16;  // inputs held without a heap allocation
    const Tensor* ins_inline[kInline];
    std::vector<const Tensor*> ins_heap;
    const Tensor** ins = ins_inline;
    if (n > kInline) {
      ins_heap.resize(n);
      ins = ins_heap.data();
    }
    for (int i = 0; i < n; ++i) { IL_ASSIGN_OR_RETURN(ins[i], ctx.RequireInput(i)); }
    const Tensor& first = *ins[0];
    const int r = first.rank();
    if (r == 0) return ctx.Invalid("cannot concatenate scalars (rank 0)");
    int64_t a = axis;
    if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
    Shape out_shape = first.shape();
    out_shape[a] = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = *ins[i];
      if (t.dtype() != first.dtype())
        return ctx.Invalid("input " + std::to_string(i) + " has dtype " + DataTypeName(t.dtype()) + ", expected " +
                           DataTypeName(first.dtype()));
      bool ok = t.rank() == r;
      for (int d = 0; ok && d < r; ++d)
        if (d != a && t.dim(d) != first.dim(d)) ok = false;
      if (!ok)
        return ctx.Invalid("input " + std::to_string(i) + " has shape " + ShapeToString(t.shape()) +
                           ", incompatible with " + ShapeToString(first.shape()) + " for concatenation on axis " +
                           std::to_string(a));
      if (out_shape[a] > std::numeric_limits<int64_t>::max() - t.dim(static_cast<int>(a))) return Overflow(ctx, "output shape");
      out_shape[a] += t.dim(static_cast<int>(a));
    }
    if (first.dtype() != DataType::kString) {
      IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(first.dtype(), out_shape));
      ConcatBytes(ctx.thread_pool(), ins, n, static_cast<int>(a), out);
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(first.dtype(), out_shape));
    if (out.size() > 0) {
      const int64_t outer = Product(out_shape, 0, a), inner = Product(out_shape, a + 1, r);
      IL_RETURN_IF_ERROR(DispatchAny(first.dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        T* dst = out.data<T>();
        for (int64_t o = 0; o < outer; ++o) {
          for (int i = 0; i < n; ++i) {
            const int64_t blk = ins[i]->dim(static_cast<int>(a)) * inner;
            const T* src = ins[i]->data<T>() + o * blk;
            dst = std::copy(src, src + blk, dst);
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
// Split
KernelResult MakeSplit(const KernelInfo& info) {
  const int64_t opset = info.opset();
  int64_t axis = info.GetInt("axis", 0);
  bool has_attr_split = opset < 13 && info.has_attr("split");
  std::vector<int64_t> attr_split = info.GetInts("split");
  bool split_input_allowed = opset == 1 || opset >= 13;
  bool has_num_outputs = opset >= 18 && info.has_attr("num_outputs");
  int64_t num_outputs = info.GetInt("num_outputs", 0);
  if (has_num_outputs) {
    if (num_outputs < 1) return info.Invalid("num_outputs must be positive, got " + std::to_string(num_outputs));
    if (num_outputs != info.num_outputs())
      return info.Invalid("num_outputs is " + std::to_string(num_outputs) + " but the node has " +
                          std::to_string(info.num_outputs()) + " outputs");
    if (info.has_input(1)) return info.Invalid("only one of the 'split' input and the 'num_outputs' attribute may be given");
  }
  if (has_attr_split) {
    for (int64_t s : attr_split)
      if (s < 0) return info.Invalid("split sizes must be non-negative, got " + ShapeToString(attr_split));
  }
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    const int r = in->rank();
    int64_t a = axis;
    if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
    const int64_t dim = in->dim(static_cast<int>(a));
    const int n = ctx.num_outputs();
    std::vector<int64_t> sizes;
    const Tensor* split_in = split_input_allowed ? ctx.input(1) : nullptr;
    if (split_in && split_in->size() == 0 && n > 0) split_in = nullptr;  // an empty list means "not given"
    if (split_in || has_attr_split) {
      if (split_in) {
        if (split_in->rank() > 1) return ctx.Invalid("split must be 1-D, got shape " + ShapeToString(split_in->shape()));
        IL_ASSIGN_OR_RETURN(sizes, ReadInt64s(*split_in, "split"));
      } else {
        sizes = attr_split;
      }
      if (static_cast<int>(sizes.size()) != n)
        return ctx.Invalid("split has " + std::to_string(sizes.size()) + " entries but the node has " + std::to_string(n) +
                           " outputs");
      int64_t sum = 0;
      for (int64_t s : sizes) {
        if (s < 0) return ctx.Invalid("split sizes must be non-negative, got " + ShapeToString(sizes));
        if (s > dim) return ctx.Invalid("split sizes " + ShapeToString(sizes) + " exceed the axis length " + std::to_string(dim));
        sum += s;
      }
      if (sum != dim)
        return ctx.Invalid("split sizes " + ShapeToString(sizes) + " sum to " + std::to_string(sum) +
                           ", expected the axis length " + std::to_string(dim));
    } else if (has_num_outputs) {
      const int64_t chunk = (dim + n - 1) / n;
      if (chunk * (n - 1) > dim)
        return ctx.Invalid("cannot split an axis of length " + std::to_string(dim) + " into " + std::to_string(n) + " outputs");
      sizes.assign(n, chunk);
      sizes[n - 1] = dim - chunk * (n - 1);
    } else {
      if (n < 1 || dim % n != 0)
        return ctx.Invalid("axis length " + std::to_string(dim) + " is not divisible by the number of outputs " + std::to_string(n));
      sizes.assign(n, dim / n);
    }
    const int64_t outer = Product(in->shape(), 0, a), inner = Product(in->shape(), a + 1, r);
    int64_t start = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t sz = sizes[i];
      if (ctx.output_wanted(i)) {
        Shape os = in->shape();
        os[a] = sz;
        IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in->dtype(), os));
        if (out.size() > 0) {
          IL_RETURN_IF_ERROR(DispatchAny(in->dtype(), [&](auto tag) -> Status {
            using T = typename decltype(tag)::type;
            const T* src = in->data<T>();
            T* dst = out.data<T>();
            for (int64_t o = 0; o < outer; ++o) {
              const T* s = src + (o * dim + start) * inner;
              dst = std::copy(s, s + sz * inner, dst);
            }
            return Status::Ok();
          }));
        }
        ctx.SetOutput(i, std::move(out));
      }
      start += sz;
    }
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Slice
Status DoSlice(KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
               const std::vector<int64_t>* axes_in, const std::vector<int64_t>* steps_in) {
  const int r = in.rank();
  const size_t k = starts.size();
  if (ends.size() != k)
    return ctx.Invalid("starts has " + std::to_string(k) + " entries but ends has " + std::to_string(ends.size()));
  if (axes_in && axes_in->size() != k)
    return ctx.Invalid("axes has " + std::to_string(axes_in->size()) + " entries, expected " + std::to_string(k));
  if (steps_in && steps_in->size() != k)
    return ctx.Invalid("steps has " + std::to_string(steps_in->size()) + " entries, expected " + std::to_string(k));
  if (!axes_in && static_cast<int>(k) > r)
    return ctx.Invalid("starts has " + std::to_string(k) + " entries but the input has rank " + std::to_string(r));
  std::vector<int64_t> start(r, 0), step(r, 1), count(in.shape());
  std::vector<char> seen(r, 0);
  for (size_t i = 0; i < k; ++i) {
    int64_t ax = axes_in ? (*axes_in)[i] : static_cast<int64_t>(i);
    int64_t a = ax;
    if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(ax, r));
    if (seen[a]) return ctx.Invalid("axis " + std::to_string(ax) + " is repeated in axes");
    seen[a] = 1;
    int64_t st = steps_in ? (*steps_in)[i] : 1;
    if (st == 0) return ctx.Invalid("steps must not be zero");
    if (st < -std::numeric_limits<int64_t>::max()) st = -std::numeric_limits<int64_t>::max();
    const int64_t dim = in.dim(static_cast<int>(a));
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t n;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > s ? 1 + (e - s - 1) / st : 0;
    } else if (dim == 0) {
      s = 0;
      n = 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = s > e ? 1 + (s - e - 1) / (-st) : 0;
    }
    start[a] = s;
    step[a] = st;
    count[a] = n;
  }
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in.dtype(), count));
  if (out.size() > 0) {
    std::vector<int64_t> strides = ContiguousStrides(in.shape());
    std::vector<std::vector<int64_t>> maps(r);
    for (int d = 0; d < r; ++d) {
      maps[d].resize(static_cast<size_t>(count[d]));
      for (int64_t i = 0; i < count[d]; ++i) maps[d][i] = (start[d] + i * step[d]) * strides[d];
    }
    IL_RETURN_IF_ERROR(AxisMapGatherAny(in, out, maps, nullptr));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

KernelResult MakeSlice(const KernelInfo& info) {
  if (info.opset() < 10) {
    if (!info.has_attr("starts") || !info.has_attr("ends")) return info.Invalid("attributes 'starts' and 'ends' are required");
    std::vector<int64_t> starts = info.GetInts("starts"), ends = info.GetInts("ends");
    std::vector<int64_t> axes = info.GetInts("axes");
    bool has_axes = !axes.empty();
    return MakeKernel([=](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
      return DoSlice(ctx, *in, starts, ends, has_axes ? &axes : nullptr, nullptr);
    });
  }
  return MakeKernel([](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ts, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(const Tensor* te, ctx.RequireInput(2));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> starts, ReadInt64s(*ts, "starts"));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> ends, ReadInt64s(*te, "ends"));
    std::vector<int64_t> axes, steps;
    const Tensor* ta = ctx.input(3);
    const Tensor* tp = ctx.input(4);
    if (ta) { IL_ASSIGN_OR_RETURN(axes, ReadInt64s(*ta, "axes")); }
    if (tp) { IL_ASSIGN_OR_RETURN(steps, ReadInt64s(*tp, "steps")); }
    return DoSlice(ctx, *in, starts, ends, ta ? &axes : nullptr, tp ? &steps : nullptr);
  });
}

// ---------------------------------------------------------------------------------------------
// Tile
Status DoTile(KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& reps) {
  const int r = in.rank();
  if (static_cast<int>(reps.size()) != r)
    return ctx.Invalid("repeats has " + std::to_string(reps.size()) + " entries but the input has rank " + std::to_string(r));
  Shape out_shape(r);
  for (int d = 0; d < r; ++d) {
    if (reps[d] < 0) return ctx.Invalid("repeats must be non-negative, got " + ShapeToString(reps));
    if (__builtin_mul_overflow(in.dim(d), reps[d], &out_shape[d])) return Overflow(ctx, "output shape");
  }
  if (ShapeElementCount(out_shape) == -2) return Overflow(ctx, "output shape " + ShapeToString(out_shape));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in.dtype(), out_shape));
  if (out.size() > 0) {
    std::vector<int64_t> strides = ContiguousStrides(in.shape());
    std::vector<std::vector<int64_t>> maps(r);
    for (int d = 0; d < r; ++d) {
      maps[d].resize(static_cast<size_t>(out_shape[d]));
      for (int64_t i = 0; i < out_shape[d]; ++i) maps[d][i] = (i % in.dim(d)) * strides[d];
    }
    IL_RETURN_IF_ERROR(AxisMapGatherAny(in, out, maps, nullptr));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

KernelResult MakeTile(const KernelInfo& info) {
  const bool v1 = info.opset() < 6;
  return MakeKernel([v1](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* rt, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> reps, ReadInt64s(*rt, "repeats"));
    if (v1) {  // Tile-1: scalar `tiles` along scalar `axis`
      IL_ASSIGN_OR_RETURN(const Tensor* at, ctx.RequireInput(2));
      IL_ASSIGN_OR_RETURN(std::vector<int64_t> av, ReadInt64s(*at, "axis"));
      if (reps.size() != 1 || av.size() != 1) return ctx.Invalid("tiles and axis must be scalars");
      int64_t a = av[0];
      if (!NormalizeAxis(a, in->rank())) return ctx.Invalid(AxisError(av[0], in->rank()));
      std::vector<int64_t> full(in->rank(), 1);
      full[a] = reps[0];
      reps = full;
    } else if (rt->rank() != 1) {
      return ctx.Invalid("repeats must be 1-D, got shape " + ShapeToString(rt->shape()));
    }
    return DoTile(ctx, *in, reps);
  });
}

// ---------------------------------------------------------------------------------------------
// Pad
enum class PadMode { kConstant, kReflect, kEdge, kWrap };

Status DoPad(KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes_in,
             PadMode mode, const Tensor& fill) {
  const int r = in.rank();
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = *axes_in;
  } else {
    for (int d = 0; d < r; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();
  if (pads.size() != 2 * na)
    return ctx.Invalid("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * na) +
                       " (2 per padded axis of input " + ShapeToString(in.shape()) + ")");
  std::vector<int64_t> begin(r, 0), end(r, 0);
  std::vector<char> seen(r, 0);
  for (size_t i = 0; i < na; ++i) {
    int64_t a = axes[i];
    if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axes[i], r));
    if (seen[a]) return ctx.Invalid("axis " + std::to_string(axes[i]) + " is repeated in axes");
    seen[a] = 1;
    begin[a] = pads[i];
    end[a] = pads[na + i];
  }
  Shape out_shape(r);
  for (int d = 0; d < r; ++d) {
    int64_t o;
    if (__builtin_add_overflow(in.dim(d), begin[d], &o) || __builtin_add_overflow(o, end[d], &o))
      return Overflow(ctx, "output shape");
    if (o < 0)
      return ctx.Invalid("pads " + ShapeToString(pads) + " would give a negative size on axis " + std::to_string(d) +
                         " of input " + ShapeToString(in.shape()));
    out_shape[d] = o;
    if (mode != PadMode::kConstant && in.dim(d) == 0 && (begin[d] > 0 || end[d] > 0))
      return ctx.Invalid("cannot pad an empty axis " + std::to_string(d) + " in non-constant mode");
  }
  if (ShapeElementCount(out_shape) == -2) return Overflow(ctx, "output shape " + ShapeToString(out_shape));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in.dtype(), out_shape));
  if (out.size() > 0) {
    std::vector<int64_t> strides = ContiguousStrides(in.shape());
    std::vector<std::vector<int64_t>> maps(r);
    for (int d = 0; d < r; ++d) {
      const int64_t n = in.dim(d);
      maps[d].resize(static_cast<size_t>(out_shape[d]));
      for (int64_t o = 0; o < out_shape[d]; ++o) {
        int64_t i = o - begin[d];
        if (i < 0 || i >= n) {
          switch (mode) {
            case PadMode::kConstant: i = -1; break;
            case PadMode::kEdge: i = i < 0 ? 0 : n - 1; break;
            case PadMode::kWrap: i = ((i % n) + n) % n; break;
            case PadMode::kReflect: {
              if (n == 1) {
                i = 0;
              } else {
                const int64_t p = 2 * (n - 1);
                i = ((i % p) + p) % p;
                if (i >= n) i = p - i;
              }
              break;
            }
          }
        }
        maps[d][o] = i < 0 ? -1 : i * strides[d];
      }
    }
    IL_RETURN_IF_ERROR(AxisMapGatherAny(in, out, maps, &fill));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

KernelResult MakePad(const KernelInfo& info) {
  const int64_t opset = info.opset();
  std::string mode_s = info.GetString("mode", "constant");
  PadMode mode;
  if (mode_s == "constant") mode = PadMode::kConstant;
  else if (mode_s == "reflect") mode = PadMode::kReflect;
  else if (mode_s == "edge") mode = PadMode::kEdge;
  else if (mode_s == "wrap") mode = PadMode::kWrap;
  else return info.Invalid("unsupported mode '" + mode_s + "' (expected constant, reflect, edge or wrap)");
  if (opset < 11) {
    const char* pads_name = opset < 2 ? "paddings" : "pads";
    if (!info.has_attr(pads_name)) return info.Invalid(std::string("attribute '") + pads_name + "' is required");
    std::vector<int64_t> pads = info.GetInts(pads_name);
    double value = info.GetFloat("value", 0.0f);
    return MakeKernel([=](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
      Tensor fill;
      if (in->dtype() == DataType::kString) {
        fill = Tensor::FromStrings({}, {""});
      } else {
        IL_ASSIGN_OR_RETURN(fill, ScalarFromDouble(in->dtype(), value));
      }
      return DoPad(ctx, *in, pads, nullptr, mode, fill);
    });
  }
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* tp, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ReadInt64s(*tp, "pads"));
    Tensor fill;
    const Tensor* cv = ctx.input(2);
    if (cv && cv->size() > 0) {
      if (cv->dtype() != in->dtype())
        return ctx.Invalid(std::string("constant_value has dtype ") + DataTypeName(cv->dtype()) + ", expected " +
                           DataTypeName(in->dtype()));
      if (cv->size() != 1) return ctx.Invalid("constant_value must be a scalar, got shape " + ShapeToString(cv->shape()));
      fill = *cv;
    } else {
      IL_ASSIGN_OR_RETURN(fill, Tensor::Create(in->dtype(), {}));
    }
    std::vector<int64_t> axes;
    const Tensor* ta = opset >= 18 ? ctx.input(3) : nullptr;
    if (ta) { IL_ASSIGN_OR_RETURN(axes, ReadInt64s(*ta, "axes")); }
    return DoPad(ctx, *in, pads, ta ? &axes : nullptr, mode, fill);
  });
}

// ---------------------------------------------------------------------------------------------
// DepthToSpace / SpaceToDepth

// Their attributes: `blocksize` (required, positive) and `mode` (DCR, the default, or CRD).
struct BlockAttrs {
  int64_t blocksize = 0;
  bool dcr = true;
};
Result<BlockAttrs> ParseBlockAttrs(const KernelInfo& info) {
  if (!info.has_attr("blocksize")) return info.Invalid("attribute 'blocksize' is required");
  BlockAttrs a;
  a.blocksize = info.GetInt("blocksize", 0);
  if (a.blocksize <= 0 || a.blocksize > (int64_t{1} << 31))
    return info.Invalid("blocksize must be positive, got " + std::to_string(a.blocksize));
  const std::string mode = info.GetString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return info.Invalid("mode must be DCR or CRD, got '" + mode + "'");
  a.dcr = mode == "DCR";
  return a;
}

KernelResult MakeDepthToSpace(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const BlockAttrs attrs, ParseBlockAttrs(info));
  const int64_t bs = attrs.blocksize;
  const bool dcr = attrs.dcr;
  return MakeKernel([bs, dcr](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    if (in->rank() != 4) return ctx.Invalid("input must be 4-D (N,C,H,W), got shape " + ShapeToString(in->shape()));
    const int64_t b = in->dim(0), c = in->dim(1), h = in->dim(2), w = in->dim(3);
    if (c % (bs * bs) != 0)
      return ctx.Invalid("channels " + std::to_string(c) + " are not divisible by blocksize^2 = " + std::to_string(bs * bs));
    const int64_t c2 = c / (bs * bs);
    Shape view, out_shape{b, c2, h * bs, w * bs};
    std::vector<int64_t> perm;
    if (dcr) {
      view = {b, bs, bs, c2, h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      view = {b, c2, bs, bs, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    IL_ASSIGN_OR_RETURN(Tensor out, TransposeView(ctx, *in, view, perm, out_shape));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

KernelResult MakeSpaceToDepth(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const BlockAttrs attrs, ParseBlockAttrs(info));
  const int64_t bs = attrs.blocksize;
  const bool dcr = attrs.dcr;
  return MakeKernel([bs, dcr](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    if (in->rank() != 4) return ctx.Invalid("input must be 4-D (N,C,H,W), got shape " + ShapeToString(in->shape()));
    const int64_t b = in->dim(0), c = in->dim(1), h = in->dim(2), w = in->dim(3);
    if (h % bs != 0 || w % bs != 0)
      return ctx.Invalid("spatial dims " + std::to_string(h) + "x" + std::to_string(w) + " are not divisible by blocksize " +
                         std::to_string(bs));
    Shape view{b, c, h / bs, bs, w / bs, bs};
    Shape out_shape{b, c * bs * bs, h / bs, w / bs};
    std::vector<int64_t> perm = dcr ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
    IL_ASSIGN_OR_RETURN(Tensor out, TransposeView(ctx, *in, view, perm, out_shape));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// CenterCropPad
KernelResult MakeCenterCropPad(const KernelInfo& info) {
  const bool has_axes = info.has_attr("axes");
  const std::vector<int64_t> axes_attr = info.GetInts("axes");
  return MakeKernel([has_axes, axes_attr](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ts, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> target, ReadInt64s(*ts, "shape"));
    const int r = in->rank();
    std::vector<int64_t> axes = axes_attr;
    if (!has_axes)
      for (int d = 0; d < r; ++d) axes.push_back(d);
    if (target.size() != axes.size())
      return ctx.Invalid("shape has " + std::to_string(target.size()) + " entries, expected " + std::to_string(axes.size()));
    Shape out_shape = in->shape();
    std::vector<int64_t> offset(r, 0);  // input index = output index + offset
    std::vector<char> seen(r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axes[i], r));
      if (seen[a]) return ctx.Invalid("axis " + std::to_string(axes[i]) + " is repeated in axes");
      seen[a] = 1;
      const int64_t dim = in->dim(static_cast<int>(a)), sh = target[i];
      if (sh < 0) return ctx.Invalid("target shape must be non-negative, got " + ShapeToString(target));
      out_shape[a] = sh;
      offset[a] = sh <= dim ? (dim - sh) / 2 : -((sh - dim) / 2);
    }
    if (ShapeElementCount(out_shape) == -2) return Overflow(ctx, "output shape");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in->dtype(), out_shape));
    if (out.size() > 0) {
      IL_ASSIGN_OR_RETURN(Tensor fill, Tensor::Create(in->dtype(), {}));
      std::vector<int64_t> strides = ContiguousStrides(in->shape());
      std::vector<std::vector<int64_t>> maps(r);
      for (int d = 0; d < r; ++d) {
        maps[d].resize(static_cast<size_t>(out_shape[d]));
        for (int64_t o = 0; o < out_shape[d]; ++o) {
          int64_t i = o + offset[d];
          maps[d][o] = (i < 0 || i >= in->dim(d)) ? -1 : i * strides[d];
        }
      }
      IL_RETURN_IF_ERROR(AxisMapGatherAny(*in, out, maps, &fill));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// ReverseSequence
KernelResult MakeReverseSequence(const KernelInfo& info) {
  const int64_t batch_axis = info.GetInt("batch_axis", 1), time_axis = info.GetInt("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    return info.Invalid("batch_axis and time_axis must be 0 and 1 in some order, got " + std::to_string(batch_axis) + " and " +
                        std::to_string(time_axis));
  return MakeKernel([batch_axis, time_axis](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* tl, ctx.RequireInput(1));
    if (in->rank() < 2) return ctx.Invalid("input must have rank >= 2, got shape " + ShapeToString(in->shape()));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, ReadInt64s(*tl, "sequence_lens"));
    const int64_t batch = in->dim(static_cast<int>(batch_axis)), time = in->dim(static_cast<int>(time_axis));
    if (tl->rank() != 1 || static_cast<int64_t>(lens.size()) != batch)
      return ctx.Invalid("sequence_lens must have shape [" + std::to_string(batch) + "], got " + ShapeToString(tl->shape()));
    for (int64_t l : lens)
      if (l < 0 || l > time)
        return ctx.Invalid("sequence_lens value " + std::to_string(l) + " is out of range [0, " + std::to_string(time) + "]");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in->dtype(), in->shape()));
    if (out.size() > 0) {
      const std::vector<int64_t> st = ContiguousStrides(in->shape());
      const int64_t sb = st[batch_axis], stt = st[time_axis], inner = st[1];
      IL_RETURN_IF_ERROR(DispatchAny(in->dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* src = in->data<T>();
        T* dst = out.data<T>();
        for (int64_t b = 0; b < batch; ++b) {
          for (int64_t t = 0; t < time; ++t) {
            const int64_t ts = t < lens[b] ? lens[b] - 1 - t : t;
            const T* s = src + b * sb + ts * stt;
            std::copy(s, s + inner, dst + b * sb + t * stt);
          }
        }
        return Status::Ok();
      }));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

}  // namespace

void RegisterShapeMovementKernels(KernelRegistry& r) {
  r.Register("", "Transpose", 1, MakeTranspose);
  r.Register("", "Concat", 1, MakeConcat);
  r.Register("", "Split", 1, MakeSplit);
  r.Register("", "Slice", 1, MakeSlice);
  r.Register("", "Tile", 1, MakeTile);
  r.Register("", "Pad", 1, MakePad);
  r.Register("", "DepthToSpace", 1, MakeDepthToSpace);
  r.Register("", "SpaceToDepth", 1, MakeSpaceToDepth);
  r.Register("", "CenterCropPad", 18, MakeCenterCropPad);
  r.Register("", "ReverseSequence", 10, MakeReverseSequence);
}

}  // namespace inferloop
