#include "perf/input_set.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "base/c_locale_number.h"

namespace inferloop::perf {

std::string SampleDistribution::ToString() const {
  switch (kind) {
    case Kind::kRoundRobin: return "round-robin";
    case Kind::kUniform: return "uniform";
    case Kind::kZipf: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "zipf:%.6g", zipf_s);
      return buf;
    }
  }
  return "?";
}

Result<SampleDistribution> ParseSampleDistribution(const std::string& text) {
  const std::string forms = "expected round-robin, uniform, zipf or zipf:S with S > 0";
  SampleDistribution d;
  if (text == "round-robin") return d;
  if (text == "uniform") {
    d.kind = SampleDistribution::Kind::kUniform;
    return d;
  }
  if (text == "zipf") {
    d.kind = SampleDistribution::Kind::kZipf;
    return d;
  }
  if (text.rfind("zipf:", 0) == 0) {
    std::string s = text.substr(5);
    char* end = nullptr;
    errno = 0;
    double v = s.empty() ? 0 : StrtodC(s.c_str(), &end);
    if (s.empty() || errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v))
      return Status::InvalidArgument("--input-distribution '" + text + "': '" + s + "' is not a number; " + forms);
    if (v <= 0)
      return Status::InvalidArgument("--input-distribution '" + text + "': the Zipf exponent must be > 0; " + forms);
    d.kind = SampleDistribution::Kind::kZipf;
    d.zipf_s = v;
    return d;
  }
  return Status::InvalidArgument("--input-distribution '" + text + "': " + forms);
}

std::vector<double> ZipfPmf(size_t n, double s) {
  std::vector<double> p(n);
  double total = 0;
  for (size_t k = 0; k < n; ++k) total += p[k] = std::pow(static_cast<double>(k + 1), -s);
  for (double& x : p) x /= total;
  return p;
}

SampleChooser::SampleChooser(const SampleDistribution& dist, size_t n, uint64_t seed, size_t start)
    : kind_(dist.kind), n_(std::max<size_t>(1, n)), next_(start % n_), gen_(seed) {
  if (kind_ == SampleDistribution::Kind::kZipf) {
    cdf_ = ZipfPmf(n_, dist.zipf_s);
    for (size_t k = 1; k < n_; ++k) cdf_[k] += cdf_[k - 1];
    cdf_.back() = 1.0;
  }
}

size_t SampleChooser::Next() {
  switch (kind_) {
    case SampleDistribution::Kind::kRoundRobin: {
      size_t i = next_;
      next_ = next_ + 1 == n_ ? 0 : next_ + 1;
      return i;
    }
    case SampleDistribution::Kind::kUniform:
      return static_cast<size_t>(gen_() % n_);  // n is tiny next to 2^64: the modulo bias is negligible
    case SampleDistribution::Kind::kZipf: {
      double u = std::generate_canonical<double, 53>(gen_);  // [0, 1)
      return static_cast<size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    }
  }
  return 0;
}

uint64_t SampleChooserSeed(uint64_t seed, size_t thread) {
  // splitmix64 of the seed mixed with a constant and the thread: far from seed + small offsets.
  uint64_t z = seed ^ 0x5A3C'0F17'9D2B'6E41ULL;
  z += 0x9E37'79B9'7F4A'7C15ULL * (thread + 1);
  z = (z ^ (z >> 30)) * 0xBF58'476D'1CE4'E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D0'49BB'1331'11EBULL;
  return z ^ (z >> 31);
}

Result<std::vector<std::string>> ListSampleFolders(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::InvalidArgument("--input-data '" + dir + "': cannot read the directory: " + ec.message());
  std::vector<std::string> folders;
  bool has_npy = false;
  for (const auto& e : it) {
    if (e.path().filename().string().rfind('.', 0) == 0) continue;  // hidden: .git, .ipynb_checkpoints
    if (e.is_directory(ec)) folders.push_back(e.path().filename().string());
    else if (e.path().extension() == ".npy") has_npy = true;
  }
  if (has_npy && !folders.empty())
    return Status::InvalidArgument("--input-data '" + dir +
                                   "': holds both .npy files and folders; use DIR/<input>.npy for one sample or "
                                   "DIR/<sample>/<input>.npy for a set, not both");
  if (!has_npy && folders.empty())
    return Status::InvalidArgument("--input-data '" + dir +
                                   "': empty; expected DIR/<input>.npy or sample folders DIR/<sample>/<input>.npy");
  std::sort(folders.begin(), folders.end());
  return folders;
}

}  // namespace inferloop::perf
