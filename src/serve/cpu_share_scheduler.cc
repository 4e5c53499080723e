#include "serve/cpu_share_scheduler.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>

#include "base/thread_pool.h"

namespace inferloop::serve {

using std::chrono::nanoseconds;

namespace {

struct FlowState {
  std::string name;
  double weight = 1;
  double vtime = 0;        // nanoseconds / weight, including the estimates of running grants
  double estimate_ns = 0;  // moving average of charges (1/8 weight)
  bool charged_once = false;
  bool closing = false;
  CpuShareScheduler::FlowStats stats;
};

struct Waiter {
  uint64_t flow = 0;
  uint64_t seq = 0;  // arrival order, for FIFO within a flow and ties between flows
  CpuShareScheduler::Clock::time_point since;
  bool granted = false;
  bool cancelled = false;
  CpuShareScheduler::Grant* out = nullptr;
};

}  // namespace

class CpuShareScheduler::Impl : public std::enable_shared_from_this<CpuShareScheduler::Impl> {
 public:
  explicit Impl(Options o) : slots_(o.slots > 0 ? o.slots : DefaultThreadCount()), now_(std::move(o.now)) {
    if (!now_) now_ = [] { return Clock::now(); };
  }

  int slots() const { return slots_; }

  uint64_t Add(std::string name, double weight) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = ++next_flow_;
    FlowState& f = flows_[id];
    f.name = std::move(name);
    f.weight = weight;
    f.vtime = system_v_;
    return id;
  }

  // Wakes the flow's waiters with Cancelled, waits until they left, then forgets the flow.
  void Remove(uint64_t id) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = flows_.find(id);
    if (it == flows_.end()) return;
    it->second.closing = true;
    waiters_.remove_if([&](Waiter* w) {
      if (w->flow != id) return false;
      w->cancelled = true;
      return true;
    });
    cv_.notify_all();
    cv_.wait(lock, [&] { return flows_.at(id).stats.waiting == 0; });
    flows_.erase(id);
  }

  Result<Grant> Acquire(uint64_t id) {
    std::unique_lock<std::mutex> lock(mu_);
    FlowState* f = Find(id);
    if (f == nullptr || f->closing) return Status(StatusCode::kCancelled, "the CPU-share flow is closing");
    Grant grant;
    Waiter w;
    w.flow = id;
    w.seq = ++next_seq_;
    w.since = now_();
    w.out = &grant;
    Enter(*f);
    f->stats.waiting += 1;
    waiters_.push_back(&w);
    Dispatch();
    cv_.wait(lock, [&] { return w.granted || w.cancelled; });
    f = Find(id);
    f->stats.waiting -= 1;
    if (!w.granted) {  // Remove() took it off the list
      cv_.notify_all();  // Remove() waits for waiting == 0
      return Status(StatusCode::kCancelled, "the CPU-share flow '" + f->name + "' closed while waiting");
    }
    return grant;
  }

  std::optional<Grant> TryAcquire(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    FlowState* f = Find(id);
    if (f == nullptr || f->closing || busy_ >= slots_ || !waiters_.empty()) return std::nullopt;
    Grant grant;
    Enter(*f);
    Give(id, *f, grant, nanoseconds(0));
    return grant;
  }

  void Release(Grant& g, std::optional<nanoseconds> cost) {
    std::lock_guard<std::mutex> lock(mu_);
    nanoseconds charge = cost ? *cost : std::chrono::duration_cast<nanoseconds>(now_() - g.granted_at_);
    charge = std::max(charge, nanoseconds(0));
    busy_ -= 1;
    if (FlowState* f = Find(g.flow_)) {
      const double ns = static_cast<double>(charge.count());
      f->vtime += (ns - g.estimate_ns_) / f->weight;
      f->estimate_ns = f->charged_once ? f->estimate_ns + (ns - f->estimate_ns) / 8 : ns;
      f->charged_once = true;
      any_estimate_ns_ = any_charged_ ? any_estimate_ns_ + (ns - any_estimate_ns_) / 8 : ns;
      any_charged_ = true;
      f->stats.charged += charge;
      f->stats.running -= 1;
      f->stats.virtual_time = f->vtime;
    }
    if (busy_ == 0 && waiters_.empty()) {
      // Nothing runs or waits: the next arrival starts level with the furthest flow.
      for (const auto& [id, f] : flows_) system_v_ = std::max(system_v_, f.vtime);
    }
    Dispatch();
  }

  void SetWeight(uint64_t id, double weight) {
    std::lock_guard<std::mutex> lock(mu_);
    if (FlowState* f = Find(id); f != nullptr && weight > 0 && std::isfinite(weight)) f->weight = weight;
  }

  FlowStats Stats(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flows_.find(id);
    if (it == flows_.end()) return {};
    FlowStats s = it->second.stats;
    s.virtual_time = it->second.vtime;
    return s;
  }

 private:
  FlowState* Find(uint64_t id) {
    auto it = flows_.find(id);
    return it == flows_.end() ? nullptr : &it->second;
  }

  // A flow with nothing waiting or running re-enters at the system virtual time (no saved credit).
  void Enter(FlowState& f) {
    if (f.stats.waiting == 0 && f.stats.running == 0) f.vtime = std::max(f.vtime, system_v_);
  }

  // Gives free slots to waiters: the smallest flow virtual time first, then arrival order.
  void Dispatch() {
    bool woke = false;
    while (busy_ < slots_) {
      Waiter* best = nullptr;
      double best_v = 0;
      for (Waiter* w : waiters_) {  // in arrival order, so the first of a flow is its oldest
        const double v = flows_.at(w->flow).vtime;
        if (best == nullptr || v < best_v) {
          best = w;
          best_v = v;
        }
      }
      if (best == nullptr) break;
      waiters_.remove(best);
      best->granted = true;
      Give(best->flow, flows_.at(best->flow), *best->out,
           std::chrono::duration_cast<nanoseconds>(now_() - best->since));
      woke = true;
    }
    if (woke) cv_.notify_all();
  }

  void Give(uint64_t id, FlowState& f, Grant& g, nanoseconds waited) {
    busy_ += 1;
    system_v_ = std::max(system_v_, f.vtime);  // the start tag of the latest grant
    g.impl_ = shared_from_this();
    g.flow_ = id;
    g.sequence_ = ++next_grant_;
    g.waited_ = waited;
    // A flow that has not run yet is assumed to cost what grants cost on average.
    g.estimate_ns_ = f.charged_once ? f.estimate_ns : any_estimate_ns_;
    g.granted_at_ = now_();
    f.vtime += g.estimate_ns_ / f.weight;
    f.stats.granted += 1;
    f.stats.waited += waited;
    f.stats.running += 1;
    f.stats.virtual_time = f.vtime;
  }

  const int slots_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, FlowState> flows_;
  std::list<Waiter*> waiters_;  // arrival order
  int busy_ = 0;
  double system_v_ = 0;
  double any_estimate_ns_ = 0;  // moving average of every flow's charges
  bool any_charged_ = false;
  uint64_t next_flow_ = 0, next_seq_ = 0, next_grant_ = 0;
};

