#include "perf/perf_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace inferloop::perf {
namespace {

TEST(ParseRange, StartEndStep) {
  auto r = ParseRange("1:8:2", true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value(), (std::vector<double>{1, 3, 5, 7}));
}

TEST(ParseRange, SingleValueAndDefaultStep) {
  EXPECT_EQ(ParseRange("64", true).value(), (std::vector<double>{64}));
  EXPECT_EQ(ParseRange("2:4", true).value(), (std::vector<double>{2, 3, 4}));
}

TEST(ParseRange, FractionalRatesInclusiveEnd) {
  auto r = ParseRange("0.5:1.5:0.5", false);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().size(), 3u);
  EXPECT_DOUBLE_EQ(r.value()[2], 1.5);
}

TEST(ParseRange, RejectsBadInput) {
  for (const char* bad : {"", "0", "-1:4", "4:2", "1:4:0", "a:b", "1:2:3:4", "1.5", "1:"}) {
    auto r = ParseRange(bad, true);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
      EXPECT_NE(r.status().message().find("range"), std::string::npos) << r.status().message();
    }
  }
  EXPECT_FALSE(ParseRange("1:100000", true).ok());  // more than 1000 values
}

TEST(Percentile, NearestRank) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);  // 1..100
  EXPECT_EQ(PercentileOfSorted(v, 50), 50);
  EXPECT_EQ(PercentileOfSorted(v, 90), 90);
  EXPECT_EQ(PercentileOfSorted(v, 99), 99);
  EXPECT_EQ(PercentileOfSorted(v, 99.9), 100);
  EXPECT_EQ(PercentileOfSorted(v, 100), 100);
  EXPECT_EQ(PercentileOfSorted({7.0}, 99.9), 7);
  EXPECT_EQ(PercentileOfSorted({}, 50), 0);
  std::vector<double> w(1000);
  std::iota(w.begin(), w.end(), 1.0);
  EXPECT_EQ(PercentileOfSorted(w, 99.9), 999);
}

TEST(Stability, NeedsThreeWindowsWithinTenPercent) {
  std::vector<WindowSummary> w = {{100, 1000, 10}, {105, 1050, 10}};
  EXPECT_FALSE(LastThreeStable(w));
  w.push_back({109, 1090, 10});
  EXPECT_TRUE(LastThreeStable(w));
  w.push_back({121, 1000, 10});  // throughput 121 vs 105: more than 10% apart
  EXPECT_FALSE(LastThreeStable(w));
  std::vector<WindowSummary> lat = {{100, 1000, 10}, {100, 1000, 10}, {100, 1200, 10}};
  EXPECT_FALSE(LastThreeStable(lat));  // latency 20% apart
  std::vector<WindowSummary> only_old_bad = {{10, 5000, 1}, {100, 1000, 10}, {100, 1000, 10}, {100, 1000, 10}};
  EXPECT_TRUE(LastThreeStable(only_old_bad));  // only the last three count
  std::vector<WindowSummary> empty = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  EXPECT_FALSE(LastThreeStable(empty));
}

TEST(LittlesLaw, ConcurrencyWithHeadroom) {
  // 2 ms x 1000 req/s = 2 in flight; x 1.2 headroom = 2.4 -> 3.
  EXPECT_EQ(LittlesLawConcurrency(2000, 1000), 3);
  EXPECT_EQ(LittlesLawConcurrency(1000, 1000, 1.0), 1);
  EXPECT_EQ(LittlesLawConcurrency(10000, 5000), 60);  // 10 ms x 5000 = 50, x 1.2
  EXPECT_EQ(LittlesLawConcurrency(10, 1), 1);          // never below 1
  EXPECT_EQ(LittlesLawConcurrency(0, 1000), 1);
  EXPECT_EQ(LittlesLawConcurrency(1000, -5), 1);
}

TEST(PoissonSchedule, MeanAndSpreadOfGapsWithFixedSeed) {
  PoissonSchedule s(1000.0, 42);
  const int n = 200000;
  double sum = 0, sumsq = 0;
  for (int i = 0; i < n; ++i) {
    double g = s.NextGapSeconds();
    ASSERT_GE(g, 0.0);
    sum += g;
    sumsq += g * g;
  }
  double mean = sum / n;
  double var = sumsq / n - mean * mean;
  EXPECT_NEAR(mean, 1e-3, 1e-3 * 0.01);           // exponential: mean 1/rate
  EXPECT_NEAR(std::sqrt(var), 1e-3, 1e-3 * 0.02);  // and standard deviation 1/rate
}

TEST(PoissonSchedule, SameSeedSameSchedule) {
  PoissonSchedule a(50, 7), b(50, 7), c(50, 8);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    double x = a.NextGapSeconds();
    EXPECT_EQ(x, b.NextGapSeconds());
    differs |= x != c.NextGapSeconds();
  }
  EXPECT_TRUE(differs);
}

TEST(PoissonSchedule, ArrivalCountsPerSecondArePoisson) {
  // Counts in 1 s bins at rate 20: mean 20 and variance 20 (a Poisson process).
  PoissonSchedule s(20, 3);
  const int bins = 5000;
  std::vector<int> counts(bins, 0);
  double t = 0;
  for (;;) {
    t += s.NextGapSeconds();
    if (t >= bins) break;
    ++counts[static_cast<int>(t)];
  }
  double mean = std::accumulate(counts.begin(), counts.end(), 0.0) / bins;
  double var = 0;
  for (int c : counts) var += (c - mean) * (c - mean);
  var /= bins;
  EXPECT_NEAR(mean, 20, 0.3);
  EXPECT_NEAR(var, 20, 1.5);
}

}  // namespace
}  // namespace inferloop::perf
