// ArgMax, ArgMin, CumSum, TopK (part of the reduction kernel family).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernels/reduction_internal.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace reduction {
namespace {

// ---------------------------------------------------------------------------------------------
// ArgMax / ArgMin

struct ArgConfig {
  bool is_max;
  int64_t axis;
  bool keepdims;
  bool select_last;
};

// "x is a better pick than best". NaN counts as the extreme value (like numpy).
template <typename T>
inline bool ArgBetter(T x, T best, bool is_max, bool select_last) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(best)) return select_last && std::isnan(x);
    if (std::isnan(x)) return true;
  }
  if (is_max) return select_last ? x >= best : x > best;
  return select_last ? x <= best : x < best;
}

template <typename T>
void ArgTyped(const T* px, int64_t* po, int64_t outer, int64_t n, int64_t inner, const ArgConfig& c) {
  std::vector<T> best(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const T* base = px + o * n * inner;
    int64_t* out = po + o * inner;
    for (int64_t i = 0; i < inner; ++i) {
      best[i] = base[i];
      out[i] = 0;
    }
    for (int64_t r = 1; r < n; ++r) {
      const T* row = base + r * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (ArgBetter(row[i], best[i], c.is_max, c.select_last)) {
          best[i] = row[i];
          out[i] = r;
        }
      }
    }
  }
}

Status ComputeArg(KernelContext& ctx, const ArgConfig& c) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  const Shape& s = x->shape();
  const int64_t rank = x->rank();
  int64_t axis = c.axis;
  if (!NormalizeAxis(axis, rank))
    return ctx.Invalid("axis " + std::to_string(c.axis) + " is out of range for input of rank " + std::to_string(rank));
  const int64_t outer = DimProduct(s, 0, axis), n = s[axis], inner = DimProduct(s, axis + 1, rank);
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) out_shape.push_back(s[d]);
    else if (c.keepdims) out_shape.push_back(1);
  }
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt64, out_shape));
  if (outer * inner > 0) {
    if (n == 0) return ctx.Invalid("cannot take the arg of an empty axis (dim " + std::to_string(axis) + " is 0)");
    Tensor src = *x;
    if (IsFloat16Like(x->dtype())) {
      IL_ASSIGN_OR_RETURN(src, ToFloat32(*x));
    }
    IL_RETURN_IF_ERROR(DispatchNumeric(
        src.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          ArgTyped<T>(src.data<T>(), out.data<int64_t>(), outer, n, inner, c);
          return Status::Ok();
        },
        c.is_max ? "ArgMax" : "ArgMin"));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// CumSum

template <typename T, typename Acc>
void CumSumTyped(const T* px, T* po, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  std::vector<Acc> acc(inner);
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), Acc(0));
    const int64_t base = o * n * inner;
    for (int64_t step = 0; step < n; ++step) {
      const int64_t r = reverse ? n - 1 - step : step;
      const T* in = px + base + r * inner;
      T* out = po + base + r * inner;
      if (exclusive) {
        for (int64_t i = 0; i < inner; ++i) {
          out[i] = static_cast<T>(acc[i]);
          acc[i] += static_cast<Acc>(in[i]);
        }
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          acc[i] += static_cast<Acc>(in[i]);
          out[i] = static_cast<T>(acc[i]);
        }
      }
    }
  }
}

Status ReadScalarInt(KernelContext& ctx, const Tensor& t, const char* what, int64_t* v) {
  if (t.size() != 1)
    return ctx.Invalid(std::string(what) + " must hold exactly one element, got shape " + ShapeToString(t.shape()));
  if (t.dtype() == DataType::kInt64) *v = t.data<int64_t>()[0];
  else if (t.dtype() == DataType::kInt32) *v = t.data<int32_t>()[0];
  else return ctx.Invalid(std::string(what) + " must be int32 or int64, got " + DataTypeName(t.dtype()));
  return Status::Ok();
}

Status ComputeCumSum(KernelContext& ctx, bool exclusive, bool reverse) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* axis_t, ctx.RequireInput(1));
  int64_t axis;
  IL_RETURN_IF_ERROR(ReadScalarInt(ctx, *axis_t, "axis", &axis));
  const int64_t rank = x->rank();
  const int64_t given = axis;
  if (!NormalizeAxis(axis, rank))
    return ctx.Invalid("axis " + std::to_string(given) + " is out of range for input of rank " + std::to_string(rank));
  const Shape& s = x->shape();
  const int64_t outer = DimProduct(s, 0, axis), n = s[axis], inner = DimProduct(s, axis + 1, rank);
  const DataType dt = x->dtype();
  if (IsFloat16Like(dt)) {
    IL_ASSIGN_OR_RETURN(Tensor xf, ToFloat32(*x));
    IL_ASSIGN_OR_RETURN(Tensor of, ctx.Allocate(DataType::kFloat, s));
    CumSumTyped<float, float>(xf.data<float>(), of.data<float>(), outer, n, inner, exclusive, reverse);
    IL_ASSIGN_OR_RETURN(Tensor out, CastTensor(of, dt));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, s));
  IL_RETURN_IF_ERROR(DispatchNumeric(
      dt,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        // Integers accumulate in uint64 (well-defined wrapping, identical to T's when cast back).
        using Acc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
        CumSumTyped<T, Acc>(x->data<T>(), out.data<T>(), outer, n, inner, exclusive, reverse);
        return Status::Ok();
      },
      "CumSum"));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// TopK

