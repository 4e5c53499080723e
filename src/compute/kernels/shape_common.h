// Helpers shared by the shape / data-movement kernels (shape_*.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compute/dispatch.h"
#include "compute/kernel.h"
#include "compute/kernel_registry.h"

namespace inferloop {
namespace shape_detail {

// Calls f(TypeTag<T>{}) with T = std::string for STRING tensors, else an unsigned type of the
// element's byte size (for pure data movement of any dtype).
template <typename F>
Status DispatchAny(DataType t, F&& f, const char* what = "operator") {
  if (t == DataType::kString) return f(TypeTag<std::string>{});
  if (t == DataType::kUndefined) return UnsupportedType(what, t);
  return DispatchBySize(t, f, what);
}

// Normalizes `axis` into [0, rank). False if out of range [-rank, rank-1].
inline bool NormalizeAxis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

inline std::string AxisError(int64_t axis, int64_t rank) {
  return "axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(rank) +
         " (expected [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "])";
}

// Row-major element strides.
inline std::vector<int64_t> ContiguousStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

inline int64_t Product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

// Reads an integer tensor (any integer dtype) into int64s.
Result<std::vector<int64_t>> ReadInt64s(const Tensor& t, const std::string& what);
// Reads a numeric tensor of any numeric dtype (incl. float16/bfloat16/bool) as doubles.
Result<std::vector<double>> ReadDoubles(const Tensor& t, const std::string& what);

// Element value `v` (given as double) converted to `dtype`, written into element 0 of a
// one-element tensor. Used for float attributes like Pad-2's `value`.
Result<Tensor> ScalarFromDouble(DataType dtype, double v);
// The multiplicative identity of `dtype` as a one-element tensor (for EyeLike / OneHot).
Result<Tensor> OneOf(DataType dtype);

// out[i] = src[sum_d maps[d][idx_d]] for every output index; an entry of -1 in any map means
// "use *fill" (fill must be non-null if any map has -1). The caller must ensure the output has
// at least one element (maps are sized by output dims).
template <typename T>
void AxisMapGather(const T* src, T* dst, const Shape& out_shape, const std::vector<std::vector<int64_t>>& maps,
                   const T* fill) {
  const int r = static_cast<int>(out_shape.size());
  if (r == 0) {
    dst[0] = src[0];
    return;
  }
  const std::vector<int64_t>& last = maps[r - 1];
  const int64_t inner = out_shape[r - 1];
  bool contiguous = true;
  for (int64_t k = 0; k < inner; ++k) {
    if (last[k] < 0 || last[k] != last[0] + k) {
      contiguous = false;
      break;
    }
  }
  // prefix[d] = sum of maps[j][idx[j]] for j < d (r entries, prefix[0] = 0); bad[d] likewise.
  std::vector<int64_t> idx(r, 0), prefix(r, 0);
  std::vector<char> bad(r, 0);
  for (int d = 1; d < r; ++d) {
    int64_t m = maps[d - 1][0];
    bad[d] = bad[d - 1] || m < 0;
    prefix[d] = prefix[d - 1] + (m < 0 ? 0 : m);
  }
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  for (int64_t o = 0; o < total; o += inner) {
    T* out = dst + o;
    if (bad[r - 1]) {
      for (int64_t k = 0; k < inner; ++k) out[k] = *fill;
    } else {
      const T* base = src + prefix[r - 1];
      if (contiguous) {
        std::copy(base + last[0], base + last[0] + inner, out);
      } else {
        for (int64_t k = 0; k < inner; ++k) out[k] = last[k] < 0 ? *fill : base[last[k]];
      }
    }
    // advance the odometer over dims [0, r-1)
    int d = r - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) break;
    for (int j = d; j < r - 1; ++j) {
      int64_t m = maps[j][idx[j]];
      bad[j + 1] = bad[j] || m < 0;
      prefix[j + 1] = prefix[j] + (m < 0 ? 0 : m);
    }
  }
}

// Copies `in` viewed with shape `in_view` (same element count) transposed by `perm` into a new
// tensor of shape `out_shape` (whose element count must match). Any dtype.
Result<Tensor> TransposeView(KernelContext& ctx, const Tensor& in, const Shape& in_view, const std::vector<int64_t>& perm,
                             const Shape& out_shape);

// Runs AxisMapGather for any dtype. `fill` (may be null when no map has -1) must have `in`'s
// dtype and at least one element.
Status AxisMapGatherAny(const Tensor& in, Tensor& out, const std::vector<std::vector<int64_t>>& maps,
                        const Tensor* fill);

}  // namespace shape_detail

void RegisterShapeMovementKernels(KernelRegistry& r);  // shape_movement.cc
void RegisterShapeIndexKernels(KernelRegistry& r);     // shape_index.cc
void RegisterShapeMiscKernels(KernelRegistry& r);      // shape_misc.cc

}  // namespace inferloop
