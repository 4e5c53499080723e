#include "imaging/image.h"

#include <string>

namespace inferloop::imaging {

Status CheckImage(const Image& image) {
  if (image.height <= 0 || image.width <= 0)
    return Status::InvalidArgument("image size " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                                   " is not positive");
  if (image.channels != 1 && image.channels != 3 && image.channels != 4)
    return Status::InvalidArgument("image has " + std::to_string(image.channels) + " channels (expected 1, 3 or 4)");
  if (image.pixels.size() != image.PixelCount() * static_cast<size_t>(image.channels))
    return Status::InvalidArgument("image holds " + std::to_string(image.pixels.size()) + " bytes, expected " +
                                   std::to_string(image.PixelCount() * static_cast<size_t>(image.channels)));
  return Status::Ok();
}

}  // namespace inferloop::imaging
