// When reading a prefix's KV blocks from the disk tier beats computing them (prefill).
//
// Prefill speed is measured by the engine on every step that prefills (tokens of the step over
// the forward pass's seconds), kept per length bucket of the position the step reached
// (positions 1-15, 16-31, 32-63, ... one bucket per power of two), because attention makes a
// token late in a long prompt dearer than an early one. The prefill time of positions
// [from, to) is the sum over the buckets it spans of tokens / that bucket's speed (the nearest
// measured bucket where one is not measured yet). Read speed (bytes/s) is the disk tier's moving
// average (kv_disk_tier.h). Reading wins when bytes / read speed < prefill seconds; with no
// prefill measured yet (a server that just started) reading wins. Moving averages: each new
// figure moves the estimate by kSpeedSmoothing of the difference.
#pragma once

#include <array>
#include <optional>

namespace inferloop::llm {

inline constexpr double kSpeedSmoothing = 0.3;

// Blends `sample` into `average` (0: none yet) by kSpeedSmoothing.
double SmoothSpeed(double average, double sample);

class PrefillSpeed {
 public:
  // A step that computed `tokens` tokens in `seconds`, the furthest reaching position `end_pos`.
  void Record(int end_pos, int tokens, double seconds);
  // Estimated seconds to prefill positions [from, to); nullopt before any measurement.
  std::optional<double> Seconds(int from, int to) const;
  // Tokens/s of the bucket holding `pos` (nearest measured one); 0 when none is.
  double TokensPerSecond(int pos) const;

 private:
  static constexpr int kBuckets = 32;
  static int BucketOf(int pos);
  std::array<double, kBuckets> tps_{};  // 0: not measured
};

// True when reading `bytes` at `read_bytes_per_second` takes less than `prefill_seconds` (or no
// prefill figure exists yet); false when the read speed is unknown (0).
bool ReadBeatsPrefill(double bytes, double read_bytes_per_second, std::optional<double> prefill_seconds);

}  // namespace inferloop::llm
