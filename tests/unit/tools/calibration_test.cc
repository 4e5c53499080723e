// Calibrators (tools/calibration.h) on known histograms, and the statistics file
// (tools/calibration_stats.h): JSON round trip, reuse when it matches the model, recalibration
// when it does not.
#include "tools/calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tools/calibration_stats.h"
#include "tools/quantizer.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

TensorHistogram Hist(const std::vector<float>& v) {
  TensorHistogram h;
  h.Add(v.data(), static_cast<int64_t>(v.size()));
  return h;
}

TEST(Calibration, MinMaxIsTheExactRangeAcrossChunks) {
  TensorHistogram h;
  std::vector<float> a = {-1.5f, 0.25f, NAN}, b = {3.0f, 0.5f, INFINITY};
  h.Add(a.data(), 3);
  h.Add(b.data(), 3);
  EXPECT_EQ(h.count(), 4);  // NaN and inf ignored
  QuantRange r = MinMaxRange(h);
  EXPECT_EQ(r.min, -1.5);
  EXPECT_EQ(r.max, 3.0);
  // The |x| histogram grew to cover 3 and still holds every value.
  double total = 0;
  for (double c : h.bins()) total += c;
  EXPECT_EQ(total, 4);
  EXPECT_GE(h.range(), 3.0);
}

TEST(Calibration, HistogramGrowthKeepsBinsConsistent) {
  TensorHistogram h;
  std::vector<float> a = {1.0f};
  h.Add(a.data(), 1);  // range 1: the value is in the last bin
  EXPECT_EQ(h.range(), 1.0);
  EXPECT_EQ(h.bins()[kHistogramBins - 1], 1);
  std::vector<float> b = {3.5f};
  h.Add(b.data(), 1);  // range doubles twice to 4: 1.0 lands in bin 2048/4 - 1 after merges
  EXPECT_EQ(h.range(), 4.0);
  EXPECT_EQ(h.bins()[kHistogramBins / 4 - 1], 1);
  EXPECT_EQ(h.bins()[static_cast<int>(3.5 / 4.0 * kHistogramBins)], 1);
}

TEST(Calibration, PercentileClipsTheOutlier) {
  std::vector<float> v;
  for (int i = 0; i < 9999; ++i) v.push_back(static_cast<float>(i) / 9999.0f);  // uniform in [0, 1)
  v.push_back(1000.0f);                                                      // one outlier
  TensorHistogram h = Hist(v);
  EXPECT_EQ(MinMaxRange(h).max, 1000.0);
  QuantRange p = PercentileRange(h, 99.0);
  EXPECT_EQ(p.min, 0.0);
  // 99% of 10000 values lie below ~0.99; the bin width here is 1000/2048 ~ 0.49.
  EXPECT_LT(p.max, 1.0 + 1000.0 / kHistogramBins);
  EXPECT_GT(p.max, 0.5);
  // 100: everything.
  EXPECT_EQ(PercentileRange(h, 100.0).max, 1000.0);
}

TEST(Calibration, PercentileIsSymmetricOnMagnitudes) {
  std::vector<float> v;
  for (int i = -1000; i <= 1000; ++i) v.push_back(static_cast<float>(i) / 1000.0f);  // uniform in [-1, 1]
  TensorHistogram h = Hist(v);
  QuantRange p = PercentileRange(h, 50.0);  // half of |x| lies below 0.5
  EXPECT_NEAR(p.max, 0.5, 2.0 / kHistogramBins);
  EXPECT_NEAR(p.min, -0.5, 2.0 / kHistogramBins);
}

TEST(Calibration, EntropyKeepsTheFullRangeOfAUniformDistribution) {
  std::vector<float> v;
  const int per_bin = 50;
  for (int b = 0; b < kHistogramBins; ++b)
    for (int k = 0; k < per_bin; ++k) v.push_back((b + (k + 0.5f) / per_bin) / kHistogramBins);  // every bin equal
  v.push_back(1.0f);  // the range is exactly [0, 1]
  TensorHistogram h = Hist(v);
  QuantRange r = EntropyRange(h);
  EXPECT_EQ(r.min, MinMaxRange(h).min);
  EXPECT_EQ(r.max, MinMaxRange(h).max);
  EXPECT_NEAR(EntropyThreshold(h, 256), h.range(), 1e-12);
}

TEST(Calibration, EntropyCutsALongTail) {
  std::mt19937 rng(6);
  std::exponential_distribution<float> d(1.0f);  // long right tail
  std::vector<float> v(200000);
  for (auto& x : v) x = d(rng);
  v.push_back(60.0f);  // and a far outlier
  TensorHistogram h = Hist(v);
  QuantRange r = EntropyRange(h);
  EXPECT_EQ(r.min, MinMaxRange(h).min);
  EXPECT_LT(r.max, 0.5 * h.max());  // well below the max
  EXPECT_GT(r.max, 3.0);            // but keeps the bulk (95% of an Exp(1) lies below 3)
}

TEST(Calibration, EntropyOfASignedTensorUses128LevelsPerSide) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(100000);
  for (auto& x : v) x = d(rng);
  v.push_back(-40.0f);
  TensorHistogram h = Hist(v);
  QuantRange r = EntropyRange(h);
  EXPECT_LT(r.max, 20.0);
  EXPECT_NEAR(r.min, -EntropyThreshold(h, 128), 1e-12);
}

