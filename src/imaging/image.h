// Image: 8-bit pixels, rows top to bottom, channels interleaved (HWC), as the codecs give them
// and the preprocessing steps take them. Plain data; `pixels.size() == height * width * channels`.
#pragma once

#include <cstdint>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::imaging {

struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;  // 1 (gray), 3 (RGB) or 4 (RGBA)
  std::vector<uint8_t> pixels;

  size_t PixelCount() const { return static_cast<size_t>(height) * static_cast<size_t>(width); }
};

// InvalidArgument unless the sizes are positive, channels is 1, 3 or 4 and `pixels` holds
// exactly height * width * channels bytes.
Status CheckImage(const Image& image);

}  // namespace inferloop::imaging
