// VariantCostModel: what a setting (variant, batch size, instances, batching delay) of one model
// costs and how long a request waits under it, from each variant's latency per batch size measured
// at load. The adaptive controller (control/adaptive_controller.h) ranks settings with it.
//
// Contract (all times in the table are milliseconds of one run, measured with no other load):
// - RunMs(v, b): linear interpolation between measured batch sizes; beyond the largest measured
//   one, the last per-row slope (or, with a single point, that point's ms per row) extrapolates;
//   below the smallest, the smallest's time. A variant with no valid point is unusable.
// - Instances: every run already uses all of the server's CPU threads (intra-op parallelism), so
//   a second instance only overlaps the serial parts of the runs. Conservatively, i instances
//   compute InstanceThroughput(i) = 1 + kExtraInstanceGain * (i - 1) times the rows of one, and
//   each run, sharing the CPU, takes i / InstanceThroughput(i) times its measured time.
// - Predict(setting, rate, correction), with c = correction, q = percentile / 100:
//     fill     = batching delay a row waits for the batch to form: min(delay, (b - 1) / rate);
//     b_eff    = rows a batch really holds: min(b, 1 + rate * delay) (b when the batch fills);
//     T        = c * RunMs(v, b_eff);  m = InstanceThroughput(i)
//     run      = T * i / m                          (one batch's run while i instances share)
//     S        = T / m                              (time per batch of the instances as one server)
//     rho      = rate * S / b_eff                   (utilisation; capacity = b_eff / S rows/s)
//     wait_q   = ln(1 / (1 - q)) * rho * S / (2 * (1 - rho))
//                (the M/D/1 mean wait rho*S/(2(1-rho)), read at percentile q of an exponential
//                 with that mean: conservative, it ignores that 1 - rho of the rows never wait)
//     latency  = fill + wait_q + run                (infinite when rho >= 1)
#pragma once

#include <utility>
#include <vector>

namespace inferloop::control {

struct VariantCost;

struct Prediction {
  double latency_ms = 0;   // at the percentile; +infinity when utilisation >= 1
  double utilisation = 0;  // rho
  double run_ms = 0;       // one batch's run
};

class VariantCostModel {
 public:
  static constexpr double kExtraInstanceGain = 0.15;

  VariantCostModel(const std::vector<VariantCost>& variants, double percentile);

  int size() const { return static_cast<int>(tables_.size()); }
  bool usable(int v) const { return v >= 0 && v < size() && !tables_[v].empty(); }
  bool any_usable() const;
  // Measured batch sizes of variant v up to max_batch_size, with 1 and max_batch_size; {1} when
  // max_batch_size is 0 (no batching).
  std::vector<int> BatchSizes(int v, int max_batch_size) const;
  // Uncorrected ms of one run of `batch` rows (fractional batches interpolate).
  double RunMs(int v, double batch) const;
  static double InstanceThroughput(int instances);
  // How much longer one run takes while `instances` share the CPU: i / InstanceThroughput(i).
  static double InstanceSlowdown(int instances);

  Prediction Predict(int v, int batch, int instances, double delay_s, double rate_rps,
                     double correction) const;

 private:
  std::vector<std::vector<std::pair<int, double>>> tables_;  // valid points, ascending batch
  double tail_factor_;                                        // ln(1 / (1 - q))
};

}  // namespace inferloop::control
