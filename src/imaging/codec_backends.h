// The libjpeg-turbo and libpng halves of image_codec.h (internal to imaging/). Each reads the
// header alone, or decodes into a caller-owned buffer of info.height * info.width * info.channels
// bytes in the channel layout the header gave (ImageInfo::channels).
#pragma once

#include <cstdint>
#include <string_view>

#include "imaging/image_codec.h"

namespace inferloop::imaging {

Result<ImageInfo> ReadJpegInfo(std::string_view bytes);
Status DecodeJpegInto(std::string_view bytes, const ImageInfo& info, uint8_t* out);

Result<ImageInfo> ReadPngInfo(std::string_view bytes);
Status DecodePngInto(std::string_view bytes, const ImageInfo& info, uint8_t* out);

}  // namespace inferloop::imaging