TEST(Calibration, MethodNames) {
  EXPECT_EQ(*ParseCalibrationMethod("entropy"), CalibrationMethod::kEntropy);
  EXPECT_EQ(*ParseCalibrationMethod("percentile"), CalibrationMethod::kPercentile);
  EXPECT_EQ(*ParseCalibrationMethod("minmax"), CalibrationMethod::kMinMax);
  auto bad = ParseCalibrationMethod("kl");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("minmax"), std::string::npos);
}

TEST(CalibrationStatsFile, JsonRoundTripIsExact) {
  CalibrationStats s;
  s.model_hash = "0123456789abcdef";
  s.data_hash = "fedcba9876543210";
  s.rows = 7;
  s.tensors["x"] = Hist({-0.1f, 0.3f, 2.7182817f});
  s.tensors["y \"quoted\""] = Hist({0.0f, 0.0f});
  s.tensors["never"] = TensorHistogram();
  auto back = CalibrationStatsFromJson(CalibrationStatsToJson(s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->model_hash, s.model_hash);
  EXPECT_EQ(back->data_hash, s.data_hash);
  EXPECT_EQ(back->rows, 7);
  ASSERT_EQ(back->tensors.size(), 3u);
  for (const auto& [name, h] : s.tensors) {
    const TensorHistogram& b = back->tensors.at(name);
    EXPECT_EQ(b.count(), h.count()) << name;
    EXPECT_EQ(b.min(), h.min()) << name;
    EXPECT_EQ(b.max(), h.max()) << name;
    EXPECT_EQ(b.range(), h.range()) << name;
    if (!h.bins().empty()) EXPECT_EQ(b.bins(), h.bins()) << name;
    EXPECT_EQ(EntropyRange(b).max, EntropyRange(h).max) << name;
  }
}

TEST(CalibrationStatsFile, RejectsOtherFiles) {
  EXPECT_FALSE(CalibrationStatsFromJson("not json").ok());
  EXPECT_FALSE(CalibrationStatsFromJson("{\"format\": \"something-else\"}").ok());
  auto short_hist = CalibrationStatsFromJson(
      "{\"format\": \"inferloop-calibration-stats\", \"version\": 1, \"model_hash\": \"a\", \"tensors\": {\"x\": "
      "{\"count\": 1, \"min\": 0, \"max\": 1, \"range\": 1, \"histogram\": [1]}}}");
  ASSERT_FALSE(short_hist.ok());
  EXPECT_NE(short_hist.status().message().find("bins"), std::string::npos);
}

class CalibrationStatsReuse : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("il_calib_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    model_ = (dir_ / "m.onnx").string();
    WriteModel(1.0f);
    data_.dir = "mem";
    std::vector<float> x = {-1, 0.5f, 2, 3};
    data_.chunks.push_back({{"x", Value(Tensor::FromVector<float>(DataType::kFloat, {1, 4}, x))}});
    data_.rows = 1;
    data_.fingerprint = 42;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void WriteModel(float w) {
    testing::ModelBuilder b(13);
    b.Input("x", DataType::kFloat, {1, 4}).Output("y", DataType::kFloat, {1, 4});
    b.Initializer("w", Tensor::FromVector<float>(DataType::kFloat, {1}, {w}));
    b.Node("Mul", {"x", "w"}, {"m"});
    b.Node("Relu", {"m"}, {"y"});
    std::ofstream(model_, std::ios::binary) << b.Bytes();
  }
  std::filesystem::path dir_;
  std::string model_;
  QuantDataSet data_;
};

TEST_F(CalibrationStatsReuse, SecondRunReusesAndAnotherModelRecalibrates) {
  const std::string stats = (dir_ / "stats.json").string();
  std::ostringstream log1, log2, log3, log4;
  auto s1 = ObtainCalibrationStats(model_, data_, stats, false, log1);
  ASSERT_TRUE(s1.ok()) << s1.status().ToString();
  EXPECT_NE(log1.str().find("saved to"), std::string::npos);
  EXPECT_EQ(s1->tensors.at("m").max(), 3.0);
  EXPECT_EQ(s1->tensors.at("y").min(), 0.0);
  EXPECT_EQ(s1->tensors.at("x").min(), -1.0);
  auto s2 = ObtainCalibrationStats(model_, data_, stats, false, log2);
  ASSERT_TRUE(s2.ok());
  EXPECT_NE(log2.str().find("reused"), std::string::npos) << log2.str();
  EXPECT_EQ(log2.str().find("running"), std::string::npos);
  EXPECT_EQ(s2->tensors.at("m").max(), 3.0);
  // Other data: recalibrates.
  data_.fingerprint = 43;
  ASSERT_TRUE(ObtainCalibrationStats(model_, data_, stats, false, log3).ok());
  EXPECT_NE(log3.str().find("other data"), std::string::npos) << log3.str();
  // Another model (weights changed): recalibrates and the new statistics are the new model's.
  WriteModel(2.0f);
  auto s4 = ObtainCalibrationStats(model_, data_, stats, false, log4);
  ASSERT_TRUE(s4.ok());
  EXPECT_NE(log4.str().find("another model"), std::string::npos) << log4.str();
  EXPECT_EQ(s4->tensors.at("m").max(), 6.0);
}

}  // namespace
}  // namespace inferloop
