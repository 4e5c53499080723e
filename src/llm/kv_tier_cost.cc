#include "llm/kv_tier_cost.h"

#include <algorithm>
#include <bit>

namespace inferloop::llm {

double SmoothSpeed(double average, double sample) {
  if (!(sample > 0)) return average;
  if (!(average > 0)) return sample;
  return average + kSpeedSmoothing * (sample - average);
}

int PrefillSpeed::BucketOf(int pos) {
  return std::clamp(static_cast<int>(std::bit_width(static_cast<unsigned>(std::max(pos, 1)))) - 1, 0, kBuckets - 1);
}

void PrefillSpeed::Record(int end_pos, int tokens, double seconds) {
  if (tokens <= 0 || !(seconds > 0)) return;
  double& t = tps_[BucketOf(end_pos)];
  t = SmoothSpeed(t, tokens / seconds);
}

double PrefillSpeed::TokensPerSecond(int pos) const {
  const int b = BucketOf(pos);
  for (int d = 0; d < kBuckets; ++d) {
    if (b - d >= 0 && tps_[b - d] > 0) return tps_[b - d];
    if (b + d < kBuckets && tps_[b + d] > 0) return tps_[b + d];
  }
  return 0;
}

std::optional<double> PrefillSpeed::Seconds(int from, int to) const {
  if (TokensPerSecond(from) <= 0) return std::nullopt;
  double s = 0;
  for (int p = std::max(from, 0); p < to;) {
    // The end of p's bucket: the next power of two above p (position p is token p + 1).
    const int end = std::min(to, static_cast<int>(std::bit_floor(static_cast<unsigned>(p + 1))) * 2 - 1);
    const int n = std::max(end - p, 1);
    s += n / TokensPerSecond(p + 1);
    p += n;
  }
  return s;
}

bool ReadBeatsPrefill(double bytes, double read_bytes_per_second, std::optional<double> prefill_seconds) {
  if (!prefill_seconds) return true;
  if (!(read_bytes_per_second > 0)) return false;
  return bytes / read_bytes_per_second < *prefill_seconds;
}

}  // namespace inferloop::llm
