// DecodeImage / EncodePng against pixels nobody here decoded: ONNX's ImageDecoder reference
// outputs (Pillow) for its JPEG and PNG, and PNGs written by make_fixtures.py from NumPy arrays.
#include "imaging/image_codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "unit/imaging/fixtures.h"

namespace inferloop::imaging {
namespace {

using testing::ReadFixtureBytes;
using testing::ReadFixtureNpy;

// Expects `image` to equal the HWC uint8 array in `npy` exactly.
void ExpectPixels(const Image& image, const std::string& npy) {
  Tensor want = ReadFixtureNpy(npy);
  ASSERT_EQ(want.dtype(), DataType::kUInt8) << npy;
  ASSERT_EQ(want.rank(), 3) << npy;
  ASSERT_EQ(image.height, want.shape()[0]) << npy;
  ASSERT_EQ(image.width, want.shape()[1]) << npy;
  ASSERT_EQ(image.channels, want.shape()[2]) << npy;
  int mismatches = 0;
  for (size_t i = 0; i < image.pixels.size(); ++i)
    if (image.pixels[i] != want.data<uint8_t>()[i] && ++mismatches <= 5)
      ADD_FAILURE() << npy << " byte " << i << ": " << int(image.pixels[i]) << " vs " << int(want.data<uint8_t>()[i]);
}

Image Decode(const std::string& file, int channels = 0) {
  auto r = DecodeImage(ReadFixtureBytes(file), DecodeLimits{}, channels);
  EXPECT_TRUE(r.ok()) << file << ": " << r.status().ToString();
  return r.ok() ? std::move(*r) : Image();
}

TEST(ImageCodec, OnnxJpegAndPngMatchTheReferenceDecoder) {
  ExpectPixels(Decode("codec_onnx_jpeg.jpg"), "codec_onnx_jpeg_rgb.npy");
  ExpectPixels(Decode("codec_onnx_jpeg.jpg", 1), "codec_onnx_jpeg_gray.npy");  // Pillow's convert("L")
  ExpectPixels(Decode("codec_onnx_png.png"), "codec_onnx_png_rgb.npy");
  EXPECT_EQ(SniffImageFormat(ReadFixtureBytes("codec_onnx_jpeg.jpg")), ImageFormat::kJpeg);
  EXPECT_EQ(SniffImageFormat(ReadFixtureBytes("codec_onnx_png.png")), ImageFormat::kPng);
}

TEST(ImageCodec, PngChannelsAsTheFileHasThem) {
  for (const char* name : {"gray", "rgba", "gray_alpha", "rgb16", "interlaced_rgba", "palette_trns"})
    ExpectPixels(Decode(std::string("codec_") + name + ".png"), std::string("codec_") + name + ".npy");
  auto info = ReadImageInfo(ReadFixtureBytes("codec_palette_trns.png"));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->format, ImageFormat::kPng);
  EXPECT_EQ(info->height, 5);
  EXPECT_EQ(info->width, 7);
  EXPECT_EQ(info->channels, 4);
}

TEST(ImageCodec, RequestedChannelCounts) {
  const Image gray = Decode("codec_gray.png");
  const Image gray3 = Decode("codec_gray.png", 3);
  const Image rgba = Decode("codec_rgba.png");
  const Image rgb = Decode("codec_rgba.png", 3);
  const Image rgba1 = Decode("codec_rgba.png", 1);
  const Image gray4 = Decode("codec_gray.png", 4);
  ASSERT_EQ(gray3.channels, 3);
  ASSERT_EQ(rgb.channels, 3);
  ASSERT_EQ(rgba1.channels, 1);
  ASSERT_EQ(gray4.channels, 4);
  for (size_t i = 0; i < gray.PixelCount(); ++i) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(gray3.pixels[i * 3 + k], gray.pixels[i]);
      EXPECT_EQ(gray4.pixels[i * 4 + k], gray.pixels[i]);
      EXPECT_EQ(rgb.pixels[i * 3 + k], rgba.pixels[i * 4 + k]);  // alpha dropped, not composited
    }
    EXPECT_EQ(gray4.pixels[i * 4 + 3], 255);
    const uint8_t* p = &rgba.pixels[i * 4];
    EXPECT_EQ(rgba1.pixels[i], (p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
  }
}

// A PNG header (signature + IHDR with a valid CRC) claiming width x height, and no pixel data.
std::string PngHeaderOnly(uint32_t width, uint32_t height) {
  std::string png = ReadFixtureBytes("codec_gray.png");
  auto be32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  be32(16, width);
  be32(20, height);
  uint32_t crc = 0xffffffffu;  // CRC-32 of "IHDR" + its 13 bytes (PNG's CRC, as zlib's crc32)
  for (size_t i = 12; i < 29; ++i) {
    crc ^= static_cast<uint8_t>(png[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  be32(29, crc ^ 0xffffffffu);
  return png;
}

TEST(ImageCodec, PixelLimitIsCheckedFromTheHeader) {
  // 100 megapixels declared; the file holds a 5x7 image's data, so only the header was read.
  auto r = DecodeImage(PngHeaderOnly(10000, 10000), DecodeLimits{50'000'000});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("100000000"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("50000000"), std::string::npos) << r.status().ToString();
  // The same JPEG with its frame header (SOF0: FF C0 len P height width) saying 10000x10000.
  std::string jpg = ReadFixtureBytes("codec_onnx_jpeg.jpg");
  const size_t sof = jpg.find("\xff\xc0", 0, 2);
  ASSERT_NE(sof, std::string::npos);
  jpg[sof + 5] = jpg[sof + 7] = static_cast<char>(10000 >> 8);
  jpg[sof + 6] = jpg[sof + 8] = static_cast<char>(10000 & 0xff);
  r = DecodeImage(jpg, DecodeLimits{1'000'000});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("10000x10000 has 100000000 pixels, over the limit of 1000000"), std::string::npos)
      << r.status().ToString();
  // Exactly at the limit is allowed.
  EXPECT_TRUE(DecodeImage(ReadFixtureBytes("codec_gray.png"), DecodeLimits{35}).ok());
  EXPECT_FALSE(DecodeImage(ReadFixtureBytes("codec_gray.png"), DecodeLimits{34}).ok());
}

TEST(ImageCodec, BadArgumentsAndUnknownFormats) {
  const std::string png = ReadFixtureBytes("codec_gray.png");
  EXPECT_EQ(DecodeImage(png, DecodeLimits{0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeImage(png, DecodeLimits{}, 2).status().code(), StatusCode::kInvalidArgument);
  auto r = DecodeImage("BM not an image", DecodeLimits{});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unrecognized image format"), std::string::npos);
  EXPECT_EQ(DecodeImage("", DecodeLimits{}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ImageCodec, EveryTruncationIsAnError) {
  for (const char* file : {"codec_onnx_jpeg.jpg", "codec_onnx_png.png", "codec_interlaced_rgba.png"}) {
    const std::string bytes = ReadFixtureBytes(file);
    for (size_t len = 0; len < bytes.size(); ++len) {
      auto r = DecodeImage(std::string_view(bytes).substr(0, len), DecodeLimits{});
      ASSERT_FALSE(r.ok()) << file << " cut to " << len;
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << file << " cut to " << len << ": " << r.status().ToString();
    }
  }
}

TEST(ImageCodec, CorruptBytesNeverCrash) {
  std::mt19937 rng(15);
  for (const char* file : {"codec_onnx_jpeg.jpg", "codec_onnx_png.png", "codec_palette_trns.png"}) {
    const std::string bytes = ReadFixtureBytes(file);
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = bytes;
      for (int k = 0; k < 4; ++k) bad[3 + rng() % (bad.size() - 3)] = static_cast<char>(rng());
      auto r = DecodeImage(bad, DecodeLimits{1 << 20});
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
      } else {
        EXPECT_TRUE(CheckImage(*r).ok());
      }
    }
  }
  // PNG: a flipped bit in IDAT fails its CRC.
  std::string png = ReadFixtureBytes("codec_gray.png");
  png[png.find("IDAT") + 6] ^= 1;
  EXPECT_EQ(DecodeImage(png, DecodeLimits{}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ImageCodec, EncodePngRoundTrips) {
  std::mt19937 rng(7);
  for (int channels : {1, 3, 4}) {
    Image image;
    image.height = 9;
    image.width = 13;
    image.channels = channels;
    image.pixels.resize(image.PixelCount() * channels);
    for (auto& p : image.pixels) p = static_cast<uint8_t>(rng());
    auto png = EncodePng(image);
    ASSERT_TRUE(png.ok()) << png.status().ToString();
    EXPECT_EQ(SniffImageFormat(*png), ImageFormat::kPng);
    auto back = DecodeImage(*png, DecodeLimits{});
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->channels, channels);
    EXPECT_EQ(back->pixels, image.pixels);
  }
  Image bad;
  bad.height = 2, bad.width = 2, bad.channels = 3;
  bad.pixels.resize(5);
  EXPECT_EQ(EncodePng(bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop::imaging
