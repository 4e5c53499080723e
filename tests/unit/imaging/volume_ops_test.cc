// Windowing, resampling and slice pictures against values worked out by hand: trilinear
// interpolation reproduces any linear function of position exactly.
#include "imaging/volume_ops.h"

#include <gtest/gtest.h>

#include <cmath>

namespace inferloop::imaging {
namespace {

TEST(Window, MapsTheWindowOntoTheUnitIntervalAndClamps) {
  auto unit = WindowToUnit({-1000, -160, 40, 140, 240, 3000}, {40, 400});
  ASSERT_TRUE(unit.ok());
  EXPECT_EQ(*unit, (std::vector<float>{0, 0, 0.5f, 0.75f, 1, 1}));
  auto bytes = WindowToUint8({-1000, -160, 40, 140, 240, 3000}, {40, 400});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, (std::vector<uint8_t>{0, 0, 128, 191, 255, 255}));  // round(127.5), round(191.25)
}

TEST(Window, RefusesNonPositiveOrNonFiniteWidth) {
  EXPECT_FALSE(WindowToUnit({1}, {40, 0}).ok());
  EXPECT_FALSE(WindowToUint8({1}, {40, -5}).ok());
  EXPECT_FALSE(WindowToUnit({1}, {NAN, 10}).ok());
}

double Linear(double z, double y, double x) { return 3 * z - 2 * y + 0.5 * x + 7; }

DicomVolume LinearVolume(int d, int h, int w, std::array<double, 3> spacing) {
  DicomVolume v;
  v.depth = d;
  v.height = h;
  v.width = w;
  v.spacing_mm = spacing;
  for (int z = 0; z < d; ++z)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        v.voxels.push_back(static_cast<float>(Linear(z * spacing[0], y * spacing[1], x * spacing[2])));
  v.source_file_index.assign(size_t(d), 0);
  return v;
}

TEST(Resample, TrilinearReproducesALinearFieldOnTheAlignedGrid) {
  DicomVolume in = LinearVolume(5, 6, 7, {2.5, 0.8, 0.6});
  auto out = ResampleVolume(in, {1.0, 0.5, 1.1});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->depth, 11);  // floor(4 * 2.5 / 1.0) + 1
  EXPECT_EQ(out->height, 9);  // floor(5 * 0.8 / 0.5) + 1
  EXPECT_EQ(out->width, 4);   // floor(6 * 0.6 / 1.1) + 1
  EXPECT_TRUE(out->source_file_index.empty());
  for (int z = 0; z < out->depth; ++z)
    for (int y = 0; y < out->height; ++y)
      for (int x = 0; x < out->width; ++x)
        ASSERT_NEAR(out->voxels[(size_t(z) * out->height + y) * out->width + x], Linear(z * 1.0, y * 0.5, x * 1.1), 1e-3)
            << z << "," << y << "," << x;
}

TEST(Resample, SameSpacingIsTheIdentity) {
  DicomVolume in = LinearVolume(3, 4, 5, {1.5, 0.7, 0.7});
  auto out = ResampleVolume(in, in.spacing_mm);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->voxels, in.voxels);
}

TEST(Resample, RefusesBadSpacingAndOversizedOutput) {
  DicomVolume in = LinearVolume(3, 4, 5, {1, 1, 1});
  EXPECT_FALSE(ResampleVolume(in, {0, 1, 1}).ok());
  EXPECT_FALSE(ResampleVolume(in, {1, -1, 1}).ok());
  EXPECT_FALSE(ResampleVolume(in, {1e-9, 1e-9, 1e-9}).ok());  // over the default limit
  EXPECT_FALSE(ResampleVolume(in, {0.5, 0.5, 0.5}, 100).ok());
  in.voxels.pop_back();
  EXPECT_FALSE(ResampleVolume(in, {1, 1, 1}).ok());
}

TEST(SliceImage, IsTheWindowedSliceAsGrayBytes) {
  DicomVolume in = LinearVolume(3, 4, 5, {1, 1, 1});
  auto image = SliceToImage(in, 2, {10, 20});
  ASSERT_TRUE(image.ok());
  EXPECT_TRUE(CheckImage(*image).ok());
  EXPECT_EQ(image->channels, 1);
  std::vector<float> slice(in.voxels.begin() + 40, in.voxels.end());
  EXPECT_EQ(image->pixels, *WindowToUint8(slice, {10, 20}));
  EXPECT_FALSE(SliceToImage(in, 3, {10, 20}).ok());
  EXPECT_FALSE(SliceToImage(in, -1, {10, 20}).ok());
}

}  // namespace
}  // namespace inferloop::imaging
