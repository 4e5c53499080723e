// Unique and Col2Im.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/shape_common.h"
#include "compute/tensor_cast.h"

namespace inferloop {

using namespace shape_detail;  // NOLINT

namespace {

using KernelResult = Result<std::unique_ptr<Kernel>>;

// ---------------------------------------------------------------------------------------------
// Unique

// Total order used for sorting: NaN after every number, NaNs equal to each other.
template <typename K>
int CompareKey(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  if (a < b) return -1;
  if (b < a) return 1;
  return 0;
}

// Groups `rows` rows of `len` keys each. Fills first[g], count[g] for each group (ordered by
// key if sorted, else by first occurrence) and group_of[row].
template <typename K>
void GroupRows(const std::vector<K>& keys, int64_t rows, int64_t len, bool sorted, std::vector<int64_t>& first,
               std::vector<int64_t>& count, std::vector<int64_t>& group_of) {
  auto cmp_rows = [&](int64_t x, int64_t y) {
    for (int64_t j = 0; j < len; ++j) {
      int c = CompareKey(keys[x * len + j], keys[y * len + j]);
      if (c) return c;
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return cmp_rows(x, y) < 0; });
  std::vector<int64_t> sorted_group_of(static_cast<size_t>(rows));
  std::vector<int64_t> sfirst, scount;
  for (int64_t i = 0; i < rows; ++i) {
    if (i == 0 || cmp_rows(order[i - 1], order[i]) != 0) {
      sfirst.push_back(order[i]);
      scount.push_back(0);
    }
    scount.back()++;
    sorted_group_of[order[i]] = static_cast<int64_t>(sfirst.size()) - 1;
  }
  const int64_t g = static_cast<int64_t>(sfirst.size());
  std::vector<int64_t> pos(static_cast<size_t>(g));  // sorted group -> output position
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(pos);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t x, int64_t y) { return sfirst[x] < sfirst[y]; });
    for (int64_t k = 0; k < g; ++k) pos[by_first[k]] = k;
  }
  first.assign(static_cast<size_t>(g), 0);
  count.assign(static_cast<size_t>(g), 0);
  for (int64_t k = 0; k < g; ++k) {
    first[pos[k]] = sfirst[k];
    count[pos[k]] = scount[k];
  }
  group_of.resize(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) group_of[i] = pos[sorted_group_of[i]];
}

Status GroupAny(const Tensor& t, int64_t rows, int64_t len, bool sorted, std::vector<int64_t>& first,
                std::vector<int64_t>& count, std::vector<int64_t>& group_of) {
  const DataType dt = t.dtype();
  const int64_t n = t.size();
  if (dt == DataType::kString) {
    std::vector<std::string> keys(t.strings(), t.strings() + n);
    GroupRows(keys, rows, len, sorted, first, count, group_of);
    return Status::Ok();
  }
  if (dt == DataType::kFloat16 || dt == DataType::kBFloat16 || IsSmallFloat(dt)) {
    IL_ASSIGN_OR_RETURN(std::vector<double> keys, ReadDoubles(t, "X"));
    GroupRows(keys, rows, len, sorted, first, count, group_of);
    return Status::Ok();
  }
  if (dt == DataType::kBool) {
    std::vector<uint8_t> keys(t.data<uint8_t>(), t.data<uint8_t>() + n);
    GroupRows(keys, rows, len, sorted, first, count, group_of);
    return Status::Ok();
  }
  return DispatchNumeric(dt, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    std::vector<T> keys(t.data<T>(), t.data<T>() + n);
    GroupRows(keys, rows, len, sorted, first, count, group_of);
    return Status::Ok();
  }, "Unique");
}

