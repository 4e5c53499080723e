// Input sets of `inferloop perf`: a directory of sample folders (DIR/<sample>/<input>.npy), and
// the distribution that picks one sample per request (round-robin, uniform, or Zipf). The
// requests are built and encoded once per sample before the load starts; choosing one on the
// hot path is a counter step or one random draw (plus a binary search over the Zipf CDF).
// Pure and unit-tested in tests/unit/perf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::perf {

// How a sample is picked for each request.
struct SampleDistribution {
  enum class Kind { kRoundRobin, kUniform, kZipf };
  Kind kind = Kind::kRoundRobin;
  double zipf_s = 1.0;  // kZipf: the exponent S > 0
  // "round-robin", "uniform", "zipf:S" (S with up to 6 significant digits: "zipf:1", "zipf:1.2").
  std::string ToString() const;
};

// Parses --input-distribution: "round-robin", "uniform", "zipf" (S = 1) or "zipf:S" with S a
// finite number > 0. InvalidArgument naming the value and the accepted forms otherwise.
Result<SampleDistribution> ParseSampleDistribution(const std::string& text);

// The Zipf probability mass over n ranks: p[k] = (k+1)^-s / sum_{j=1..n} j^-s, k = 0..n-1
// (sample 0, the first in name order, is the most frequent). n >= 1, s > 0.
std::vector<double> ZipfPmf(size_t n, double s);

// Draws sample indices in [0, n) from a distribution. One chooser per I/O thread (not
// thread-safe); the same (distribution, n, seed, start) gives the same sequence.
class SampleChooser {
 public:
  // `start`: round-robin's first index (spreads threads over the set); unused otherwise.
  SampleChooser(const SampleDistribution& dist, size_t n, uint64_t seed, size_t start = 0);
  size_t Next();

 private:
  SampleDistribution::Kind kind_;
  size_t n_;
  size_t next_ = 0;
  std::mt19937_64 gen_;
  std::vector<double> cdf_;  // kZipf: cumulative pmf, the last entry forced to 1
};

// The seed of the sample chooser of I/O thread `thread` for the run's --seed, kept apart from
// the seeds the random inputs and the Poisson arrivals use (so the draws do not mirror them).
uint64_t SampleChooserSeed(uint64_t seed, size_t thread);

// The sample folders of an --input-data directory, sorted by name: empty when `dir` itself holds
// .npy files (the flat layout: one sample). Hidden entries (names starting with '.') are ignored. InvalidArgument, naming the directory, when it holds
// neither .npy files nor folders, holds both, or cannot be read.
Result<std::vector<std::string>> ListSampleFolders(const std::string& dir);

}  // namespace inferloop::perf
