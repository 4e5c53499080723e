// Image codecs: JPEG (libjpeg-turbo) and PNG (libpng) bytes to an Image, and an Image to PNG.
//
// Contract:
// - The format is sniffed from the magic bytes (JPEG FF D8 FF, PNG 89 'PNG' 0D 0A 1A 0A); other
//   bytes are InvalidArgument ("unrecognized image format").
// - The image size is read from the header and checked against DecodeLimits::max_pixels BEFORE
//   any pixel is decompressed or any pixel buffer allocated; a larger image is InvalidArgument
//   naming both numbers.
// - Channels as the file has them: gray JPEG/PNG -> 1, colour -> 3, PNG with alpha (RGBA, gray +
//   alpha, palette with tRNS) -> 4 (gray + alpha becomes RGBA). 16-bit PNG samples keep their high
//   byte. A requested channel count (1, 3 or 4) converts: gray -> RGB replicates; RGB(A) -> gray is
//   Pillow's convert("L"), L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16; RGBA -> RGB drops alpha
//   (no compositing); -> RGBA adds alpha 255.
// - Corrupt or truncated data (a JPEG ending before its last scanline included) is
//   InvalidArgument with the codec's message, never a crash: libjpeg/libpng report errors by
//   longjmp, which only crosses frames holding plain C objects. CMYK JPEGs are InvalidArgument.
// - A build configured without libjpeg or libpng reports Unimplemented for that format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "imaging/image.h"
#include "inferloop/status.h"

namespace inferloop::imaging {

enum class ImageFormat { kUnknown, kJpeg, kPng };

// The format named by the first bytes, or kUnknown.
ImageFormat SniffImageFormat(std::string_view bytes);

struct DecodeLimits {
  int64_t max_pixels = int64_t{1} << 26;  // width * height; must be positive
};

// What the header says: size and the channel count DecodeImage gives with channels == 0.
struct ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  int height = 0;
  int width = 0;
  int channels = 0;
};

// Reads only the header (no limit is applied).
Result<ImageInfo> ReadImageInfo(std::string_view bytes);

// Decodes JPEG or PNG bytes. channels: 0 = as the file has them, else 1, 3 or 4.
Result<Image> DecodeImage(std::string_view bytes, const DecodeLimits& limits, int channels = 0);

// Encodes an 8-bit gray, RGB or RGBA Image as PNG (default compression, no interlacing).
Result<std::string> EncodePng(const Image& image);

}  // namespace inferloop::imaging
