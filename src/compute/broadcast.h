// Multidirectional (numpy-style) broadcasting helpers.
#pragma once

#include <vector>

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

// The broadcast of all shapes, or kInvalidArgument naming the incompatible dims.
Result<Shape> BroadcastShapes(const std::vector<Shape>& shapes);
// Element strides of `in` when read as `out` (0 along broadcast dims). in.size() <= out.size().
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls f(out_index, offset_a, offset_b) for every element of `out`.
template <typename F>
void ForEachBroadcast2(const Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, F&& f) {
  const int r = static_cast<int>(out.size());
  int64_t n = ShapeElementCount(out);
  if (n <= 0) return;
  if (r == 0) { f(0, 0, 0); return; }
  std::vector<int64_t> idx(r, 0);
  int64_t oa = 0, ob = 0;
  const int64_t inner = out[r - 1], ia = sa[r - 1], ib = sb[r - 1];
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t k = 0; k < inner; ++k) f(i + k, oa + k * ia, ob + k * ib);
    for (int d = r - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < out[d]) break;
      oa -= sa[d] * out[d];
      ob -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// Calls f(out_index, offsets) for every element of `out`, offsets[k] into input k.
template <typename F>
void ForEachBroadcastN(const Shape& out, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  const int r = static_cast<int>(out.size());
  const size_t m = strides.size();
  int64_t n = ShapeElementCount(out);
  if (n <= 0) return;
  std::vector<int64_t> off(m, 0), idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < m; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < m; ++k) off[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace inferloop
