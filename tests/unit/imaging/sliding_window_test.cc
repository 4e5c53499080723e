// Sliding-window planning and blending: window starts worked out by MONAI's rule by hand, full
// coverage, and blending an identity "model" giving back the input.
#include "imaging/sliding_window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace inferloop::imaging {
namespace {

std::vector<int> StartsAlong(const SlidingWindowPlan& plan, int axis) {
  std::vector<int> s;
  for (const Size3& o : plan.origins)
    if (std::find(s.begin(), s.end(), o[size_t(axis)]) == s.end()) s.push_back(o[size_t(axis)]);
  return s;
}

TEST(SlidingWindowPlan, StepsByRoiTimesOneMinusOverlapAndEndsFlush) {
  auto plan = PlanSlidingWindows({10, 7, 5}, {4, 4, 8}, 0.25);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(StartsAlong(*plan, 0), (std::vector<int>{0, 3, 6}));  // step int(4 * 0.75) = 3
  EXPECT_EQ(StartsAlong(*plan, 1), (std::vector<int>{0, 3}));     // 3 + 4 = 7: the end
  EXPECT_EQ(StartsAlong(*plan, 2), (std::vector<int>{0}));        // padded 5 -> 8, one window
  EXPECT_EQ(plan->origins.size(), 6u);
  EXPECT_EQ(plan->padded_size, (Size3{10, 7, 8}));
  EXPECT_EQ(plan->pad_before, (Size3{0, 0, 1}));  // (8 - 5) / 2
  auto monai_doc = PlanSlidingWindows({96, 100, 64}, {64, 64, 64}, 0.5);
  ASSERT_TRUE(monai_doc.ok());
  EXPECT_EQ(StartsAlong(*monai_doc, 0), (std::vector<int>{0, 32}));
  EXPECT_EQ(StartsAlong(*monai_doc, 1), (std::vector<int>{0, 32, 36}));  // 64 + 32 > 100: moved back to 36
  EXPECT_EQ(StartsAlong(*monai_doc, 2), (std::vector<int>{0}));
}

TEST(SlidingWindowPlan, WindowsCoverEveryVoxel) {
  for (double overlap : {0.0, 0.25, 0.5, 0.9}) {
    auto plan = PlanSlidingWindows({13, 9, 21}, {5, 9, 6}, overlap);
    ASSERT_TRUE(plan.ok());
    std::vector<int> hits(13 * 9 * 21, 0);
    for (const Size3& o : plan->origins) {
      for (int a = 0; a < 3; ++a) ASSERT_LE(o[size_t(a)] + plan->roi_size[size_t(a)], plan->padded_size[size_t(a)]);
      for (int z = o[0]; z < o[0] + 5; ++z)
        for (int y = o[1]; y < o[1] + 9; ++y)
          for (int x = o[2]; x < o[2] + 6; ++x) ++hits[size_t((z * 9 + y) * 21 + x)];
    }
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 0), 0) << overlap;
  }
}

TEST(SlidingWindowPlan, RefusesBadArguments) {
  EXPECT_FALSE(PlanSlidingWindows({0, 4, 4}, {2, 2, 2}, 0.5).ok());
  EXPECT_FALSE(PlanSlidingWindows({4, 4, 4}, {2, -2, 2}, 0.5).ok());
  EXPECT_FALSE(PlanSlidingWindows({4, 4, 4}, {2, 2, 2}, 1.0).ok());
  EXPECT_FALSE(PlanSlidingWindows({4, 4, 4}, {2, 2, 2}, -0.1).ok());
}

std::vector<float> RandomVolume(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-1024, 3000);
  std::vector<float> v(n);
  for (float& x : v) x = float(d(rng));
  return v;
}

// Runs every window through `model` and blends.
template <typename Model>
std::vector<float> Infer(const std::vector<float>& volume, int channels, const SlidingWindowPlan& plan, int out_channels,
                         BlendMode mode, Model model) {
  auto blender = SlidingWindowBlender::Create(plan, out_channels, mode);
  EXPECT_TRUE(blender.ok());
  for (size_t i = plan.origins.size(); i-- > 0;) {  // any order
    auto window = ExtractWindow(volume, channels, plan, i);
    EXPECT_TRUE(window.ok());
    EXPECT_TRUE(blender->Accumulate(i, model(*window)).ok());
  }
  auto out = blender->Finish();
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<float>{};
}

