// CircuitBreaker: stops sending work to something that keeps failing, and retries it with
// backoff. Closed: everything passes. After `failures_to_open` consecutive failures it opens:
// nothing passes for `initial_backoff`. Then it is half-open: exactly one trial passes; a success
// closes it (backoff back to initial), a failure reopens it with the backoff doubled (at most
// `max_backoff`). Thread-safe. The clock is a parameter, so tests need not sleep.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace inferloop::serve {

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    int failures_to_open = 5;
    std::chrono::milliseconds initial_backoff{1000};
    std::chrono::milliseconds max_backoff{60000};
  };
  CircuitBreaker() : CircuitBreaker(Options{}) {}
  explicit CircuitBreaker(Options options) : options_(options), backoff_(options.initial_backoff) {}

  // May new work be accepted (queued) now? True when closed, or open with the backoff over
  // (the trial is decided by AllowRun).
  bool Accepting(Clock::time_point now = Clock::now()) const;
  // May a unit of work run now? Closed: yes. Open: no until the backoff is over, then yes once
  // (the trial) until its outcome is recorded.
  bool AllowRun(Clock::time_point now = Clock::now());
  // The outcome of a run AllowRun let through: failure_message empty for a success.
  void Record(bool failed, const std::string& failure_message = "", Clock::time_point now = Clock::now());

  bool open() const;
  // "" when closed; else the count, the last failure and the current backoff.
  std::string Describe() const;

 private:
  const Options options_;
  mutable std::mutex mu_;
  int consecutive_failures_ = 0;
  bool open_ = false;
  bool trial_in_flight_ = false;
  Clock::time_point reopen_at_{};
  std::chrono::milliseconds backoff_;
  std::string last_failure_;
};

}  // namespace inferloop::serve
