// The pure arithmetic of `inferloop perf`: load ranges, percentiles, the stability rule, Little's
// law and the Poisson arrival schedule. No I/O; unit-tested in tests/unit/perf.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::perf {

// "START[:END[:STEP]]" -> the values START, START+STEP, ... up to END inclusive (END defaults to
// START, STEP to 1). Every value must be > 0, END >= START, STEP > 0; `integer` requires whole
// numbers (concurrency). InvalidArgument naming the problem otherwise; at most 1000 values.
Result<std::vector<double>> ParseRange(const std::string& text, bool integer);

// The p-th percentile (0 < p <= 100) of `sorted` (ascending) by the nearest-rank rule: the value
// at rank ceil(p/100 * n) (1-based). 0 for an empty vector.
double PercentileOfSorted(const std::vector<double>& sorted, double p);

// One measurement window's summary, as the stability rule sees it.
struct WindowSummary {
  double throughput = 0;   // successful inferences per second
  double latency_us = 0;   // the chosen percentile's latency
  uint64_t completed = 0;  // successful requests
};

// Relative tolerance of the stability rule: 10%.
inline constexpr double kStabilityTolerance = 0.10;

// True when the last three windows are "within 10% of each other": for throughput and for the
// percentile latency separately, max <= min * (1 + tolerance). Fewer than three windows, or a
// window with no successful request among the last three: false.
bool LastThreeStable(const std::vector<WindowSummary>& windows,
                     double tolerance = kStabilityTolerance);

// Little's law headroom: concurrency is sized 20% above latency x rate, so that latency noise
// and bursts do not starve the target rate.
inline constexpr double kLittleHeadroom = 1.2;

// The concurrency Little's law suggests to sustain `target_rps` requests per second when one
// request takes `latency_us` on average at low load: ceil(latency_s * target_rps * headroom),
// at least 1. Non-positive inputs: 1.
int LittlesLawConcurrency(double latency_us, double target_rps, double headroom = kLittleHeadroom);

// Poisson arrivals at `rate` per second: exponential gaps with mean 1/rate, from a seeded
// generator (the same seed gives the same schedule).
class PoissonSchedule {
 public:
  PoissonSchedule(double rate, uint64_t seed) : gen_(seed), dist_(rate > 0 ? rate : 1.0) {}
  // The next gap, seconds.
  double NextGapSeconds() { return dist_(gen_); }

 private:
  std::mt19937_64 gen_;
  std::exponential_distribution<double> dist_;
};

}  // namespace inferloop::perf
