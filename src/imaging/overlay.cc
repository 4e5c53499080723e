// Heatmap blending, mask outlines and CT windowing (overlay.h).
#include "imaging/overlay.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "imaging/linear_taps.h"

namespace inferloop::imaging {
namespace {

// The image as RGB (gray replicated, alpha dropped).
Image ToRgb(const Image& image) {
  Image rgb;
  rgb.height = image.height;
  rgb.width = image.width;
  rgb.channels = 3;
  rgb.pixels.resize(image.PixelCount() * 3);
  for (size_t i = 0; i < image.PixelCount(); ++i)
    for (int k = 0; k < 3; ++k)
      rgb.pixels[i * 3 + k] = image.pixels[i * image.channels + (image.channels == 1 ? 0 : k)];
  return rgb;
}

// The heatmap scaled to [0, 1] by its min and max.
std::vector<float> NormalisedHeat(std::span<const float> heat) {
  float lo = INFINITY, hi = -INFINITY;
  for (float v : heat)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  std::vector<float> out(heat.size(), 0.0f);
  if (!(hi > lo)) return out;
  for (size_t i = 0; i < heat.size(); ++i) {
    const float v = std::isnan(heat[i]) ? lo : std::clamp(heat[i], lo, hi);
    out[i] = (v - lo) / (hi - lo);
  }
  return out;
}

}  // namespace

std::array<uint8_t, 3> HeatColour(float t) {
  static constexpr float kStops[5][3] = {{0, 0, 255}, {0, 255, 255}, {0, 255, 0}, {255, 255, 0}, {255, 0, 0}};
  t = std::isnan(t) ? 0.0f : std::clamp(t, 0.0f, 1.0f);
  const float x = t * 4.0f;
  const int i = std::min(static_cast<int>(x), 3);
  const float f = x - static_cast<float>(i);
  std::array<uint8_t, 3> c;
  for (int k = 0; k < 3; ++k)
    c[k] = static_cast<uint8_t>(std::lround(kStops[i][k] * (1.0f - f) + kStops[i + 1][k] * f));
  return c;
}

Result<Image> OverlayHeatmap(const Image& image, std::span<const float> heatmap, int heat_height, int heat_width,
                             float alpha) {
  IL_RETURN_IF_ERROR(CheckImage(image));
  if (heat_height < 1 || heat_width < 1 ||
      heatmap.size() != static_cast<size_t>(heat_height) * static_cast<size_t>(heat_width))
    return Status::InvalidArgument("heatmap holds " + std::to_string(heatmap.size()) + " values, not " +
                                   std::to_string(heat_height) + "x" + std::to_string(heat_width));
  if (!(alpha >= 0.0f && alpha <= 1.0f)) return Status::InvalidArgument("alpha " + std::to_string(alpha) + " is not in [0, 1]");
  const std::vector<float> heat = NormalisedHeat(heatmap);
  const std::vector<LinearTap> ty = LinearTaps(heat_height, image.height, 0, image.height);
  const std::vector<LinearTap> tx = LinearTaps(heat_width, image.width, 0, image.width);
  Image out = ToRgb(image);
  for (int y = 0; y < image.height; ++y) {
    const LinearTap& a = ty[y];
    const float* r0 = &heat[static_cast<size_t>(a.i0) * heat_width];
    const float* r1 = &heat[static_cast<size_t>(a.i1) * heat_width];
    for (int x = 0; x < image.width; ++x) {
      const LinearTap& b = tx[x];
      const float top = r0[b.i0] * (1.0f - b.w1) + r0[b.i1] * b.w1;
      const float bottom = r1[b.i0] * (1.0f - b.w1) + r1[b.i1] * b.w1;
      const std::array<uint8_t, 3> colour = HeatColour(top * (1.0f - a.w1) + bottom * a.w1);
      uint8_t* p = &out.pixels[(static_cast<size_t>(y) * image.width + x) * 3];
      for (int k = 0; k < 3; ++k) p[k] = static_cast<uint8_t>(std::lround((1.0f - alpha) * p[k] + alpha * colour[k]));
    }
  }
  return out;
}

Result<Image> OverlayMaskOutline(const Image& slice, std::span<const uint8_t> mask, std::array<uint8_t, 3> colour) {
  IL_RETURN_IF_ERROR(CheckImage(slice));
  if (mask.size() != slice.PixelCount())
    return Status::InvalidArgument("mask holds " + std::to_string(mask.size()) + " values, the slice is " +
                                   std::to_string(slice.width) + "x" + std::to_string(slice.height));
  Image out = ToRgb(slice);
  const int h = slice.height, w = slice.width;
  auto inside = [&](int y, int x) { return y >= 0 && y < h && x >= 0 && x < w && mask[static_cast<size_t>(y) * w + x] != 0; };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      if (!inside(y, x)) continue;
      if (inside(y - 1, x) && inside(y + 1, x) && inside(y, x - 1) && inside(y, x + 1)) continue;
      std::copy(colour.begin(), colour.end(), &out.pixels[(static_cast<size_t>(y) * w + x) * 3]);
    }
  return out;
}

Result<Image> WindowToGray(std::span<const float> slice, int height, int width, float center, float width_hu) {
  if (height < 1 || width < 1 || slice.size() != static_cast<size_t>(height) * static_cast<size_t>(width))
    return Status::InvalidArgument("slice holds " + std::to_string(slice.size()) + " values, not " + std::to_string(height) +
                                   "x" + std::to_string(width));
  if (!(width_hu > 0.0f) || !std::isfinite(center))
    return Status::InvalidArgument("window width " + std::to_string(width_hu) + " must be positive, center finite");
  Image out;
  out.height = height, out.width = width, out.channels = 1;
  out.pixels.resize(slice.size());
  const float lo = center - width_hu / 2.0f;
  for (size_t i = 0; i < slice.size(); ++i) {
    const float t = std::isnan(slice[i]) ? 0.0f : std::clamp((slice[i] - lo) / width_hu, 0.0f, 1.0f);
    out.pixels[i] = static_cast<uint8_t>(std::lround(255.0f * t));
  }
  return out;
}

}  // namespace inferloop::imaging
