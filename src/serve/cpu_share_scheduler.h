// CpuShareScheduler: the server's execution slots, shared by every model version in proportion to
// its CPU share (config.pbtxt `adaptive { cpu_share: 2 }`, default 1), so that a flooded model
// cannot push a quiet one past its latency objective (docs/ADAPTIVE.md).
//
// Use: a version registers a Flow with its weight; before running a batch its worker calls
// Flow::Acquire (blocking) and holds the Grant while the batch runs; releasing the Grant frees the
// slot and charges the flow. The inline path (a tiny request run on the caller's io thread) calls
// TryAcquire, which never waits: without a free slot the request is queued as usual.
//
// Discipline: start-time fair queueing (SFQ, Goyal et al. 1996) over flows, FIFO within a flow.
//  - A flow's virtual time advances by charge / weight. The waiting flow with the smallest
//    virtual time (its next grant's start tag) gets the next free slot; ties go to the flow whose
//    oldest waiter came first.
//  - The system virtual time is the start tag of the latest grant (SFQ's v(t)); when nothing runs
//    and nothing waits it jumps to the largest virtual time of any flow. A flow that had nothing
//    waiting or running re-enters at max(its own, the system's): idle time earns no credit.
//  - Why SFQ and not WFQ/DRR: the cost of a batch is only known once it ran. SFQ orders by start
//    tags, which need no cost up front; WFQ orders by finish tags (needs the cost) and DRR needs a
//    per-round quantum sized to the largest job. To keep a flow with several grants running at
//    once from looking cheap until they end, each grant charges an estimate when it is given (the
//    flow's moving average of charges; before its first, the average over all flows) and the
//    difference when it is released.
//  - Charge: the wall time the grant was held (slot-seconds), not times the threads it used: the
//    intra-op pool hands a caller whatever team is free when it starts, so the thread count of a
//    batch is not the model's choice and not known here; slots are the resource this shares.
//
// Work conserving: a slot is never left free while someone waits. Thread-safe. The scheduler's
// state lives as long as any Flow or Grant of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "inferloop/status.h"

namespace inferloop::serve {

class CpuShareScheduler {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    int slots = 0;  // batches running at once, over every flow; <= 0: DefaultThreadCount()
    std::function<Clock::time_point()> now;  // for tests; empty: Clock::now
  };

  // One flow's figures since it registered.
  struct FlowStats {
    uint64_t granted = 0;
    std::chrono::nanoseconds waited{0};   // summed over grants: Acquire called to slot given
    std::chrono::nanoseconds charged{0};  // summed over released grants (before the weight)
    int waiting = 0;                      // threads inside Acquire now
    int running = 0;                      // grants held now
    double virtual_time = 0;              // nanoseconds / weight
  };

  class Impl;

  // A held slot. Movable; releasing (or destroying) it frees the slot.
  class Grant {
   public:
    Grant() = default;
    Grant(Grant&& other) noexcept;
    Grant& operator=(Grant&& other) noexcept;
    ~Grant();
    // Frees the slot and charges the time held since it was given (by the scheduler's clock).
    void Release();
    // Frees the slot and charges `cost` instead (cost < 0 counts as 0).
    void Release(std::chrono::nanoseconds cost);
    bool held() const { return impl_ != nullptr; }
    // How long the Acquire that got it waited (0 for TryAcquire).
    std::chrono::nanoseconds waited() const { return waited_; }
    // 1, 2, 3 ... in the order the scheduler gave slots, over every flow (for tests).
    uint64_t sequence() const { return sequence_; }

   private:
    friend class Impl;
    std::shared_ptr<Impl> impl_;
    uint64_t flow_ = 0;
    uint64_t sequence_ = 0;
    std::chrono::nanoseconds waited_{0};
    double estimate_ns_ = 0;  // charged at grant time
    Clock::time_point granted_at_;
  };

  // A registered flow (one model version). Movable; destroying it unregisters the flow: threads
  // waiting in its Acquire return Cancelled first (the destructor waits for them to leave), and
  // its grants still held free their slots when released, charging nobody.
  class Flow {
   public:
    Flow() = default;
    Flow(Flow&& other) noexcept = default;
    Flow& operator=(Flow&& other) noexcept;
    ~Flow();

    // Waits for a slot. Cancelled when the flow is being destroyed meanwhile.
    Result<Grant> Acquire();
    // A slot now, or nullopt when none is free or other requests are waiting for one.
    std::optional<Grant> TryAcquire();
    // New weight (> 0; others are ignored) for grants from now on.
    void SetWeight(double weight);
    FlowStats Stats() const;
    const std::string& name() const { return name_; }

   private:
    friend class CpuShareScheduler;
    void Unregister();
    std::shared_ptr<Impl> impl_;
    uint64_t id_ = 0;
    std::string name_;
  };

  CpuShareScheduler();  // default Options
  explicit CpuShareScheduler(Options options);
  ~CpuShareScheduler();
  CpuShareScheduler(const CpuShareScheduler&) = delete;
  CpuShareScheduler& operator=(const CpuShareScheduler&) = delete;

  // InvalidArgument when weight is not > 0 (or not finite).
  Result<Flow> Register(std::string name, double weight);
  int slots() const;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace inferloop::serve
