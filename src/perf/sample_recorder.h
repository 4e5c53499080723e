// SampleRecorder: where the load generators' I/O threads put each request's outcome, and where
// the measurement loop takes them out one window at a time. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace inferloop::perf {

// What one window collected.
struct WindowSamples {
  std::vector<double> latencies_us;          // one per successful request, in completion order
  std::map<std::string, uint64_t> errors;    // failed requests by kind
  uint64_t error_count() const {
    uint64_t n = 0;
    for (const auto& [k, v] : errors) n += v;
    return n;
  }
};

class SampleRecorder {
 public:
  // `samples`: the size of the input set (successes are also counted per sample).
  explicit SampleRecorder(size_t samples = 1) : per_sample_(samples > 0 ? samples : 1) {}

  // A successful request of input sample `sample` (< samples).
  void RecordSuccess(double latency_us, size_t sample = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    current_.latencies_us.push_back(latency_us);
    if (sample < per_sample_.size()) ++per_sample_[sample];
  }
  // kind: "http_503", "grpc_UNAVAILABLE", "connect", "overload", ...; message: what the server or
  // the socket said (the first one is kept for error reports).
  void RecordError(const std::string& kind, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    ++current_.errors[kind];
    if (first_error_.empty()) first_error_ = kind + ": " + message;
  }
  // The samples since the previous Take (or since construction), leaving the recorder empty.
  WindowSamples Take() {
    std::lock_guard<std::mutex> lock(mu_);
    WindowSamples out = std::move(current_);
    current_ = WindowSamples{};
    current_.latencies_us.reserve(out.latencies_us.size() + 1024);
    return out;
  }
  // Successful requests per sample since construction (Take does not reset them).
  std::vector<uint64_t> per_sample() const {
    std::lock_guard<std::mutex> lock(mu_);
    return per_sample_;
  }
  // "kind: message" of the first error recorded since construction; empty when none.
  std::string first_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }

 private:
  mutable std::mutex mu_;
  WindowSamples current_;
  std::string first_error_;
  std::vector<uint64_t> per_sample_;
};

}  // namespace inferloop::perf