KernelResult MakeUnique(const KernelInfo& info) {
  const bool has_axis = info.has_attr("axis");
  const int64_t axis = info.GetInt("axis", 0);
  const bool sorted = info.GetInt("sorted", 1) != 0;
  return MakeKernel([has_axis, axis, sorted](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    const int r = x->rank();
    int64_t a = 0, rows, outer = 1, inner = 1;
    Tensor keys_t = *x;
    if (has_axis) {
      a = axis;
      if (!NormalizeAxis(a, r)) return ctx.Invalid(AxisError(axis, r));
      rows = x->dim(static_cast<int>(a));
      outer = Product(x->shape(), 0, a);
      inner = Product(x->shape(), a + 1, r);
      if (a != 0 && x->size() > 0) {  // bring the axis to the front so each slice is contiguous
        std::vector<int64_t> perm{a};
        for (int d = 0; d < r; ++d)
          if (d != a) perm.push_back(d);
        Shape ts(r);
        for (int d = 0; d < r; ++d) ts[d] = x->dim(static_cast<int>(perm[d]));
        IL_ASSIGN_OR_RETURN(keys_t, TransposeView(ctx, *x, x->shape(), perm, ts));
      }
    } else {
      rows = x->size();
    }
    const int64_t len = rows > 0 ? x->size() / rows : 0;
    std::vector<int64_t> first, count, group_of;
    IL_RETURN_IF_ERROR(GroupAny(keys_t, rows, len, sorted, first, count, group_of));
    const int64_t g = static_cast<int64_t>(first.size());

    Shape y_shape;
    if (has_axis) {
      y_shape = x->shape();
      y_shape[a] = g;
    } else {
      y_shape = {g};
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(x->dtype(), y_shape));
    if (y.size() > 0) {
      IL_RETURN_IF_ERROR(DispatchAny(x->dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* src = x->data<T>();
        T* dst = y.data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = 0; k < g; ++k) {
            const T* s = src + (o * rows + first[k]) * inner;
            dst = std::copy(s, s + inner, dst);
          }
        return Status::Ok();
      }));
    }
    ctx.SetOutput(0, std::move(y));
    auto emit = [&](int i, const std::vector<int64_t>& v) -> Status {
      if (!ctx.output_wanted(i)) return Status::Ok();
      IL_ASSIGN_OR_RETURN(Tensor t, ctx.Allocate(DataType::kInt64, {static_cast<int64_t>(v.size())}));
      std::copy(v.begin(), v.end(), t.data<int64_t>());
      ctx.SetOutput(i, std::move(t));
      return Status::Ok();
    };
    IL_RETURN_IF_ERROR(emit(1, first));
    IL_RETURN_IF_ERROR(emit(2, group_of));
    IL_RETURN_IF_ERROR(emit(3, count));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Col2Im
template <typename T>
void Col2ImCompute(const T* src, T* dst, int64_t batches, int64_t channels, const std::vector<int64_t>& image,
                   const std::vector<int64_t>& block, const std::vector<int64_t>& nblocks, const std::vector<int64_t>& dil,
                   const std::vector<int64_t>& pad_begin, const std::vector<int64_t>& stride) {
  const size_t nd = image.size();
  const int64_t bl = Product(block, 0, nd), L = Product(nblocks, 0, nd), img = Product(image, 0, nd);
  std::vector<int64_t> img_st = ContiguousStrides(image);
  std::vector<int64_t> koff(nd, 0);
  std::vector<std::vector<int64_t>> maps(nd);
  for (int64_t kk = 0; kk < bl; ++kk) {
    // kernel offset multi-index of kk
    int64_t rem = kk;
    for (size_t i = nd; i-- > 0;) {
      koff[i] = rem % block[i];
      rem /= block[i];
    }
    for (size_t i = 0; i < nd; ++i) {
      maps[i].resize(static_cast<size_t>(nblocks[i]));
      for (int64_t p = 0; p < nblocks[i]; ++p) {
        int64_t c = p * stride[i] - pad_begin[i] + koff[i] * dil[i];
        maps[i][p] = (c < 0 || c >= image[i]) ? -1 : c * img_st[i];
      }
    }
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t ch = 0; ch < channels; ++ch) {
        const T* col = src + ((b * channels + ch) * bl + kk) * L;
        T* im = dst + (b * channels + ch) * img;
        std::vector<int64_t> pos(nd, 0);
        for (int64_t l = 0; l < L; ++l) {
          int64_t off = 0;
          bool ok = true;
          for (size_t i = 0; i < nd && ok; ++i) {
            int64_t m = maps[i][pos[i]];
            if (m < 0) ok = false;
            off += m;
          }
          if (ok) im[off] = static_cast<T>(im[off] + col[l]);
          for (size_t i = nd; i-- > 0;) {
            if (++pos[i] < nblocks[i]) break;
            pos[i] = 0;
          }
        }
      }
  }
}

