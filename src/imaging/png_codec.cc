// PNG reading (codec_backends.h) and writing (EncodePng, image_codec.h) through libpng. libpng
// reports errors by longjmp from its error hook: the functions holding setjmp keep only plain C
// objects in their frames, so nothing with a destructor is skipped.
#include <cstdio>
#include <cstring>
#include <string>

#include "base/status_macros.h"
#include "imaging/codec_backends.h"

#ifdef INFERLOOP_HAVE_LIBPNG
#include <png.h>
#endif

namespace inferloop::imaging {

#ifdef INFERLOOP_HAVE_LIBPNG
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[200];
};

void PngRead(png_structp png, png_bytep out, png_size_t len) {
  PngSource* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (len > s->size - s->pos) png_error(png, "file is truncated");
  std::memcpy(out, s->data + s->pos, len);
  s->pos += len;
}

void PngError(png_structp png, png_const_charp m) {
  char* message = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(message, 200, "%s", m);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

// The channel count the image decodes to (ImageInfo::channels): gray 1, colour 3, any alpha or
// tRNS transparency 4 (gray + alpha is widened to RGBA).
int NativeChannels(png_structp png, png_infop info) {
  const int color = png_get_color_type(png, info);
  const bool alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
  if (alpha) return 4;
  return (color == PNG_COLOR_TYPE_GRAY) ? 1 : 3;
}

// Reads the header into height/width/channels; with out != nullptr they are inputs instead, the
// size `out` was made for, checked against the header before decoding into out. Returns 0 on
// success, else fills src->message. Plain C objects only in this frame (see the file comment).
int PngDecodeRaw(PngSource* src, int* height, int* width, int* channels, uint8_t* out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, src->message, PngError, PngWarning);
  if (!png) {
    std::snprintf(src->message, sizeof(src->message), "cannot create decoder");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    if (!src->message[0]) std::snprintf(src->message, sizeof(src->message), "decoding failed");
    return 1;
  }
  src->pos = 0;
  png_set_read_fn(png, src, PngRead);
  png_set_user_limits(png, 1u << 24, 1u << 24);
  png_read_info(png, info);
  const int h = static_cast<int>(png_get_image_height(png, info));
  const int w = static_cast<int>(png_get_image_width(png, info));
  const int c = NativeChannels(png, info);
  if (!out) {
    *height = h, *width = w, *channels = c;
    png_destroy_read_struct(&png, &info, nullptr);
    return 0;
  }
  if (h != *height || w != *width || c != *channels) png_error(png, "header differs from the one read before");
  const int color = png_get_color_type(png, info);
  png_set_expand(png);  // palette -> RGB, low-bit gray -> 8 bit, tRNS -> alpha
  png_set_strip_16(png);
  if (c == 4 && !(color & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t stride = static_cast<size_t>(w) * static_cast<size_t>(c);
  if (png_get_channels(png, info) != c || png_get_rowbytes(png, info) != stride)
    png_error(png, "unexpected output layout");
  for (int p = 0; p < passes; ++p)
    for (int y = 0; y < h; ++y) png_read_row(png, out + static_cast<size_t>(y) * stride, nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

void PngWrite(png_structp png, png_bytep data, png_size_t len) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), len);
}
void PngFlush(png_structp) {}

// Writes rows of `pixels` into *out. Returns 0 on success, else fills message (200 bytes).
// Plain C objects only in this frame; *out is appended to only inside PngWrite.
int PngEncodeRaw(const uint8_t* pixels, int height, int width, int channels, std::string* out, char* message) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, message, PngError, PngWarning);
  if (!png) {
    std::snprintf(message, 200, "cannot create encoder");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, info ? &info : nullptr);
    if (!message[0]) std::snprintf(message, 200, "encoding failed");
    return 1;
  }
  png_set_write_fn(png, out, PngWrite, PngFlush);
  const int color = channels == 1 ? PNG_COLOR_TYPE_GRAY : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA;
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, color,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t stride = static_cast<size_t>(width) * static_cast<size_t>(channels);
  for (int y = 0; y < height; ++y) png_write_row(png, pixels + static_cast<size_t>(y) * stride);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return 0;
}

}  // namespace

Result<ImageInfo> ReadPngInfo(std::string_view bytes) {
  PngSource src{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, {0}};
  ImageInfo info;
  info.format = ImageFormat::kPng;
  if (PngDecodeRaw(&src, &info.height, &info.width, &info.channels, nullptr))
    return Status::InvalidArgument(std::string("PNG: ") + src.message);
  return info;
}

Status DecodePngInto(std::string_view bytes, const ImageInfo& info, uint8_t* out) {
  PngSource src{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, {0}};
  int h = info.height, w = info.width, c = info.channels;
  if (PngDecodeRaw(&src, &h, &w, &c, out)) return Status::InvalidArgument(std::string("PNG: ") + src.message);
  return Status::Ok();
}

Result<std::string> EncodePng(const Image& image) {
  IL_RETURN_IF_ERROR(CheckImage(image));
  std::string out;
  char message[200] = {0};
  if (PngEncodeRaw(image.pixels.data(), image.height, image.width, image.channels, &out, message))
    return Status::Internal(std::string("PNG encoding: ") + message);
  return out;
}

#else

Result<ImageInfo> ReadPngInfo(std::string_view) {
  return Status::Unimplemented("PNG decoding needs libpng, which this build was configured without");
}
Status DecodePngInto(std::string_view, const ImageInfo&, uint8_t*) {
  return Status::Unimplemented("PNG decoding needs libpng, which this build was configured without");
}
Result<std::string> EncodePng(const Image&) {
  return Status::Unimplemented("PNG encoding needs libpng, which this build was configured without");
}

#endif

}  // namespace inferloop::imaging
