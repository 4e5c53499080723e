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
  void RecordSuccess(double latency_us) {
    std::lock_guard<std::mutex> lock(mu_);
    current_.latencies_us.push_back(latency_us);
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
  // "kind: message" of the first error recorded since construction; empty when none.
  std::string first_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }

 private:
  mutable std::mutex mu_;
  WindowSamples current_;
  std::string first_error_;
};

}  // namespace inferloop::perf