// --- Grant ---

CpuShareScheduler::Grant::Grant(Grant&& other) noexcept { *this = std::move(other); }

CpuShareScheduler::Grant& CpuShareScheduler::Grant::operator=(Grant&& other) noexcept {
  if (this != &other) {
    Release();
    impl_ = std::move(other.impl_);
    other.impl_ = nullptr;
    flow_ = other.flow_;
    sequence_ = other.sequence_;
    waited_ = other.waited_;
    estimate_ns_ = other.estimate_ns_;
    granted_at_ = other.granted_at_;
  }
  return *this;
}

CpuShareScheduler::Grant::~Grant() { Release(); }

void CpuShareScheduler::Grant::Release() {
  if (!impl_) return;
  std::shared_ptr<Impl> impl = std::move(impl_);
  impl_ = nullptr;
  impl->Release(*this, std::nullopt);
}

void CpuShareScheduler::Grant::Release(nanoseconds cost) {
  if (!impl_) return;
  std::shared_ptr<Impl> impl = std::move(impl_);
  impl_ = nullptr;
  impl->Release(*this, cost);
}

// --- Flow ---

CpuShareScheduler::Flow& CpuShareScheduler::Flow::operator=(Flow&& other) noexcept {
  if (this != &other) {
    Unregister();
    impl_ = std::move(other.impl_);
    other.impl_ = nullptr;
    id_ = other.id_;
    name_ = std::move(other.name_);
  }
  return *this;
}

CpuShareScheduler::Flow::~Flow() { Unregister(); }

void CpuShareScheduler::Flow::Unregister() {
  if (impl_) impl_->Remove(id_);
  impl_ = nullptr;
}

Result<CpuShareScheduler::Grant> CpuShareScheduler::Flow::Acquire() {
  if (!impl_) return Status::FailedPrecondition("CPU-share flow is not registered");
  std::shared_ptr<Impl> impl = impl_;  // the call below may outlive this Flow's destruction
  return impl->Acquire(id_);
}

std::optional<CpuShareScheduler::Grant> CpuShareScheduler::Flow::TryAcquire() {
  if (!impl_) return std::nullopt;
  return impl_->TryAcquire(id_);
}

void CpuShareScheduler::Flow::SetWeight(double weight) {
  if (impl_) impl_->SetWeight(id_, weight);
}

CpuShareScheduler::FlowStats CpuShareScheduler::Flow::Stats() const { return impl_ ? impl_->Stats(id_) : FlowStats{}; }

// --- CpuShareScheduler ---

CpuShareScheduler::CpuShareScheduler() : CpuShareScheduler(Options{}) {}

CpuShareScheduler::CpuShareScheduler(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {}

CpuShareScheduler::~CpuShareScheduler() = default;

Result<CpuShareScheduler::Flow> CpuShareScheduler::Register(std::string name, double weight) {
  if (!(weight > 0) || !std::isfinite(weight))
    return Status::InvalidArgument("CPU share of '" + name + "' must be a positive number, got " + std::to_string(weight));
  Flow f;
  f.impl_ = impl_;
  f.name_ = name;
  f.id_ = impl_->Add(std::move(name), weight);
  return f;
}

int CpuShareScheduler::slots() const { return impl_->slots(); }

}  // namespace inferloop::serve
