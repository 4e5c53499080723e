// JPEG decoding through libjpeg(-turbo) (codec_backends.h). libjpeg reports errors by longjmp
// from its error_exit hook: the functions holding setjmp keep only plain C objects in their
// frames, so nothing with a destructor is skipped.
#include <cstdio>
#include <cstring>
#include <string>

#include "imaging/codec_backends.h"

#ifdef INFERLOOP_HAVE_LIBJPEG
#include <csetjmp>

#include <jpeglib.h>
// (jerror.h after jpeglib.h: the message codes, JWRN_JPEG_EOF)
#include <jerror.h>
#endif

namespace inferloop::imaging {

#ifdef INFERLOOP_HAVE_LIBJPEG
namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int truncated;  // libjpeg hit the end of the data and padded (a warning to libjpeg, an error here)
};

void JpegErrorExit(j_common_ptr cinfo) {
  JpegError* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  longjmp(e->jump, 1);
}

void JpegEmitMessage(j_common_ptr cinfo, int level) {
  JpegError* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) e->truncated = 1;
}

// Reads the header into height/width/channels; with out != nullptr they are inputs instead, the
// size `out` was made for, checked against the header before decoding into out. Returns 0 on
// success, else fills message. Plain C objects only in this frame (see the file comment).
int JpegDecodeRaw(const uint8_t* data, size_t size, int* height, int* width, int* channels, uint8_t* out,
                  char* message, size_t message_size) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  std::memset(&err, 0, sizeof(err));
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegEmitMessage;
  if (setjmp(err.jump)) {
    std::snprintf(message, message_size, "%s", err.message);
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(message, message_size, "CMYK images are not supported");
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  const int gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  if (!out) {
    *height = static_cast<int>(cinfo.image_height);
    *width = static_cast<int>(cinfo.image_width);
    *channels = gray ? 1 : 3;
    jpeg_destroy_decompress(&cinfo);
    return 0;
  }
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != *channels || static_cast<int>(cinfo.output_height) != *height ||
      static_cast<int>(cinfo.output_width) != *width) {
    std::snprintf(message, message_size, "unexpected output layout");
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  const size_t stride = static_cast<size_t>(*width) * static_cast<size_t>(*channels);
  while (cinfo.output_scanline < cinfo.output_height && !err.truncated) {
    JSAMPROW row = out + static_cast<size_t>(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  if (!err.truncated) jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (err.truncated) {
    std::snprintf(message, message_size, "data ends before the last scanline (truncated file)");
    return 1;
  }
  return 0;
}

}  // namespace

Result<ImageInfo> ReadJpegInfo(std::string_view bytes) {
  char message[JMSG_LENGTH_MAX + 64] = {0};
  ImageInfo info;
  info.format = ImageFormat::kJpeg;
  if (JpegDecodeRaw(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &info.height, &info.width,
                    &info.channels, nullptr, message, sizeof(message)))
    return Status::InvalidArgument(std::string("JPEG: ") + message);
  return info;
}

Status DecodeJpegInto(std::string_view bytes, const ImageInfo& info, uint8_t* out) {
  char message[JMSG_LENGTH_MAX + 64] = {0};
  int h = info.height, w = info.width, c = info.channels;
  if (JpegDecodeRaw(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &h, &w, &c, out, message,
                    sizeof(message)))
    return Status::InvalidArgument(std::string("JPEG: ") + message);
  return Status::Ok();
}

#else

Result<ImageInfo> ReadJpegInfo(std::string_view) {
  return Status::Unimplemented("JPEG decoding needs libjpeg, which this build was configured without");
}
Status DecodeJpegInto(std::string_view, const ImageInfo&, uint8_t*) {
  return Status::Unimplemented("JPEG decoding needs libjpeg, which this build was configured without");
}

#endif

}  // namespace inferloop::imaging
