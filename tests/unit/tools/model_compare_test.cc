#include "tools/model_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "base/npy.h"

namespace inferloop {
namespace {

ErrorStats Errors(const std::vector<double>& a, const std::vector<double>& b) {
  ErrorAccumulator acc;
  acc.Add(a.data(), b.data(), static_cast<int64_t>(a.size()));
  return acc.Get();
}

TEST(ModelCompareStats, CosineOfIdenticalOrthogonalOppositeAndScaled) {
  EXPECT_DOUBLE_EQ(Errors({1, 2, 3}, {1, 2, 3}).cosine, 1.0);
  EXPECT_NEAR(Errors({1, 0}, {0, 1}).cosine, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(Errors({1, -2}, {-1, 2}).cosine, -1.0);
  EXPECT_NEAR(Errors({1, 2, 3}, {2, 4, 6}).cosine, 1.0, 1e-12);  // scale-invariant
  EXPECT_NEAR(Errors({1, 1}, {1, 0}).cosine, 1.0 / std::sqrt(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(Errors({0, 0}, {0, 0}).cosine, 1.0);
  EXPECT_DOUBLE_EQ(Errors({0, 0}, {0, 1}).cosine, 0.0);
}

TEST(ModelCompareStats, MaxAbsAndRelErrors) {
  ErrorStats e = Errors({1, 10, 0, -4}, {1.5, 9, 0, -4});
  EXPECT_DOUBLE_EQ(e.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(e.max_rel, 0.5 / 1.5);  // relative to the larger magnitude; 0 where both are 0
  EXPECT_DOUBLE_EQ(Errors({1}, {-1}).max_rel, 2.0);
}

TEST(ModelCompareStats, AccumulatesOverChunksLikeOneVector) {
  ErrorAccumulator acc;
  std::vector<double> a1 = {1, 0}, b1 = {0, 0}, a2 = {0, 0}, b2 = {0, 1};
  acc.Add(a1.data(), b1.data(), 2);
  acc.Add(a2.data(), b2.data(), 2);
  EXPECT_NEAR(acc.Get().cosine, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(acc.Get().max_abs, 1.0);
}

TEST(ModelCompareStats, NonFiniteOnOneSideDiverges) {
  const double nan = std::nan("");
  EXPECT_TRUE(std::isnan(Errors({1, 2}, {1, nan}).cosine));
  EXPECT_TRUE(std::isinf(Errors({1, 2}, {1, nan}).max_abs));
  EXPECT_DOUBLE_EQ(Errors({1, nan}, {1, nan}).cosine, 1.0);  // the same NaN agrees
}

TEST(ModelCompareStats, ValueStats) {
  StatsAccumulator acc;
  std::vector<double> v = {1, 2, 3, std::nan(""), 4};
  acc.Add(v.data(), 5);
  ValueStats s = acc.Get();
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.nonfinite, 1);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.std, std::sqrt(1.25), 1e-12);
}

TEST(ModelCompareStats, PerChannelMeanStdOverBatchAndSpatial) {
  // N=2, C=2, H=1, W=2: channel 0 gets {0,2} and {4,6}; channel 1 gets {1,1} and {1,1}.
  Tensor t = Tensor::FromVector<float>(DataType::kFloat, {2, 2, 1, 2}, {0, 2, 1, 1, 4, 6, 1, 1});
  ChannelStatsAccumulator acc;
  ASSERT_TRUE(acc.Add(t).ok());
  auto ch = acc.Get();
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_DOUBLE_EQ(ch[0].mean, 3.0);
  EXPECT_NEAR(ch[0].std, std::sqrt(5.0), 1e-12);
  EXPECT_DOUBLE_EQ(ch[1].mean, 1.0);
  EXPECT_DOUBLE_EQ(ch[1].std, 0.0);
  EXPECT_FALSE(acc.Add(Tensor::FromVector<float>(DataType::kFloat, {1, 3, 1, 1}, {1, 2, 3})).ok());  // 3 channels
  EXPECT_FALSE(acc.Add(Tensor::FromVector<float>(DataType::kFloat, {2}, {1, 2})).ok());              // rank 1
}

TEST(ModelCompareData, LoadsOneSampleOrAFolderOfSamples) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("il_compare_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  Tensor x = Tensor::FromVector<float>(DataType::kFloat, {2}, {1, 2});
  ASSERT_TRUE(WriteNpyFile((root / "a" / "x.npy").string(), x).ok());
  ASSERT_TRUE(WriteNpyFile((root / "b" / "x.npy").string(), x).ok());
  auto many = LoadSamples(root.string());
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  ASSERT_EQ(many->size(), 2u);
  EXPECT_EQ((*many)[0][0].first, "x");
  auto one = LoadSamples((root / "a").string());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  fs::create_directories(root / "empty");
  EXPECT_FALSE(LoadSamples((root / "empty").string()).ok());
  EXPECT_FALSE(LoadSamples((root / "missing").string()).ok());
  fs::remove_all(root);
}

}  // namespace
}  // namespace inferloop
