// inferloop perf's input sets: the distribution parser, the sample chooser (Zipf frequencies
// against the exact pmf by a chi-square test, seed reproducibility), sample folder listing and
// the per-sample requests.
#include "perf/input_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "base/npy.h"
#include "perf/request_builder.h"

namespace inferloop::perf {
namespace {

namespace fs = std::filesystem;

// The upper 1 - alpha quantile of the chi-square distribution with `df` degrees of freedom, by
// the Wilson-Hilferty approximation (accurate to well under 1% for df >= 10): chi2 ~ df (1 - 2/(9 df)
// + z sqrt(2/(9 df)))^3 with z the standard normal quantile of 1 - alpha.
double ChiSquareCritical(int df, double z) {
  double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}
constexpr double kZ1e6 = 4.7534;  // standard normal quantile of 1 - 1e-6

// Pearson's statistic of `draws` samples from `chooser` against `pmf`.
double ChiSquare(SampleChooser& chooser, const std::vector<double>& pmf, int draws) {
  std::vector<double> counts(pmf.size(), 0);
  for (int i = 0; i < draws; ++i) {
    size_t k = chooser.Next();
    EXPECT_LT(k, pmf.size());
    if (k < pmf.size()) ++counts[k];
  }
  double chi2 = 0;
  for (size_t k = 0; k < pmf.size(); ++k) {
    double expected = pmf[k] * draws;
    chi2 += (counts[k] - expected) * (counts[k] - expected) / expected;
  }
  return chi2;
}

SampleDistribution Zipf(double s) {
  SampleDistribution d;
  d.kind = SampleDistribution::Kind::kZipf;
  d.zipf_s = s;
  return d;
}

TEST(SampleDistribution, ParsesTheForms) {
  EXPECT_EQ(ParseSampleDistribution("round-robin").value().kind, SampleDistribution::Kind::kRoundRobin);
  EXPECT_EQ(ParseSampleDistribution("uniform").value().kind, SampleDistribution::Kind::kUniform);
  auto z = ParseSampleDistribution("zipf");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z.value().kind, SampleDistribution::Kind::kZipf);
  EXPECT_EQ(z.value().zipf_s, 1.0);
  auto z12 = ParseSampleDistribution("zipf:1.2");
  ASSERT_TRUE(z12.ok());
  EXPECT_DOUBLE_EQ(z12.value().zipf_s, 1.2);
  EXPECT_EQ(z12.value().ToString(), "zipf:1.2");
  EXPECT_EQ(z.value().ToString(), "zipf:1");
  EXPECT_EQ(ParseSampleDistribution("uniform").value().ToString(), "uniform");
  EXPECT_EQ(SampleDistribution{}.ToString(), "round-robin");
}

TEST(SampleDistribution, RejectsBadValues) {
  for (const char* bad : {"zipf:0", "zipf:-1", "zipf:abc", "zipf:", "zipf:inf", "zipf:nan", "zipf:1.2x", "pareto",
                          "", "Zipf", "round_robin"}) {
    auto r = ParseSampleDistribution(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--input-distribution '" + std::string(bad) + "'"), std::string::npos)
        << r.status().message();
  }
  EXPECT_NE(ParseSampleDistribution("zipf:0").status().message().find("must be > 0"), std::string::npos);
  EXPECT_NE(ParseSampleDistribution("zipf:abc").status().message().find("not a number"), std::string::npos);
}

TEST(ZipfPmf, ExactValues) {
  auto p = ZipfPmf(4, 1.0);  // 1, 1/2, 1/3, 1/4 over H_4 = 25/12
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NEAR(p[0], 12.0 / 25, 1e-12);
  EXPECT_NEAR(p[3], 3.0 / 25, 1e-12);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
  EXPECT_EQ(ZipfPmf(1, 2.0), std::vector<double>{1.0});
}

// 100k draws over 50 samples: Pearson's chi-square against the exact Zipf pmf stays under the
// 1 - 1e-6 quantile for 49 degrees of freedom, and the same draws against a neighbouring
// exponent (S + 0.1) exceed it (so the bound can tell the distributions apart).
TEST(SampleChooser, ZipfFrequenciesMatchThePmf) {
  constexpr int kDraws = 100000;
  constexpr size_t kN = 50;
  const double bound = ChiSquareCritical(kN - 1, kZ1e6);
  EXPECT_NEAR(bound, 111.14, 1.0);  // chi2(49) at 1 - 1e-6 is 111.14 (scipy.stats.chi2.isf(1e-6, 49))
  for (double s : {1.0, 1.2}) {
    SampleChooser chooser(Zipf(s), kN, 42);
    double chi2 = ChiSquare(chooser, ZipfPmf(kN, s), kDraws);
    EXPECT_LT(chi2, bound) << "S=" << s;
    SampleChooser again(Zipf(s), kN, 42);
    double wrong = ChiSquare(again, ZipfPmf(kN, s + 0.1), kDraws);
    std::printf("zipf S=%g: chi2 %.1f against its pmf, %.1f against S+0.1, bound %.1f\n", s, chi2, wrong, bound);
    EXPECT_GT(wrong, bound) << "S=" << s << " against S+0.1";
  }
}

TEST(SampleChooser, UniformFrequencies) {
  constexpr size_t kN = 20;
  SampleDistribution u;
  u.kind = SampleDistribution::Kind::kUniform;
  SampleChooser chooser(u, kN, 7);
  EXPECT_LT(ChiSquare(chooser, std::vector<double>(kN, 1.0 / kN), 100000), ChiSquareCritical(kN - 1, kZ1e6));
}

TEST(SampleChooser, SameSeedSameSequence) {
  for (auto d : {Zipf(1.0), Zipf(1.2), SampleDistribution{SampleDistribution::Kind::kUniform, 1.0}}) {
    SampleChooser a(d, 100, 123), b(d, 100, 123), c(d, 100, 124);
    std::vector<size_t> sa, sb, sc;
    for (int i = 0; i < 1000; ++i) {
      sa.push_back(a.Next());
      sb.push_back(b.Next());
      sc.push_back(c.Next());
    }
    EXPECT_EQ(sa, sb) << d.ToString();
    EXPECT_NE(sa, sc) << d.ToString();
  }
}

TEST(SampleChooser, RoundRobinCyclesFromStart) {
  SampleChooser rr(SampleDistribution{}, 3, 1, 2);
  std::vector<size_t> got;
  for (int i = 0; i < 7; ++i) got.push_back(rr.Next());
  EXPECT_EQ(got, (std::vector<size_t>{2, 0, 1, 2, 0, 1, 2}));
  SampleChooser one(Zipf(1.0), 1, 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(one.Next(), 0u);
}

TEST(SampleChooser, ThreadSeedsDiffer) {
  EXPECT_NE(SampleChooserSeed(1, 0), SampleChooserSeed(1, 1));
  EXPECT_NE(SampleChooserSeed(1, 0), SampleChooserSeed(2, 0));
  EXPECT_NE(SampleChooserSeed(1, 0), 1u);  // not the seed the random inputs and arrivals use
  EXPECT_EQ(SampleChooserSeed(5, 3), SampleChooserSeed(5, 3));
}

class InputSetDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("il_input_set_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Npy(const std::string& rel, std::vector<int64_t> shape, float value) {
    fs::create_directories((dir_ / rel).parent_path());
    auto t = Tensor::Create(DataType::kFloat, Shape(shape)).value();
    for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = value;
    ASSERT_TRUE(WriteNpyFile((dir_ / rel).string(), t).ok());
  }
  std::string d() const { return dir_.string(); }
  fs::path dir_;
};

TEST_F(InputSetDir, ListsFolders) {
  auto empty = ListSampleFolders(d());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos) << empty.status().message();
  Npy("x.npy", {2}, 1);
  EXPECT_TRUE(ListSampleFolders(d()).value().empty());  // flat: one sample
  Npy("b/x.npy", {2}, 1);
  auto mixed = ListSampleFolders(d());
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("both"), std::string::npos);
  fs::remove(dir_ / "x.npy");
  Npy("a/x.npy", {2}, 1);
  fs::create_directories(dir_ / ".hidden");
  EXPECT_EQ(ListSampleFolders(d()).value(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(ListSampleFolders(d() + "/nosuch").ok());
}

TEST_F(InputSetDir, OneRequestPerSample) {
  ModelInfo m;
  m.name = "m";
  m.max_batch_size = 4;
  m.inputs = {{"x", "FP32", {-1, 3}}, {"v", "FP32", {-1, -1}}};  // v: variable, from the file
  Npy("s1/x.npy", {3}, 1);
  Npy("s1/v.npy", {5}, 1);
  Npy("s2/x.npy", {2, 3}, 2);
  Npy("s2/v.npy", {2, 7}, 2);
  InputOptions o;
  o.data = d();
  o.batch_size = 2;
  auto set = BuildInputSet(m, o);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set.value().sample_names, (std::vector<std::string>{"s1", "s2"}));
  ASSERT_EQ(set.value().requests.size(), 2u);
  EXPECT_EQ(ShapeToString(set.value().requests[0].inputs[0].tensor.shape()), "[2,3]");  // tiled
  EXPECT_EQ(ShapeToString(set.value().requests[0].inputs[1].tensor.shape()), "[2,5]");
  EXPECT_EQ(ShapeToString(set.value().requests[1].inputs[1].tensor.shape()), "[2,7]");
  EXPECT_EQ(set.value().requests[1].inputs[0].tensor.data<float>()[0], 2.0f);

  Npy("s3/x.npy", {4}, 3);  // a fixed dim that does not fit
  Npy("s3/v.npy", {4}, 3);
  auto bad = BuildInputSet(m, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sample 's3'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("shape [4], expected [2,3] or [3]"), std::string::npos)
      << bad.status().message();
  fs::remove_all(dir_ / "s3");
  Npy("s0/x.npy", {3}, 0);  // no v.npy
  auto missing = BuildInputSet(m, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sample 's0'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("v.npy for input 'v'"), std::string::npos) << missing.status().message();
}

TEST(InputSet, GeneratedDataIsOneSample) {
  ModelInfo m;
  m.name = "m";
  m.inputs = {{"x", "FP32", {3}}};
  auto set = BuildInputSet(m, InputOptions{});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set.value().sample_names, std::vector<std::string>{"random"});
  EXPECT_EQ(set.value().requests.size(), 1u);
}

}  // namespace
}  // namespace inferloop::perf
