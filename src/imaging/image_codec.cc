// Format sniffing, the pixel limit and channel conversion around the JPEG and PNG backends
// (image_codec.h).
#include "imaging/image_codec.h"

#include <cstring>
#include <string>

#include "base/status_macros.h"
#include "imaging/codec_backends.h"

namespace inferloop::imaging {
namespace {

bool StartsWith(std::string_view bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

// Pillow's convert("L") weights (ITU-R 601-2 luma in 16-bit fixed point).
uint8_t Luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
}

// `from` as an image of `channels` channels (see image_codec.h for the rules).
Image ConvertChannels(const Image& from, int channels) {
  Image to;
  to.height = from.height;
  to.width = from.width;
  to.channels = channels;
  to.pixels.resize(from.PixelCount() * static_cast<size_t>(channels));
  const int fc = from.channels;
  for (size_t i = 0; i < from.PixelCount(); ++i) {
    const uint8_t* s = &from.pixels[i * static_cast<size_t>(fc)];
    uint8_t* d = &to.pixels[i * static_cast<size_t>(channels)];
    if (channels == 1) {
      d[0] = fc == 1 ? s[0] : Luma(s);
      continue;
    }
    for (int k = 0; k < 3; ++k) d[k] = fc == 1 ? s[0] : s[k];
    if (channels == 4) d[3] = fc == 4 ? s[3] : 255;
  }
  return to;
}

}  // namespace

ImageFormat SniffImageFormat(std::string_view bytes) {
  if (StartsWith(bytes, std::string_view("\xff\xd8\xff", 3))) return ImageFormat::kJpeg;
  if (StartsWith(bytes, std::string_view("\x89PNG\r\n\x1a\n", 8))) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

Result<ImageInfo> ReadImageInfo(std::string_view bytes) {
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kJpeg: return ReadJpegInfo(bytes);
    case ImageFormat::kPng: return ReadPngInfo(bytes);
    case ImageFormat::kUnknown: break;
  }
  return Status::InvalidArgument("unrecognized image format (neither JPEG nor PNG magic bytes)");
}

Result<Image> DecodeImage(std::string_view bytes, const DecodeLimits& limits, int channels) {
  if (limits.max_pixels <= 0)
    return Status::InvalidArgument("DecodeLimits.max_pixels must be positive, got " + std::to_string(limits.max_pixels));
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4)
    return Status::InvalidArgument("requested " + std::to_string(channels) + " channels (expected 0, 1, 3 or 4)");
  IL_ASSIGN_OR_RETURN(ImageInfo info, ReadImageInfo(bytes));
  if (info.height <= 0 || info.width <= 0)
    return Status::InvalidArgument("image size " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                                   " is not positive");
  const int64_t pixels = int64_t{info.height} * int64_t{info.width};
  if (pixels > limits.max_pixels)
    return Status::InvalidArgument("image " + std::to_string(info.width) + "x" + std::to_string(info.height) + " has " +
                                   std::to_string(pixels) + " pixels, over the limit of " +
                                   std::to_string(limits.max_pixels));
  Image image;
  image.height = info.height;
  image.width = info.width;
  image.channels = info.channels;
  image.pixels.resize(image.PixelCount() * static_cast<size_t>(info.channels));
  if (info.format == ImageFormat::kJpeg) IL_RETURN_IF_ERROR(DecodeJpegInto(bytes, info, image.pixels.data()));
  else IL_RETURN_IF_ERROR(DecodePngInto(bytes, info, image.pixels.data()));
  if (channels == 0 || channels == image.channels) return image;
  return ConvertChannels(image, channels);
}

}  // namespace inferloop::imaging
