#include "serve/load_window.h"

#include <algorithm>
#include <cmath>

namespace inferloop::serve {

double LoadWindowSnapshot::Percentile(double p) const {
  if (latencies_ms.empty()) return -1;
  std::vector<double> v = latencies_ms;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const size_t k = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

LoadWindow::LoadWindow() : started_(std::chrono::steady_clock::now()) { current_.latencies_ms.reserve(kReservoir); }

void LoadWindow::RecordArrival(int64_t rows) {
  std::lock_guard<std::mutex> lock(mu_);
  current_.arrivals += rows;
}

void LoadWindow::RecordBatch(std::chrono::nanoseconds busy) {
  std::lock_guard<std::mutex> lock(mu_);
  current_.batches += 1;
  current_.busy += busy;
}

void LoadWindow::RecordDone(bool ok, int64_t rows, std::chrono::nanoseconds latency) {
  const double ms = static_cast<double>(latency.count()) / 1e6;
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {
    current_.failed += 1;
    return;
  }
  current_.completed += rows;
  ++seen_;
  if (current_.latencies_ms.size() < kReservoir) {
    current_.latencies_ms.push_back(ms);
    return;
  }
  // Reservoir sampling (xorshift64): keep each of the seen_ latencies with equal probability.
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const uint64_t j = rng_ % seen_;
  if (j < kReservoir) current_.latencies_ms[j] = ms;
}

LoadWindowSnapshot LoadWindow::Take() {
  LoadWindowSnapshot next;
  next.latencies_ms.reserve(kReservoir);
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  LoadWindowSnapshot out = std::move(current_);
  out.interval = now - started_;
  current_ = std::move(next);
  started_ = now;
  seen_ = 0;
  return out;
}

}  // namespace inferloop::serve
