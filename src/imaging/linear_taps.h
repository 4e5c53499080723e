// The per-axis sample positions of a half-pixel bilinear resize (internal to imaging/: shared by
// image_preprocess.cc and overlay.cc).
#pragma once

#include <vector>

namespace inferloop::imaging {

// One output coordinate's two source taps: value = v[i0] * (1 - w1) + v[i1] * w1.
struct LinearTap {
  int i0 = 0;
  int i1 = 0;
  float w1 = 0.0f;
};

// Taps for output coordinates first .. first + count - 1 of a src -> dst resize: output x samples
// source (x + 0.5) * src / dst - 0.5, clamped to [0, src - 1] (ONNX Resize, half_pixel).
std::vector<LinearTap> LinearTaps(int src, int dst, int first, int count);

}  // namespace inferloop::imaging
