// Heatmap overlay (colour map stops, half-pixel upsampling, blending), mask outlines and CT
// windowing on known values, and the PNG round trip of an overlay.
#include "imaging/overlay.h"

#include <gtest/gtest.h>

#include <vector>

#include "imaging/image_codec.h"

namespace inferloop::imaging {
namespace {

Image Solid(int h, int w, int c, uint8_t v) {
  Image image;
  image.height = h, image.width = w, image.channels = c;
  image.pixels.assign(static_cast<size_t>(h) * w * c, v);
  return image;
}

TEST(Overlay, ColourMapStops) {
  using C = std::array<uint8_t, 3>;
  EXPECT_EQ(HeatColour(0.0f), (C{0, 0, 255}));
  EXPECT_EQ(HeatColour(0.25f), (C{0, 255, 255}));
  EXPECT_EQ(HeatColour(0.5f), (C{0, 255, 0}));
  EXPECT_EQ(HeatColour(0.75f), (C{255, 255, 0}));
  EXPECT_EQ(HeatColour(1.0f), (C{255, 0, 0}));
  EXPECT_EQ(HeatColour(0.125f), (C{0, 128, 255}));  // halfway blue -> cyan (127.5 rounds up)
  EXPECT_EQ(HeatColour(-3.0f), HeatColour(0.0f));
  EXPECT_EQ(HeatColour(7.0f), HeatColour(1.0f));
}

TEST(Overlay, HeatmapIsNormalisedUpsampledAndBlended) {
  // [h=1, w=2] heat {-5, 15} -> {0, 1}; upsampled to 4 columns at half-pixel positions 0 (clamped),
  // 0.25, 0.75, 1 (clamped): t = 0, 0.25, 0.75, 1.
  const std::vector<float> heat = {-5.0f, 15.0f};
  auto full = OverlayHeatmap(Solid(3, 4, 1, 0), heat, 1, 2, 1.0f);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  ASSERT_EQ(full->channels, 3);
  const std::array<std::array<uint8_t, 3>, 4> want = {{{0, 0, 255}, {0, 255, 255}, {255, 255, 0}, {255, 0, 0}}};
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(full->pixels[(y * 4 + x) * 3 + k], want[x][k]) << y << "," << x << "," << k;
  // alpha 0.5 on gray 100: round(50 + colour / 2).
  auto half = OverlayHeatmap(Solid(1, 4, 1, 100), heat, 1, 2, 0.5f);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->pixels[0], 50);   // R of blue
  EXPECT_EQ(half->pixels[2], 178);  // B of blue: 50 + 127.5 -> 178
  // A constant heatmap is all t = 0; alpha 0 leaves the image.
  auto flat = OverlayHeatmap(Solid(2, 2, 3, 9), std::vector<float>{4, 4}, 1, 2, 0.0f);
  ASSERT_TRUE(flat.ok());
  for (uint8_t p : flat->pixels) EXPECT_EQ(p, 9);
  // The overlay encodes as PNG and decodes to the same pixels.
  auto png = EncodePng(*full);
  ASSERT_TRUE(png.ok());
  auto back = DecodeImage(*png, DecodeLimits{});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->pixels, full->pixels);
}

TEST(Overlay, MaskOutlineMarksBoundaryPixelsOnly) {
  // 5x5 mask with a 3x3 square at (1..3, 1..3) and a pixel on the image edge at (0, 4).
  std::vector<uint8_t> mask(25, 0);
  for (int y = 1; y <= 3; ++y)
    for (int x = 1; x <= 3; ++x) mask[y * 5 + x] = 1;
  mask[4] = 255;
  auto r = OverlayMaskOutline(Solid(5, 5, 1, 40), mask, {255, 0, 0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x) {
      const bool boundary = (mask[y * 5 + x] != 0) && !(y == 2 && x == 2);
      const uint8_t* p = &r->pixels[(y * 5 + x) * 3];
      EXPECT_EQ(p[0], boundary ? 255 : 40) << y << "," << x;
      EXPECT_EQ(p[1], boundary ? 0 : 40) << y << "," << x;
    }
  // A full mask: only the image border is boundary.
  auto full = OverlayMaskOutline(Solid(3, 3, 1, 0), std::vector<uint8_t>(9, 1), {0, 255, 0});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->pixels[4 * 3 + 1], 0);
  EXPECT_EQ(full->pixels[0 * 3 + 1], 255);
}

TEST(Overlay, WindowAndBadInput) {
  // Lung window: center -600, width 1500 -> [-1350, 150].
  auto g = WindowToGray(std::vector<float>{-2000, -1350, -600, 150, 3000}, 1, 5, -600, 1500);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->pixels, (std::vector<uint8_t>{0, 0, 128, 255, 255}));
  EXPECT_FALSE(WindowToGray(std::vector<float>{1}, 1, 1, 0, 0).ok());
  EXPECT_FALSE(WindowToGray(std::vector<float>{1, 2}, 1, 1, 0, 10).ok());
  EXPECT_FALSE(OverlayHeatmap(Solid(2, 2, 1, 0), std::vector<float>{1, 2, 3}, 1, 2).ok());
  EXPECT_FALSE(OverlayHeatmap(Solid(2, 2, 1, 0), std::vector<float>{1, 2}, 1, 2, 1.5f).ok());
  EXPECT_FALSE(OverlayMaskOutline(Solid(2, 2, 1, 0), std::vector<uint8_t>(3, 1), {1, 2, 3}).ok());
}

}  // namespace
}  // namespace inferloop::imaging
