#include "serve/admission_control.h"

#include "base/status_macros.h"

namespace inferloop::serve {

AdmissionTicket& AdmissionTicket::operator=(AdmissionTicket&& o) noexcept {
  if (this != &o) {
    Release();
    gate_ = std::move(o.gate_);
    also_ = std::move(o.also_);
    bytes_ = o.bytes_;
    also_bytes_ = o.also_bytes_;
    o.gate_.reset();
    o.also_.reset();
  }
  return *this;
}

void AdmissionTicket::Release() {
  if (gate_) {
    gate_->Release(bytes_);
    gate_.reset();
  }
  if (also_) {
    also_->Release(also_bytes_);
    also_.reset();
  }
}

void AdmissionTicket::Join(AdmissionTicket&& other) {
  if (also_) also_->Release(also_bytes_);
  also_ = std::move(other.gate_);
  also_bytes_ = other.bytes_;
  other.gate_.reset();
  other.Release();
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

Result<AdmissionTicket> FairAdmission::TryAdmit(const std::string& model, double weight, size_t request_bytes) {
  if (model.empty()) return server_->TryAdmit(request_bytes);
  const int64_t limit = server_->limits().max_inflight_requests;
  std::shared_ptr<AdmissionGate> gate;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Share& share = models_[model];
    if (!share.gate) share.gate = AdmissionGate::Create("model '" + model + "'", AdmissionLimits{});
    share.weight = weight > 0 ? weight : 1;
    gate = share.gate;
    const Clock::time_point now = now_();
    if (limit > 0 && 2 * server_->inflight_requests() >= limit) {
      double active = share.weight;
      for (const auto& [name, s] : models_)
        if (name != model && (s.gate->inflight_requests() > 0 || now - s.last_admitted < kActiveWindow))
          active += s.weight;
      const double allowed = static_cast<double>(limit) * share.weight / active;
      const int64_t held = gate->inflight_requests();
      if (static_cast<double>(held) >= allowed)
        return Status::ResourceExhausted("server busy: model '" + model.substr(0, 64) + "' holds " +
                                         std::to_string(held) + " of the server's " + std::to_string(limit) +
                                         " in-flight requests, its fair share while other models wait; retry later");
    }
    share.last_admitted = now;
  }
  IL_ASSIGN_OR_RETURN(AdmissionTicket ticket, server_->TryAdmit(request_bytes));
  auto counted = gate->TryAdmit(0);  // no limits: always admitted
  if (counted.ok()) ticket.Join(std::move(counted).value());
  return ticket;
}

int64_t FairAdmission::inflight(const std::string& model) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(model);
  return it == models_.end() ? 0 : it->second.gate->inflight_requests();
}

}  // namespace inferloop::serve
