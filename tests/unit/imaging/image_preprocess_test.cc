// Resize against ONNX Runtime's Resize (linear, half_pixel, antialias 0; make_fixtures.py) and
// known values; fit modes, normalisation, layouts and the batch slot writer.
#include "imaging/image_preprocess.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "unit/imaging/fixtures.h"

namespace inferloop::imaging {
namespace {

using testing::ReadFixtureNpy;

Image FromTensor(const Tensor& t) {
  Image image;
  image.height = static_cast<int>(t.shape()[0]);
  image.width = static_cast<int>(t.shape()[1]);
  image.channels = static_cast<int>(t.shape()[2]);
  image.pixels.assign(t.data<uint8_t>(), t.data<uint8_t>() + t.size());
  return image;
}

Image Filled(int h, int w, int c, std::vector<uint8_t> pixels) {
  Image image;
  image.height = h, image.width = w, image.channels = c;
  image.pixels = std::move(pixels);
  return image;
}

TEST(ImagePreprocess, ResizeMatchesOnnxRuntime) {
  for (const char* name : {"up", "down2", "down_odd", "mixed", "line"}) {
    const Tensor in = ReadFixtureNpy(std::string("resize_") + name + "_in.npy");
    const Tensor want = ReadFixtureNpy(std::string("resize_") + name + "_out.npy");
    ASSERT_EQ(want.dtype(), DataType::kFloat);
    auto got = ResizeBilinear(FromTensor(in), static_cast<int>(want.shape()[0]), static_cast<int>(want.shape()[1]));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), static_cast<size_t>(want.size())) << name;
    for (size_t i = 0; i < got->size(); ++i) EXPECT_NEAR((*got)[i], want.data<float>()[i], 1e-3) << name << " " << i;
  }
}

TEST(ImagePreprocess, ResizeKnownValues) {
  // A constant image stays constant at any size.
  auto c = ResizeBilinear(Filled(3, 5, 1, std::vector<uint8_t>(15, 77)), 8, 2);
  ASSERT_TRUE(c.ok());
  for (float v : *c) EXPECT_FLOAT_EQ(v, 77.0f);
  // 2x2 -> 4x4 with half-pixel centres: source coordinates -0.25 (clamped to 0), 0.25, 0.75,
  // 1.25 (clamped to 1), so each row is [a, .75a + .25b, .25a + .75b, b].
  auto r = ResizeBilinear(Filled(2, 2, 1, {0, 40, 80, 120}), 4, 4);
  ASSERT_TRUE(r.ok());
  const float want[16] = {0, 10, 30, 40, 20, 30, 50, 60, 60, 70, 90, 100, 80, 90, 110, 120};
  for (int i = 0; i < 16; ++i) EXPECT_FLOAT_EQ((*r)[i], want[i]) << i;
  EXPECT_FALSE(ResizeBilinear(Filled(2, 2, 1, {0, 1, 2}), 4, 4).ok());
  EXPECT_FALSE(ResizeBilinear(Filled(2, 2, 1, {0, 1, 2, 3}), 0, 4).ok());
}

TEST(ImagePreprocess, SpecCheckNamesTheBadField) {
  auto message = [](PreprocessSpec s) { return s.Check().message(); };
  PreprocessSpec s;
  EXPECT_TRUE(s.Check().ok());
  s.std = {1, 0, 1};
  EXPECT_NE(message(s).find("PreprocessSpec.std[1]"), std::string::npos) << message(s);
  s = {};
  s.mean = {1, 2};
  EXPECT_NE(message(s).find("PreprocessSpec.mean has 2 values"), std::string::npos) << message(s);
  s = {};
  s.channels = 4;
  EXPECT_NE(message(s).find("PreprocessSpec.channels"), std::string::npos);
  s = {};
  s.width = 0;
  EXPECT_NE(message(s).find("PreprocessSpec.height x width"), std::string::npos);
  s = {};
  s.channels = 1;
  s.order = ChannelOrder::kBGR;
  EXPECT_NE(message(s).find("PreprocessSpec.order"), std::string::npos);
}

// Resized image `src` (h x w x c HWC float) as a model would see it after a stretch.
TEST(ImagePreprocess, StretchNormalisesPerChannelInBothLayoutsAndOrders) {
  const Image image = FromTensor(ReadFixtureNpy("resize_up_in.npy"));  // 4x5x3
  auto resized = ResizeBilinear(image, 9, 11);
  ASSERT_TRUE(resized.ok());
  PreprocessSpec spec;
  spec.height = 9, spec.width = 11;
  spec.mean = {0.485f, 0.456f, 0.406f};
  spec.std = {0.229f, 0.224f, 0.225f};
  for (auto layout : {TensorLayout::kNCHW, TensorLayout::kNHWC})
    for (auto order : {ChannelOrder::kRGB, ChannelOrder::kBGR}) {
      spec.layout = layout, spec.order = order;
      std::vector<float> out(spec.ElementCount());
      ASSERT_TRUE(PreprocessImage(image, spec, std::span<float>(out)).ok());
      for (int y = 0; y < 9; ++y)
        for (int x = 0; x < 11; ++x)
          for (int oc = 0; oc < 3; ++oc) {
            const int ic = order == ChannelOrder::kBGR ? 2 - oc : oc;
            const float v = (*resized)[(y * 11 + x) * 3 + ic];
            const float want = (v / 255.0f - spec.mean[oc]) / spec.std[oc];
            const size_t at = layout == TensorLayout::kNCHW ? (oc * 9 + y) * 11 + x : (y * 11 + x) * 3 + oc;
            EXPECT_NEAR(out[at], want, 1e-5) << y << "," << x << "," << oc;
          }
    }
}

