#include "compute/broadcast.h"

#include <algorithm>

namespace inferloop {

Result<Shape> BroadcastShapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[s.size() - 1 - i];
      int64_t& o = out[rank - 1 - i];
      if (d == o || d == 1) continue;
      if (o == 1) { o = d; continue; }
      std::string all;
      for (const auto& x : shapes) all += (all.empty() ? "" : " and ") + ShapeToString(x);
      return Status::InvalidArgument("shapes " + all + " cannot be broadcast together");
    }
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  const size_t off = out.size() - in.size();
  for (size_t i = in.size(); i-- > 0;) {
    strides[off + i] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return strides;
}

}  // namespace inferloop
