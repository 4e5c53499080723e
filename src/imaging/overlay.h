// Pictures for a human: a model's heatmap blended onto the input image, a segmentation mask's
// outline drawn on a gray slice, and a CT slice windowed to gray. The results are RGB Images
// (EncodePng in image_codec.h makes them files).
//
// Contract:
// - OverlayHeatmap: the heatmap (float [h, w], any range) is scaled to [0, 1] by its own min and
//   max (a constant map is all 0; NaN counts as the minimum), upsampled bilinearly (half-pixel,
//   as image_preprocess.h) to the image size, coloured by the fixed map below, and blended:
//   out = round((1 - alpha) * pixel + alpha * colour). Gray images are replicated to RGB, RGBA
//   loses its alpha.
//   Colour map (piecewise linear in t between the stops, a "jet"-like ramp):
//   t = 0 blue (0, 0, 255), 0.25 cyan (0, 255, 255), 0.5 green (0, 255, 0), 0.75 yellow
//   (255, 255, 0), 1 red (255, 0, 0).
// - OverlayMaskOutline: the mask (uint8 [h, w], non-zero = inside) has the image's size; an
//   inside pixel with a 4-neighbour outside the mask or outside the image is a boundary pixel
//   and is painted `colour`; every other pixel keeps the slice's gray (replicated to RGB).
// - WindowToGray: gray = round(255 * clamp((v - (center - width / 2)) / width, 0, 1)) (a linear
//   CT window; width > 0).
// - Size mismatches, alpha outside [0, 1], width <= 0: InvalidArgument.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "imaging/image.h"
#include "inferloop/status.h"

namespace inferloop::imaging {

// The colour map above at t (clamped to [0, 1]).
std::array<uint8_t, 3> HeatColour(float t);

Result<Image> OverlayHeatmap(const Image& image, std::span<const float> heatmap, int heat_height, int heat_width,
                             float alpha = 0.5f);

Result<Image> OverlayMaskOutline(const Image& slice, std::span<const uint8_t> mask, std::array<uint8_t, 3> colour);

Result<Image> WindowToGray(std::span<const float> slice, int height, int width, float center, float width_hu);

}  // namespace inferloop::imaging
