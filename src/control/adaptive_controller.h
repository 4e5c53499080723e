// AdaptiveController: the decision logic of one model's adaptive loop (docs/ADAPTIVE.md), with no
// clock and no threads of its own, so tests drive it with a simulated clock and synthetic loads.
//
// Each window the loop hands it an Observation (arrivals, completions, the observed latency at
// the SLO's percentile, queue depth, execution time) and applies the Knobs it returns: which
// precision variant runs, the preferred batch size and batching delay, and how many instances run
// batches at once.
//
// Contract:
// - Cost model: each variant's median latency per batch size, measured at load
//   (ControllerConfig::variants). Capacity of a setting = rows per second it computes;
//   predicted latency at a rate = batching delay + queueing + one batch's run. A correction factor
//   learnt from observations (observed execution time per batch / the model's) scales the table,
//   so a machine busier than at load is accounted for.
// - It keeps the most precise variant whose predicted latency at the observed (smoothed) load
//   fits the SLO with headroom. It moves to a faster variant or a bigger batch at once when the
//   SLO is at risk (observed latency over the SLO, or predicted utilisation over
//   downgrade_utilisation); it moves back towards the most precise variant only after
//   upgrade_dwell_windows consecutive windows in which that setting is predicted to fit with
//   upgrade_headroom (hysteresis: a steady load never makes it flap).
// - SLO unreachable (no usable variant and setting meets it at this load): it uses the fastest
//   variant with its largest batch, and says so (Decision::slo_unreachable, reason).
// - Pin(v): variant v whatever the load (batching knobs still adapt); Free() lets it choose again.
// - No traffic for a window: back to the most precise variant with batch 1 and no delay.
//
// How (the formulas of the cost model are in control/variant_cost_model.h):
// - Rate: EWMA of arrivals / interval_s (weight `smoothing` on the newest window). Decisions use
//   max(newest, EWMA) + queue_depth / interval_s: a jump up counts at once, a fall only as the
//   EWMA follows it, and a backlog is load the setting must also absorb.
// - Correction: (busy_s / batches) / the model's time of one run of the knobs in force
//   (rows per batch = completed / batches), clamped to [0.5, 4], smoothed like the rate; the
//   factor in use is max(newest, smoothed).
// - Settings, in order of preference: variants most precise first; within one, batch sizes
//   ascending (1, the measured sizes, max_batch_size), then instances 1..max_instances. A
//   setting's batching delay is the time to fill its batch at the rate, capped by
//   max_queue_delay (0: slo_ms / 4) and by what the SLO leaves after one run; 0 for batch 1.
// - A setting fits when predicted latency <= slo_ms and utilisation <= downgrade_utilisation;
//   fits with headroom when both are under upgrade_headroom times those.
// - Each window: the knobs in force are at risk when the observed latency exceeded the SLO
//   ("slo_risk"), their predicted utilisation is over downgrade_utilisation ("overload") or
//   their predicted latency over the SLO ("slo_risk"). At risk, it moves at once to the first
//   fitting setting of the same or a faster variant (when only the observed latency says so, to
//   a faster variant or else a later setting). Not at risk, it moves to the first setting that
//   fits with headroom when that is preferred to the knobs in force and has been so for
//   upgrade_dwell_windows windows in a row ("load_fell"). Otherwise the knobs stay ("steady";
//   the delay is kept too, so noise in the rate does not move it).
// - Nothing fits: the fastest variant (most rows per second at its largest batch), its largest
//   batch, max_instances and the configured max delay ("slo_unreachable").
// - Invalid input (interval_s <= 0 or not finite, negative counts, a Pin index that is not a
//   usable variant, no usable variant at all) changes nothing: Decision::valid is false and
//   the reason "invalid". A latency_ms or busy_s that is NaN or negative is "no data".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "control/variant_cost_model.h"

