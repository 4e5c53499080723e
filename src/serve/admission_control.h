// Admission control: bounds on what a server (or one model) holds at once, checked before a
// request is queued, so overload is answered at once instead of growing a queue.
//
// An AdmissionGate counts requests in flight and their bytes against limits (0 = no limit).
// TryAdmit either takes a ticket (released when the ticket is destroyed, i.e. when the request
// has been answered) or fails with ResourceExhausted naming the limit. Gates are shared by
// shared_ptr so a ticket may outlive whoever created it. Thread-safe, lock-free.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "inferloop/status.h"

namespace inferloop::serve {

struct AdmissionLimits {
  int64_t max_inflight_requests = 0;  // 0: unlimited
  int64_t max_inflight_bytes = 0;     // 0: unlimited
};

class AdmissionGate;

// Holds one admitted request's share of a gate; movable, releases on destruction.
class AdmissionTicket {
 public:
  AdmissionTicket() = default;
  AdmissionTicket(std::shared_ptr<AdmissionGate> gate, int64_t bytes) : gate_(std::move(gate)), bytes_(bytes) {}
  AdmissionTicket(AdmissionTicket&& o) noexcept
      : gate_(std::move(o.gate_)), also_(std::move(o.also_)), bytes_(o.bytes_) {
    o.gate_.reset();
    o.also_.reset();
  }
  AdmissionTicket& operator=(AdmissionTicket&& o) noexcept;
  AdmissionTicket(const AdmissionTicket&) = delete;
  AdmissionTicket& operator=(const AdmissionTicket&) = delete;
  ~AdmissionTicket() { Release(); }
  void Release();
  // Makes this ticket also hold `other` (released together): a request counted in two gates.
  void Join(AdmissionTicket&& other);

 private:
  std::shared_ptr<AdmissionGate> gate_;
  std::shared_ptr<AdmissionGate> also_;  // a second gate (Join), released with the first
  int64_t bytes_ = 0;
  int64_t also_bytes_ = 0;
};

class AdmissionGate : public std::enable_shared_from_this<AdmissionGate> {
 public:
  // `what` names the scope in error messages ("server", "model 'resnet50'").
  static std::shared_ptr<AdmissionGate> Create(std::string what, AdmissionLimits limits);

  Result<AdmissionTicket> TryAdmit(size_t request_bytes);

  int64_t inflight_requests() const { return requests_.load(std::memory_order_relaxed); }
  int64_t inflight_bytes() const { return bytes_.load(std::memory_order_relaxed); }
  const AdmissionLimits& limits() const { return limits_; }

  AdmissionGate(std::string what, AdmissionLimits limits) : what_(std::move(what)), limits_(limits) {}

 private:
  friend class AdmissionTicket;
  void Release(int64_t bytes);

  const std::string what_;
  const AdmissionLimits limits_;
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> bytes_{0};
};

// Weighted fair admission to the server's gate (docs/ADAPTIVE.md, "Fair sharing"): while the
// server holds at least half its in-flight request limit, a model is refused once it holds its
// weighted share of that limit: limit * weight / (sum of the weights of the active models,
// itself included; active = requests in flight, or one admitted within kActiveWindow: a quiet
// model between two requests still keeps its share). So a flooded model cannot fill the server's limit and
// starve a quiet one; without contention every model may use all of it. With no server request
// limit it is the server gate alone. Thread-safe; one short lock per admission.
class FairAdmission {
 public:
  static constexpr std::chrono::seconds kActiveWindow{10};
  using Clock = std::chrono::steady_clock;
  explicit FairAdmission(std::shared_ptr<AdmissionGate> server, std::function<Clock::time_point()> now = Clock::now)
      : server_(std::move(server)), now_(std::move(now)) {}
  // `model` empty: the server gate alone (unknown models are not tracked). weight > 0.
  Result<AdmissionTicket> TryAdmit(const std::string& model, double weight, size_t request_bytes);
  // Requests `model` holds now (0 for an unknown one).
  int64_t inflight(const std::string& model);

 private:
  struct Share {
    std::shared_ptr<AdmissionGate> gate;
    double weight = 1;
    Clock::time_point last_admitted{};
  };
  std::shared_ptr<AdmissionGate> server_;
  std::function<Clock::time_point()> now_;
  std::mutex mu_;
  std::map<std::string, Share> models_;
};

}  // namespace inferloop::serve
