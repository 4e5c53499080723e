// LoadWindow: what one model version did since the adaptive loop last looked (arrivals, answers,
// batches, execution time, end-to-end latencies), for the per-model controller
// (control/adaptive_controller.h). Thread-safe; Record* are cheap (one short mutex hold, no
// allocation: latencies go into a fixed reservoir).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace inferloop::serve {

struct LoadWindowSnapshot {
  std::chrono::steady_clock::duration interval{};  // since the previous Take (or construction)
  int64_t arrivals = 0;   // rows accepted
  int64_t completed = 0;  // rows answered successfully
  int64_t failed = 0;     // requests answered with an error (rejected, timed out, failed)
  int64_t batches = 0;
  std::chrono::nanoseconds busy{0};  // execution time of those batches, summed
  // End-to-end latency (ms) of successful requests; a uniform sample when there were more
  // than kReservoir of them.
  std::vector<double> latencies_ms;
  // The p-th percentile (0 < p < 100) of latencies_ms (nearest rank); < 0 when empty.
  double Percentile(double p) const;
};

class LoadWindow {
 public:
  static constexpr size_t kReservoir = 4096;
  LoadWindow();
  void RecordArrival(int64_t rows);
  void RecordBatch(std::chrono::nanoseconds busy);
  void RecordDone(bool ok, int64_t rows, std::chrono::nanoseconds latency);
  // Returns what happened since the previous Take and starts a new window.
  LoadWindowSnapshot Take();

 private:
  std::mutex mu_;
  LoadWindowSnapshot current_;
  std::chrono::steady_clock::time_point started_;
  uint64_t seen_ = 0;      // successful requests this window (reservoir sampling)
  uint64_t rng_ = 88172645463325252ull;
};

}  // namespace inferloop::serve
