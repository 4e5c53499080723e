#include "serve/circuit_breaker.h"

#include <algorithm>

namespace inferloop::serve {

bool CircuitBreaker::Accepting(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !open_ || now >= reopen_at_;
}

bool CircuitBreaker::AllowRun(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return true;
  if (now < reopen_at_ || trial_in_flight_) return false;
  trial_in_flight_ = true;
  return true;
}

void CircuitBreaker::Record(bool failed, const std::string& failure_message, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed) {
    consecutive_failures_ = 0;
    open_ = false;
    trial_in_flight_ = false;
    backoff_ = options_.initial_backoff;
    return;
  }
  ++consecutive_failures_;
  last_failure_ = failure_message;
  if (open_) {
    // The trial failed: wait twice as long before the next one.
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    reopen_at_ = now + backoff_;
    trial_in_flight_ = false;
  } else if (consecutive_failures_ >= options_.failures_to_open) {
    open_ = true;
    reopen_at_ = now + backoff_;
  }
}

bool CircuitBreaker::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

std::string CircuitBreaker::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return "";
  return std::to_string(consecutive_failures_) + " consecutive failed batches, last: " + last_failure_ +
         "; retrying with backoff " + std::to_string(backoff_.count()) + " ms";
}

}  // namespace inferloop::serve
