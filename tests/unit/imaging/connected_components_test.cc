// Labelling and measurements against scipy.ndimage (label with the 6- and 26-neighbour
// structures, sum/find_objects/center_of_mass/maximum/mean; make_fixtures.py), and known cases.
#include "imaging/connected_components.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "unit/imaging/fixtures.h"

namespace inferloop::imaging {
namespace {

using testing::ReadFixtureNpy;

TEST(ConnectedComponents, MatchesScipyNdimage) {
  const Tensor volume = ReadFixtureNpy("components_volume.npy");
  ASSERT_EQ(volume.rank(), 3);
  const std::array<int64_t, 3> shape = {volume.shape()[0], volume.shape()[1], volume.shape()[2]};
  const std::span<const float> values(volume.data<float>(), static_cast<size_t>(volume.size()));
  for (auto [name, connectivity] : {std::pair{"k6", Connectivity::k6}, std::pair{"k26", Connectivity::k26}}) {
    ComponentOptions options;
    options.threshold = 0.55f;
    options.connectivity = connectivity;
    options.spacing_mm = {2.5, 0.7, 0.8};
    auto r = LabelComponents(values, shape, options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Tensor labels = ReadFixtureNpy(std::string("components_") + name + "_labels.npy");
    const Tensor stats = ReadFixtureNpy(std::string("components_") + name + "_stats.npy");
    ASSERT_EQ(r->labels.size(), static_cast<size_t>(labels.size()));
    for (size_t i = 0; i < r->labels.size(); ++i) ASSERT_EQ(r->labels[i], labels.data<int32_t>()[i]) << name << " voxel " << i;
    ASSERT_EQ(r->label_count, stats.shape()[0]) << name;
    ASSERT_EQ(r->components.size(), static_cast<size_t>(stats.shape()[0])) << name;
    for (size_t c = 0; c < r->components.size(); ++c) {
      const Component& got = r->components[c];
      const double* want = stats.data<double>() + c * 12;
      EXPECT_EQ(got.label, static_cast<int32_t>(c + 1));
      EXPECT_EQ(got.voxel_count, static_cast<int64_t>(want[0])) << name << " " << c;
      EXPECT_NEAR(got.volume_mm3, want[0] * 2.5 * 0.7 * 0.8, 1e-9);
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(got.bbox_min[k], static_cast<int64_t>(want[1 + k])) << name << " " << c << " axis " << k;
        EXPECT_EQ(got.bbox_max[k], static_cast<int64_t>(want[4 + k])) << name << " " << c << " axis " << k;
        EXPECT_NEAR(got.centroid_mm[k], want[7 + k] * options.spacing_mm[k], 1e-9) << name << " " << c;
      }
      EXPECT_FLOAT_EQ(got.max_value, static_cast<float>(want[10]));
      EXPECT_NEAR(got.mean_value, want[11], 1e-6);
    }
  }
}

TEST(ConnectedComponents, DiagonalTouchDependsOnConnectivity) {
  // 2-D (Z = 1) 3x3 with a diagonal: one component with 26 (8 in-plane), three with 6 (4).
  const std::vector<float> v = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  ComponentOptions options;
  auto r26 = LabelComponents(v, {1, 3, 3}, options);
  ASSERT_TRUE(r26.ok());
  EXPECT_EQ(r26->components.size(), 1u);
  EXPECT_EQ(r26->components[0].voxel_count, 3);
  EXPECT_DOUBLE_EQ(r26->components[0].centroid_mm[1], 1.0);
  options.connectivity = Connectivity::k6;
  auto r6 = LabelComponents(v, {1, 3, 3}, options);
  ASSERT_TRUE(r6.ok());
  EXPECT_EQ(r6->components.size(), 3u);
  // min_voxels drops small components from the list only.
  options.min_voxels = 2;
  auto big = LabelComponents(v, {1, 3, 3}, options);
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(big->components.empty());
  EXPECT_EQ(big->label_count, 3);
}

TEST(ConnectedComponents, BadInput) {
  const std::vector<float> v(8, 1.0f);
  ComponentOptions options;
  EXPECT_EQ(LabelComponents(v, {2, 2, 3}, options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LabelComponents(v, {0, 2, 4}, options).status().code(), StatusCode::kInvalidArgument);
  options.spacing_mm = {1.0, 0.0, 1.0};
  EXPECT_EQ(LabelComponents(v, {2, 2, 2}, options).status().code(), StatusCode::kInvalidArgument);
  // NaN is background.
  options = {};
  std::vector<float> nan(4, std::numeric_limits<float>::quiet_NaN());
  auto r = LabelComponents(nan, {1, 2, 2}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->label_count, 0);
}

}  // namespace
}  // namespace inferloop::imaging