TEST(ImagePreprocess, LetterboxCentresAndPads) {
  // 2x4 gray into 6x6: scale min(3, 1.5) = 1.5 -> 3x6, offset (1, 0); rows 0, 4, 5 are padding.
  const Image image = Filled(2, 4, 1, {10, 20, 30, 40, 50, 60, 70, 80});
  PreprocessSpec spec;
  spec.height = 6, spec.width = 6, spec.channels = 1, spec.fit = FitMode::kLetterbox, spec.pad_value = 114;
  spec.scale = 1.0f;
  auto fit = ComputeFit(2, 4, spec);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->resized_height, 3);
  EXPECT_EQ(fit->resized_width, 6);
  EXPECT_EQ(fit->offset_y, 1);
  EXPECT_EQ(fit->offset_x, 0);
  std::vector<float> out(36);
  ASSERT_TRUE(PreprocessImage(image, spec, std::span<float>(out)).ok());
  auto resized = ResizeBilinear(image, 3, 6);
  ASSERT_TRUE(resized.ok());
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 6; ++x) {
      const float want = (y >= 1 && y < 4) ? (*resized)[(y - 1) * 6 + x] : 114.0f;
      EXPECT_FLOAT_EQ(out[y * 6 + x], want) << y << "," << x;
    }
  // uint8 output: the same values rounded.
  spec.element_type = ElementType::kUInt8;
  std::vector<uint8_t> u8(36);
  ASSERT_TRUE(PreprocessImage(image, spec, std::span<uint8_t>(u8)).ok());
  for (int i = 0; i < 36; ++i) EXPECT_EQ(u8[i], static_cast<uint8_t>(std::lround(out[i]))) << i;
  // The wrong buffer type for the spec is refused.
  EXPECT_FALSE(PreprocessImage(image, spec, std::span<float>(out)).ok());
}

TEST(ImagePreprocess, CenterCropTakesTheMiddle) {
  // 4x8 into 4x4: the shorter side already fits (scale 1), the middle 4 columns are kept.
  std::vector<uint8_t> px(32);
  for (int i = 0; i < 32; ++i) px[i] = static_cast<uint8_t>(i);
  const Image image = Filled(4, 8, 1, px);
  PreprocessSpec spec;
  spec.height = 4, spec.width = 4, spec.channels = 1, spec.fit = FitMode::kCenterCrop, spec.scale = 1.0f;
  std::vector<float> out(16);
  ASSERT_TRUE(PreprocessImage(image, spec, std::span<float>(out)).ok());
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(out[y * 4 + x], y * 8 + x + 2) << y << "," << x;
  // 17x13 RGB into 5x5: resized to 7x5 (shorter side 13 -> 5), crop rows 1..5 of that resize.
  const Image odd = FromTensor(ReadFixtureNpy("resize_down_odd_in.npy"));
  spec.height = 5, spec.width = 5, spec.channels = 3, spec.layout = TensorLayout::kNHWC;
  auto fit = ComputeFit(17, 13, spec);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->resized_height, 7);
  EXPECT_EQ(fit->resized_width, 5);
  EXPECT_EQ(fit->offset_y, -1);
  auto resized = ResizeBilinear(odd, 7, 5);
  ASSERT_TRUE(resized.ok());
  std::vector<float> crop(75);
  ASSERT_TRUE(PreprocessImage(odd, spec, std::span<float>(crop)).ok());
  for (int i = 0; i < 75; ++i) EXPECT_NEAR(crop[i], (*resized)[15 + i], 1e-4) << i;
  // A 1 x 2^24 strip cropped to 224x224 would need a 2^24 * 224 wide resize: refused.
  spec.height = 224, spec.width = 224;
  EXPECT_EQ(ComputeFit(1, 1 << 24, spec).status().code(), StatusCode::kInvalidArgument);
}

TEST(ImagePreprocess, BatchSlots) {
  PreprocessSpec spec;
  spec.height = 2, spec.width = 3, spec.channels = 1, spec.scale = 1.0f;
  std::vector<float> batch(3 * 6, -1.0f);
  ASSERT_TRUE(PreprocessIntoBatch(Filled(1, 1, 1, {7}), spec, 1, std::span<float>(batch)).ok());
  for (int i = 0; i < 18; ++i) EXPECT_FLOAT_EQ(batch[i], (i >= 6 && i < 12) ? 7.0f : -1.0f) << i;
  EXPECT_FALSE(PreprocessIntoBatch(Filled(1, 1, 1, {7}), spec, 3, std::span<float>(batch)).ok());
  EXPECT_FALSE(PreprocessIntoBatch(Filled(1, 1, 1, {7}), spec, -1, std::span<float>(batch)).ok());
  // The image must have the spec's channel count.
  auto st = PreprocessIntoBatch(Filled(1, 1, 3, {1, 2, 3}), spec, 0, std::span<float>(batch));
  EXPECT_NE(st.message().find("3 channels"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace inferloop::imaging
