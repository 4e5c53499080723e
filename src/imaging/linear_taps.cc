#include "imaging/linear_taps.h"

#include <algorithm>

namespace inferloop::imaging {

std::vector<LinearTap> LinearTaps(int src, int dst, int first, int count) {
  std::vector<LinearTap> taps(static_cast<size_t>(count));
  const double ratio = static_cast<double>(src) / static_cast<double>(dst);
  for (int k = 0; k < count; ++k) {
    double x = (static_cast<double>(first + k) + 0.5) * ratio - 0.5;
    x = std::clamp(x, 0.0, static_cast<double>(src - 1));
    LinearTap& t = taps[static_cast<size_t>(k)];
    t.i0 = std::min(static_cast<int>(x), src - 1);
    t.i1 = std::min(t.i0 + 1, src - 1);
    t.w1 = static_cast<float>(x - t.i0);
  }
  return taps;
}

}  // namespace inferloop::imaging