TEST(SlidingWindowBlender, IdentityModelGivesTheInputBack) {
  const Size3 size{11, 6, 9};  // y and x smaller than the roi: padded
  auto plan = PlanSlidingWindows(size, {4, 8, 12}, 0.5);
  ASSERT_TRUE(plan.ok());
  const std::vector<float> volume = RandomVolume(2 * 11 * 6 * 9, 1);
  auto identity = [](const std::vector<float>& w) { return w; };
  EXPECT_EQ(Infer(volume, 2, *plan, 2, BlendMode::kConstant, identity), volume);
  const std::vector<float> gaussian = Infer(volume, 2, *plan, 2, BlendMode::kGaussian, identity);
  ASSERT_EQ(gaussian.size(), volume.size());
  for (size_t i = 0; i < volume.size(); ++i) ASSERT_NEAR(gaussian[i], volume[i], 1e-3) << i;
}

TEST(SlidingWindowBlender, OutputChannelsMayDifferFromTheInput) {
  auto plan = PlanSlidingWindows({7, 7, 7}, {4, 4, 4}, 0.25);
  ASSERT_TRUE(plan.ok());
  const std::vector<float> volume = RandomVolume(2 * 343, 2);
  auto channel_sum = [](const std::vector<float>& w) {  // [2, 4, 4, 4] -> [1, 4, 4, 4]
    std::vector<float> out(64);
    for (size_t i = 0; i < 64; ++i) out[i] = w[i] + w[64 + i];
    return out;
  };
  const std::vector<float> out = Infer(volume, 2, *plan, 1, BlendMode::kGaussian, channel_sum);
  ASSERT_EQ(out.size(), 343u);
  for (size_t i = 0; i < 343; ++i) ASSERT_NEAR(out[i], volume[i] + volume[343 + i], 1e-3);
}

TEST(SlidingWindowBlender, GaussianWeightsPeakAtTheCentre) {
  const std::vector<float> map = ImportanceMap({8, 1, 5}, BlendMode::kGaussian, 0.125);
  EXPECT_FLOAT_EQ(map[4 * 5 + 2], 1.0f);  // centre (8 / 2, 0, 5 / 2)
  const double sz = 0.125 * 8, sx = 0.125 * 5;
  EXPECT_NEAR(map[1 * 5 + 0], std::exp(-9 / (2 * sz * sz)) * std::exp(-4 / (2 * sx * sx)), 1e-7);
  EXPECT_GT(*std::min_element(map.begin(), map.end()), 0.0f);
  EXPECT_EQ(ImportanceMap({2, 2, 2}, BlendMode::kConstant), std::vector<float>(8, 1.0f));
}

TEST(SlidingWindowBlender, RefusesMisuse) {
  auto plan = PlanSlidingWindows({6, 6, 6}, {4, 4, 4}, 0.5);
  ASSERT_TRUE(plan.ok());
  auto blender = SlidingWindowBlender::Create(*plan, 1, BlendMode::kConstant);
  ASSERT_TRUE(blender.ok());
  EXPECT_FALSE(blender->Finish().ok());  // nothing accumulated yet
  EXPECT_FALSE(blender->Accumulate(0, std::vector<float>(63)).ok());
  EXPECT_FALSE(blender->Accumulate(plan->origins.size(), std::vector<float>(64)).ok());
  EXPECT_TRUE(blender->Accumulate(0, std::vector<float>(64)).ok());
  EXPECT_FALSE(blender->Accumulate(0, std::vector<float>(64)).ok());  // twice
  EXPECT_FALSE(ExtractWindow(std::vector<float>(10), 1, *plan, 0).ok());
  EXPECT_FALSE(ExtractWindow(std::vector<float>(216), 1, *plan, 99).ok());
  EXPECT_FALSE(SlidingWindowBlender::Create(*plan, 0, BlendMode::kConstant).ok());
}

}  // namespace
}  // namespace inferloop::imaging