KernelResult MakeCol2Im(const KernelInfo& info) {
  const std::vector<int64_t> dil_a = info.GetInts("dilations"), pads_a = info.GetInts("pads"), str_a = info.GetInts("strides");
  for (int64_t v : dil_a)
    if (v <= 0) return info.Invalid("dilations must be positive, got " + ShapeToString(dil_a));
  for (int64_t v : str_a)
    if (v <= 0) return info.Invalid("strides must be positive, got " + ShapeToString(str_a));
  for (int64_t v : pads_a)
    if (v < 0) return info.Invalid("pads must be non-negative, got " + ShapeToString(pads_a));
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* in, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* ti, ctx.RequireInput(1));
    IL_ASSIGN_OR_RETURN(const Tensor* tb, ctx.RequireInput(2));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> image, ReadInt64s(*ti, "image_shape"));
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> block, ReadInt64s(*tb, "block_shape"));
    const size_t nd = image.size();
    if (nd == 0 || block.size() != nd)
      return ctx.Invalid("image_shape and block_shape must have the same non-zero length, got " + ShapeToString(image) +
                         " and " + ShapeToString(block));
    std::vector<int64_t> dil = dil_a.empty() ? std::vector<int64_t>(nd, 1) : dil_a;
    std::vector<int64_t> str = str_a.empty() ? std::vector<int64_t>(nd, 1) : str_a;
    std::vector<int64_t> pads = pads_a.empty() ? std::vector<int64_t>(2 * nd, 0) : pads_a;
    if (dil.size() != nd || str.size() != nd || pads.size() != 2 * nd)
      return ctx.Invalid("dilations/strides need " + std::to_string(nd) + " entries and pads " + std::to_string(2 * nd));
    if (in->rank() != 3) return ctx.Invalid("input must be 3-D [N, C*prod(block_shape), L], got " + ShapeToString(in->shape()));
    int64_t bl = 1;
    for (size_t i = 0; i < nd; ++i) {
      if (image[i] <= 0 || block[i] <= 0 || image[i] > (int64_t{1} << 40) || block[i] > (int64_t{1} << 20))
        return ctx.Invalid("image_shape and block_shape must be positive, got " + ShapeToString(image) + " and " +
                           ShapeToString(block));
      bl *= block[i];
      if (bl > (int64_t{1} << 40)) return ctx.Invalid("block_shape is too large");
    }
    if (in->dim(1) % bl != 0)
      return ctx.Invalid("input dimension 1 (" + std::to_string(in->dim(1)) + ") is not divisible by prod(block_shape) = " +
                         std::to_string(bl));
    std::vector<int64_t> nblocks(nd), pad_begin(nd);
    int64_t L = 1;
    for (size_t i = 0; i < nd; ++i) {
      const int64_t eff = dil[i] * (block[i] - 1) + 1;
      const int64_t span = image[i] + pads[i] + pads[nd + i] - eff;
      if (span < 0) return ctx.Invalid("the block does not fit in the padded image on dimension " + std::to_string(i));
      nblocks[i] = span / str[i] + 1;
      pad_begin[i] = pads[i];
      if (__builtin_mul_overflow(L, nblocks[i], &L)) return ctx.Invalid("the number of blocks overflows int64");
    }
    if (in->dim(2) != L)
      return ctx.Invalid("input dimension 2 is " + std::to_string(in->dim(2)) + ", expected the number of blocks " +
                         std::to_string(L) + " (" + ShapeToString(nblocks) + ")");
    const int64_t N = in->dim(0), C = in->dim(1) / bl;
    Shape out_shape{N, C};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    if (ShapeElementCount(out_shape) == -2)
      return Status::ResourceExhausted(ctx.node().Describe() + ": output shape overflows");
    const DataType dt = in->dtype();
    if (dt == DataType::kFloat16 || dt == DataType::kBFloat16) {
      IL_ASSIGN_OR_RETURN(Tensor f, ToFloat32(*in));
      IL_ASSIGN_OR_RETURN(Tensor of, ctx.Allocate(DataType::kFloat, out_shape));
      if (of.size() > 0)
        Col2ImCompute<float>(f.data<float>(), of.data<float>(), N, C, image, block, nblocks, dil, pad_begin, str);
      IL_ASSIGN_OR_RETURN(Tensor out, CastTensor(of, dt));
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, out_shape));
    IL_RETURN_IF_ERROR(DispatchNumeric(dt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if (out.size() > 0) Col2ImCompute<T>(in->data<T>(), out.data<T>(), N, C, image, block, nblocks, dil, pad_begin, str);
      return Status::Ok();
    }, "Col2Im"));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

}  // namespace

void RegisterShapeMiscKernels(KernelRegistry& r) {
  r.Register("", "Unique", 11, MakeUnique);
  r.Register("", "Col2Im", 18, MakeCol2Im);
}

}  // namespace inferloop