namespace inferloop::control {

// One usable variant as the controller sees it.
struct VariantCost {
  std::string name;  // "fp32", "bf16", "int8"
  // (batch size, median ms of one run) measured at load, ascending batch sizes, batch 1 first.
  std::vector<std::pair<int, double>> latency_ms;
};

struct ControllerConfig {
  double slo_percentile = 99;  // (0, 100)
  double slo_ms = 100;         // > 0
  std::vector<VariantCost> variants;  // usable ones, most precise first; at least one
  int max_batch_size = 0;             // 0: the model does not batch (batch knobs stay 1 / 0)
  int max_instances = 1;              // >= 1
  std::chrono::microseconds max_queue_delay{0};  // 0: slo_ms / 4
  // Hysteresis.
  double downgrade_utilisation = 0.85;  // predicted utilisation over this: faster setting now
  double upgrade_headroom = 0.6;        // a more precise setting must be predicted under this ...
  int upgrade_dwell_windows = 3;        // ... for this many consecutive windows
  double smoothing = 0.5;               // weight of the newest window in the smoothed rate
};

// One window of what the model did (the loop measures it; tests synthesise it).
struct Observation {
  double now_s = 0;       // clock at the end of the window (seconds, any origin)
  double interval_s = 1;  // the window's length, > 0
  int64_t arrivals = 0;   // rows that arrived in the window
  int64_t completed = 0;  // rows answered in the window
  int64_t batches = 0;    // batches run in the window
  double busy_s = 0;      // execution time of those batches, summed over instances
  double latency_ms = -1;  // observed end-to-end latency at slo_percentile; < 0: none completed
  int64_t queue_depth = 0;  // waiting at the end of the window
};

struct Knobs {
  int variant = 0;               // index into ControllerConfig::variants
  int preferred_batch_size = 1;  // 1 when the model does not batch
  std::chrono::microseconds max_queue_delay{0};
  int instances = 1;
  bool operator==(const Knobs& o) const {
    return variant == o.variant && preferred_batch_size == o.preferred_batch_size &&
           max_queue_delay == o.max_queue_delay && instances == o.instances;
  }
  bool operator!=(const Knobs& o) const { return !(*this == o); }
};

struct Decision {
  Knobs knobs;
  bool changed = false;          // knobs differ from the previous decision's
  // Why, one word: "start", "slo_risk", "overload", "load_fell", "idle", "pinned", "freed",
  // "slo_unreachable", "steady", or "invalid" (input rejected, nothing changed).
  std::string reason;
  bool valid = true;             // false: the observation or Pin index was rejected
  bool slo_unreachable = false;  // also while pinned: the pinned variant cannot meet the SLO
  double rate_rps = 0;       // the arrival rate the decision used (see "Rate" above)
  double predicted_ms = 0;   // predicted latency at slo_percentile of `knobs` at that rate;
                             // < 0: unbounded (predicted utilisation >= 1)
  double correction = 1;     // observed / measured execution time
  double observed_ms = -1;   // the window's observed latency at slo_percentile (< 0: none)
};

class AdaptiveController {
 public:
  // config.variants should be non-empty with latency_ms non-empty each; a variant without a
  // valid point (batch >= 1, ms > 0) is never chosen. Out-of-range numbers in config take the
  // defaults above (slo_percentile 99, downgrade_utilisation 0.85, ...), counts are clamped.
  explicit AdaptiveController(ControllerConfig config);

  Decision Observe(const Observation& obs);
  // Holds variant `v` (an index into config.variants) until Free(); takes effect at once
  // (returned knobs, reason "pinned"; the next Observe keeps it). An index that is not a usable
  // variant: valid false, nothing changes.
  Decision Pin(int v);
  // Lets the controller choose again from the next Observe; returns the knobs in force ("freed").
  Decision Free();

  const Knobs& knobs() const { return knobs_; }
  bool pinned() const { return pinned_ >= 0; }
  const ControllerConfig& config() const { return config_; }

 private:
  struct Candidate;
  std::vector<Candidate> Candidates(double rate, double correction) const;
  Knobs HomeKnobs() const;
  Knobs FastestKnobs() const;
  std::chrono::microseconds BatchingDelay(int v, int batch, int instances, double rate,
                                          double correction) const;
  double UpdateRate(const Observation& obs);
  double UpdateCorrection(const Observation& obs);
  Decision Choose(const Observation& obs, double rate, double correction);
  Decision Rejected() const;
  Decision Apply(const Knobs& to, const char* reason, double rate, double correction);

  ControllerConfig config_;
  VariantCostModel model_;
  Knobs knobs_;
  int pinned_ = -1;
  bool started_ = false;   // a valid observation was seen
  double rate_rps_ = 0;    // EWMA of arrivals / interval
  double correction_ = 1;  // smoothed correction
  // Smoothed observed / predicted latency of the setting in force, at least 1: what the cost
  // model misses outside the runs (HTTP, client and other processes on the same CPUs). Scales the
  // predicted latency of every candidate when checking it against the SLO.
  double latency_bias_ = 1;
  double last_rate_ = 0, last_correction_ = 1;  // what the last decision used (for Pin)
  int fit_streak_ = 0;  // consecutive windows a preferred setting fit with headroom
};

}  // namespace inferloop::control
