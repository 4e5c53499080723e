#include "serve/admission_control.h"

namespace inferloop::serve {

AdmissionTicket& AdmissionTicket::operator=(AdmissionTicket&& o) noexcept {
  if (this != &o) {
    Release();
    gate_ = std::move(o.gate_);
    bytes_ = o.bytes_;
    o.gate_.reset();
  }
  return *this;
}

void AdmissionTicket::Release() {
  if (gate_) {
    gate_->Release(bytes_);
    gate_.reset();
  }
}

std::shared_ptr<AdmissionGate> AdmissionGate::Create(std::string what, AdmissionLimits limits) {
  return std::make_shared<AdmissionGate>(std::move(what), limits);
}

Result<AdmissionTicket> AdmissionGate::TryAdmit(size_t request_bytes) {
  const int64_t bytes = static_cast<int64_t>(request_bytes);
  if (limits_.max_inflight_bytes > 0 && bytes > limits_.max_inflight_bytes)
    return Status::ResourceExhausted(what_ + ": request of " + std::to_string(bytes) +
                                     " bytes is larger than the in-flight byte limit (" +
                                     std::to_string(limits_.max_inflight_bytes) + ")");
  // Take the slot first, then give it back if over: a short overshoot is never admitted.
  const int64_t n = requests_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (limits_.max_inflight_requests > 0 && n > limits_.max_inflight_requests) {
    requests_.fetch_sub(1, std::memory_order_acq_rel);
    return Status::ResourceExhausted(what_ + " overloaded: " + std::to_string(limits_.max_inflight_requests) +
                                     " requests in flight (the limit); retry later");
  }
  const int64_t b = bytes_.fetch_add(bytes, std::memory_order_acq_rel) + bytes;
  if (limits_.max_inflight_bytes > 0 && b > limits_.max_inflight_bytes) {
    bytes_.fetch_sub(bytes, std::memory_order_acq_rel);
    requests_.fetch_sub(1, std::memory_order_acq_rel);
    return Status::ResourceExhausted(what_ + " overloaded: " + std::to_string(b - bytes) +
                                     " request bytes in flight, limit " +
                                     std::to_string(limits_.max_inflight_bytes) + "; retry later");
  }
  return AdmissionTicket(shared_from_this(), bytes);
}

void AdmissionGate::Release(int64_t bytes) {
  bytes_.fetch_sub(bytes, std::memory_order_acq_rel);
  requests_.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace inferloop::serve
