#include "perf/perf_math.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "base/c_locale_number.h"

namespace inferloop::perf {
namespace {

Result<double> ParseNumber(const std::string& s, const std::string& whole) {
  if (s.empty()) return Status::InvalidArgument("range '" + whole + "': empty number");
  char* end = nullptr;
  errno = 0;
  double v = StrtodC(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v))
    return Status::InvalidArgument("range '" + whole + "': '" + s + "' is not a number");
  return v;
}

}  // namespace

Result<std::vector<double>> ParseRange(const std::string& text, bool integer) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ':')) parts.push_back(part);
  if (!text.empty() && text.back() == ':') parts.push_back("");
  if (parts.empty() || parts.size() > 3)
    return Status::InvalidArgument("range '" + text + "': expected START[:END[:STEP]]");
  double v[3] = {0, 0, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto n = ParseNumber(parts[i], text);
    if (!n.ok()) return n.status();
    v[i] = n.value();
    if (integer && v[i] != std::floor(v[i]))
      return Status::InvalidArgument("range '" + text + "': '" + parts[i] + "' is not a whole number");
  }
  if (parts.size() == 1) v[1] = v[0];
  if (v[0] <= 0) return Status::InvalidArgument("range '" + text + "': START must be > 0");
  if (v[1] < v[0]) return Status::InvalidArgument("range '" + text + "': END is below START");
  if (v[2] <= 0) return Status::InvalidArgument("range '" + text + "': STEP must be > 0");
  std::vector<double> out;
  for (int64_t i = 0;; ++i) {
    double x = v[0] + static_cast<double>(i) * v[2];
    if (x > v[1] * (1 + 1e-12)) break;
    if (out.size() == 1000) return Status::InvalidArgument("range '" + text + "': more than 1000 values");
    out.push_back(x);
  }
  return out;
}

double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  // The small epsilon keeps 99.9% of 1000 at rank 999 despite binary rounding (999.0000000001).
  double rank = std::ceil(p * static_cast<double>(sorted.size()) / 100.0 - 1e-9);
  size_t idx = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(idx, sorted.size() - 1)];
}

bool LastThreeStable(const std::vector<WindowSummary>& windows, double tolerance) {
  if (windows.size() < 3) return false;
  auto first = windows.end() - 3;
  double tmin = first->throughput, tmax = tmin, lmin = first->latency_us, lmax = lmin;
  for (auto it = first; it != windows.end(); ++it) {
    if (it->completed == 0) return false;
    tmin = std::min(tmin, it->throughput);
    tmax = std::max(tmax, it->throughput);
    lmin = std::min(lmin, it->latency_us);
    lmax = std::max(lmax, it->latency_us);
  }
  return tmax <= tmin * (1 + tolerance) && lmax <= lmin * (1 + tolerance);
}

int LittlesLawConcurrency(double latency_us, double target_rps, double headroom) {
  if (latency_us <= 0 || target_rps <= 0 || headroom <= 0) return 1;
  double c = std::ceil(latency_us * 1e-6 * target_rps * headroom - 1e-9);
  if (c < 1) return 1;
  if (c > 1e6) return 1000000;
  return static_cast<int>(c);
}

}  // namespace inferloop::perf