struct TopKConfig {
  int64_t axis;
  bool largest;
  bool sorted;
  int64_t attr_k;   // opset 1: k is an attribute
  bool k_from_input;
};

template <typename T>
void TopKTyped(const T* px, T* pv, int64_t* pi, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest) {
  std::vector<int64_t> idx(n);
  const T* row = nullptr;
  // Strict weak order: NaN ranks above every number; ties keep the lower index first.
  auto before = [&](int64_t a, int64_t b) {
    T va = row[a * inner], vb = row[b * inner];
    if constexpr (std::is_floating_point_v<T>) {
      bool na = std::isnan(va), nb = std::isnan(vb);
      if (na || nb) {
        if (na && nb) return a < b;
        return largest ? na : nb;
      }
    }
    if (va != vb) return largest ? va > vb : va < vb;
    return a < b;
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      row = px + o * n * inner + i;
      std::iota(idx.begin(), idx.end(), int64_t{0});
      if (k < n) std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
      else std::sort(idx.begin(), idx.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t off = o * k * inner + j * inner + i;
        pv[off] = row[idx[j] * inner];
        pi[off] = idx[j];
      }
    }
  }
}

Status ComputeTopK(KernelContext& ctx, const TopKConfig& c) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  int64_t k = c.attr_k;
  if (c.k_from_input) {
    IL_ASSIGN_OR_RETURN(const Tensor* kt, ctx.RequireInput(1));
    if (kt->dtype() != DataType::kInt64) return ctx.Invalid(std::string("K must be int64, got ") + DataTypeName(kt->dtype()));
    IL_RETURN_IF_ERROR(ReadScalarInt(ctx, *kt, "K", &k));
  }
  const int64_t rank = x->rank();
  int64_t axis = c.axis;
  if (!NormalizeAxis(axis, rank))
    return ctx.Invalid("axis " + std::to_string(c.axis) + " is out of range for input of rank " + std::to_string(rank));
  const Shape& s = x->shape();
  const int64_t outer = DimProduct(s, 0, axis), n = s[axis], inner = DimProduct(s, axis + 1, rank);
  if (k < 0 || k > n)
    return ctx.Invalid("K must be in [0, " + std::to_string(n) + "] (the size of axis " + std::to_string(axis) +
                       "), got " + std::to_string(k));
  Shape out_shape = s;
  out_shape[axis] = k;
  const DataType dt = x->dtype();
  IL_ASSIGN_OR_RETURN(Tensor indices, ctx.Allocate(DataType::kInt64, out_shape));
  Tensor values;
  if (IsFloat16Like(dt)) {
    IL_ASSIGN_OR_RETURN(Tensor xf, ToFloat32(*x));
    IL_ASSIGN_OR_RETURN(Tensor vf, ctx.Allocate(DataType::kFloat, out_shape));
    TopKTyped<float>(xf.data<float>(), vf.data<float>(), indices.data<int64_t>(), outer, n, inner, k, c.largest);
    IL_ASSIGN_OR_RETURN(values, CastTensor(vf, dt));  // exact: the values came from `dt`
  } else {
    IL_ASSIGN_OR_RETURN(values, ctx.Allocate(dt, out_shape));
    IL_RETURN_IF_ERROR(DispatchNumeric(
        dt,
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          TopKTyped<T>(x->data<T>(), values.data<T>(), indices.data<int64_t>(), outer, n, inner, k, c.largest);
          return Status::Ok();
        },
        "TopK"));
  }
  ctx.SetOutput(0, std::move(values));
  ctx.SetOutput(1, std::move(indices));
  return Status::Ok();
}

}  // namespace

void RegisterArgCumTopKKernels(KernelRegistry& r) {
  for (bool is_max : {true, false}) {
    r.Register("", is_max ? "ArgMax" : "ArgMin", 1, [is_max](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
      ArgConfig c;
      c.is_max = is_max;
      c.axis = info.GetInt("axis", 0);
      c.keepdims = info.GetInt("keepdims", 1) != 0;
      c.select_last = info.GetInt("select_last_index", 0) != 0;
      return MakeKernel([c](KernelContext& ctx) { return ComputeArg(ctx, c); });
    });
  }
  r.Register("", "CumSum", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    int64_t exclusive = info.GetInt("exclusive", 0), reverse = info.GetInt("reverse", 0);
    if ((exclusive != 0 && exclusive != 1) || (reverse != 0 && reverse != 1))
      return info.Invalid("exclusive and reverse must be 0 or 1");
    return MakeKernel([e = exclusive != 0, rv = reverse != 0](KernelContext& ctx) { return ComputeCumSum(ctx, e, rv); });
  });
  r.Register("", "TopK", 1, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    TopKConfig c;
    c.axis = info.GetInt("axis", -1);
    c.largest = info.GetInt("largest", 1) != 0;
    c.sorted = info.GetInt("sorted", 1) != 0;
    c.k_from_input = info.opset() >= 10;
    c.attr_k = 0;
    if (!c.k_from_input) {
      if (!info.has_attr("k")) return info.Invalid("attribute k is required before opset 10");
      c.attr_k = info.GetInt("k", 0);
      if (c.attr_k < 0) return info.Invalid("k must be non-negative, got " + std::to_string(c.attr_k));
    }
    return MakeKernel([c](KernelContext& ctx) { return ComputeTopK(ctx, c); });
  });
}

}  // namespace reduction
}  // namespace inferloop
