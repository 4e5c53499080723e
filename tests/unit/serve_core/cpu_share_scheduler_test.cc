#include "serve/cpu_share_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace inferloop::serve {
namespace {

using Clock = CpuShareScheduler::Clock;
using Grant = CpuShareScheduler::Grant;
using Flow = CpuShareScheduler::Flow;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// A clock the test moves by hand.
struct FakeClock {
  Clock::time_point base = Clock::now();
  std::atomic<int64_t> offset_ns{0};
  std::function<Clock::time_point()> Fn() {
    return [this] { return base + nanoseconds(offset_ns.load()); };
  }
  void Advance(nanoseconds d) { offset_ns += d.count(); }
};

// Grants as waiter threads get them, labelled by flow; the test pops and releases them one by
// one, so with one slot the scheduler's choices are made in a fixed order.
class GrantLog {
 public:
  void Push(char label, Result<Grant> g) {
    std::lock_guard<std::mutex> lock(mu_);
    if (g.ok()) {
      got_.push_back({label, std::move(g).value()});
    } else {
      errors_.push_back(g.status());
    }
    cv_.notify_all();
  }
  std::pair<char, Grant> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !got_.empty(); });
    auto front = std::move(got_.front());
    got_.pop_front();
    return front;
  }
  std::vector<Status> WaitErrors(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return errors_.size() >= n; });
    return errors_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<char, Grant>> got_;
  std::vector<Status> errors_;
};

// Starts `n` threads that each wait for one grant of `flow`, and returns once all of them wait.
void StartWaiters(Flow& flow, char label, int n, GrantLog& log, std::vector<std::thread>& threads) {
  const int before = flow.Stats().waiting;
  for (int i = 0; i < n; ++i) threads.emplace_back([&flow, label, &log] { log.Push(label, flow.Acquire()); });
  while (flow.Stats().waiting < before + n) std::this_thread::yield();
}

// Pops `n` grants, releasing each with `cost`; returns their labels in grant order.
std::string PopAndRelease(GrantLog& log, int n, nanoseconds cost) {
  std::string order;
  for (int i = 0; i < n; ++i) {
    auto [label, grant] = log.Pop();
    order += label;
    grant.Release(cost);
  }
  return order;
}

void Drain(GrantLog& log, std::vector<std::thread>& threads, int remaining) {
  PopAndRelease(log, remaining, milliseconds(1));
  for (auto& t : threads) t.join();
}

TEST(CpuShareSchedulerTest, RegisterRefusesAWeightThatIsNotPositive) {
  CpuShareScheduler s({.slots = 1});
  for (double w : {0.0, -1.0, std::nan(""), double{INFINITY}}) {
    auto f = s.Register("m", w);
    ASSERT_FALSE(f.ok()) << w;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(f.status().message().find("'m'"), std::string::npos);
  }
  EXPECT_TRUE(s.Register("m", 0.5).ok());
}

TEST(CpuShareSchedulerTest, TryAcquireTakesOnlyFreeSlots) {
  CpuShareScheduler s({.slots = 2});
  EXPECT_EQ(s.slots(), 2);
  Flow a = s.Register("a", 1).value();
  Flow b = s.Register("b", 1).value();
  auto g1 = a.TryAcquire();
  auto g2 = b.TryAcquire();
  ASSERT_TRUE(g1 && g2);
  EXPECT_FALSE(a.TryAcquire().has_value());
  EXPECT_FALSE(b.TryAcquire().has_value());
  EXPECT_EQ(a.Stats().running, 1);
  g1->Release(milliseconds(3));
  EXPECT_EQ(a.Stats().running, 0);
  EXPECT_EQ(a.Stats().charged, milliseconds(3));
  EXPECT_TRUE(b.TryAcquire().has_value());  // the freed slot (released again at once)
  EXPECT_EQ(b.Stats().granted, 2u);
}

TEST(CpuShareSchedulerTest, TryAcquireDoesNotOvertakeWaiters) {
  CpuShareScheduler s({.slots = 1});
  Flow a = s.Register("a", 1).value();
  Flow b = s.Register("b", 1).value();
  GrantLog log;
  std::vector<std::thread> threads;
  auto held = b.TryAcquire();
  ASSERT_TRUE(held);
  StartWaiters(a, 'a', 1, log, threads);
  held->Release(milliseconds(1));  // goes to a's waiter
  EXPECT_FALSE(b.TryAcquire().has_value());
  Drain(log, threads, 1);
  EXPECT_TRUE(b.TryAcquire().has_value());
}

TEST(CpuShareSchedulerTest, BackloggedFlowsGetSlotsInTheRatioOfTheirWeights) {
  CpuShareScheduler s({.slots = 1});
  Flow blocker = s.Register("c", 1).value();
  Flow x = s.Register("x", 2).value();
  Flow y = s.Register("y", 1).value();
  GrantLog log;
  std::vector<std::thread> threads;
  auto held = blocker.TryAcquire();
  StartWaiters(x, 'x', 8, log, threads);
  StartWaiters(y, 'y', 8, log, threads);
  held->Release(nanoseconds(0));
  // Each grant costs 1 ms: x's virtual time moves 0.5 ms a grant, y's 1 ms (ties: x came first).
  EXPECT_EQ(PopAndRelease(log, 9, milliseconds(1)), "xyxxyxxyx");
  EXPECT_EQ(x.Stats().charged, milliseconds(6));
  EXPECT_EQ(y.Stats().charged, milliseconds(3));
  Drain(log, threads, 7);
}

TEST(CpuShareSchedulerTest, AQuietFlowIsServedBeforeTheFloodedFlowsQueue) {
  CpuShareScheduler s({.slots = 1});
  Flow blocker = s.Register("c", 1).value();
  Flow a = s.Register("flooded", 1).value();
  Flow b = s.Register("quiet", 1).value();
  GrantLog log;
  std::vector<std::thread> threads;
  auto held = blocker.TryAcquire();
  StartWaiters(a, 'a', 6, log, threads);
  held->Release(nanoseconds(0));
  EXPECT_EQ(PopAndRelease(log, 3, milliseconds(1)), "aaa");
  auto [label, running] = log.Pop();  // a's 4th grant runs while b's request comes in
  EXPECT_EQ(label, 'a');
  StartWaiters(b, 'b', 1, log, threads);
  running.Release(milliseconds(1));
  EXPECT_EQ(PopAndRelease(log, 3, milliseconds(1)), "baa");
  for (auto& t : threads) t.join();
}

TEST(CpuShareSchedulerTest, AFlowThatWasIdleGetsNoSavedCredit) {
  CpuShareScheduler s({.slots = 1});
  Flow blocker = s.Register("c", 1).value();
  Flow a = s.Register("a", 1).value();
  Flow b = s.Register("b", 1).value();  // idle while a runs alone
  GrantLog log;
  std::vector<std::thread> threads;
  auto held = blocker.TryAcquire();
  StartWaiters(a, 'a', 10, log, threads);
  held->Release(nanoseconds(0));
  EXPECT_EQ(PopAndRelease(log, 6, milliseconds(1)), "aaaaaa");
  auto [label, running] = log.Pop();
  StartWaiters(b, 'b', 4, log, threads);
  running.Release(milliseconds(1));
  // b enters at the system's virtual time, not at 0: it alternates with a instead of taking
  // the next six slots to catch up on a's 7 ms.
  EXPECT_EQ(PopAndRelease(log, 6, milliseconds(1)), "bababa");
  Drain(log, threads, 1);
}

TEST(CpuShareSchedulerTest, DestroyingAFlowCancelsItsWaiters) {
  CpuShareScheduler s({.slots = 1});
  Flow other = s.Register("other", 1).value();
  std::optional<Flow> leaving = s.Register("leaving", 1).value();
  GrantLog log;
  std::vector<std::thread> threads;
  auto held = other.TryAcquire();
  StartWaiters(*leaving, 'l', 2, log, threads);
  leaving.reset();  // returns once both waiters have left Acquire
  auto errors = log.WaitErrors(2);
  for (const Status& e : errors) EXPECT_EQ(e.code(), StatusCode::kCancelled);
  for (auto& t : threads) t.join();
  held->Release(milliseconds(1));
  EXPECT_TRUE(other.TryAcquire().has_value());  // the slot went to nobody else
}

TEST(CpuShareSchedulerTest, AGrantOutlivingItsFlowStillFreesItsSlot) {
  CpuShareScheduler s({.slots = 1});
  Flow other = s.Register("other", 1).value();
  std::optional<Grant> g;
  {
    Flow gone = s.Register("gone", 1).value();
    g = gone.TryAcquire();
    ASSERT_TRUE(g);
  }
  EXPECT_FALSE(other.TryAcquire().has_value());
  g->Release();
  EXPECT_TRUE(other.TryAcquire().has_value());
  Flow unregistered;
  EXPECT_EQ(unregistered.Acquire().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(unregistered.TryAcquire().has_value());
}

TEST(CpuShareSchedulerTest, SeveralSlotsGoToDifferentFlowsAndCountWaitAndChargeByTheClock) {
  FakeClock clock;
  CpuShareScheduler s({.slots = 2, .now = clock.Fn()});
  Flow blocker = s.Register("c", 1).value();
  Flow x = s.Register("x", 1).value();
  Flow y = s.Register("y", 1).value();
  GrantLog log;
  std::vector<std::thread> threads;
  auto h1 = blocker.TryAcquire();
  auto h2 = blocker.TryAcquire();
  ASSERT_TRUE(h1 && h2);
  StartWaiters(x, 'x', 3, log, threads);
  StartWaiters(y, 'y', 3, log, threads);
  clock.Advance(milliseconds(5));
  h1->Release(milliseconds(1));
  h2->Release(milliseconds(1));
  // x's first grant counts as running at the average cost, so y (not x's second waiter) gets the
  // second slot.
  auto first = log.Pop();
  auto second = log.Pop();
  if (second.second.sequence() < first.second.sequence()) std::swap(first, second);  // threads push in any order
  auto& [l1, g1] = first;
  auto& [l2, g2] = second;
  EXPECT_EQ(std::string() + l1 + l2, "xy");
  EXPECT_EQ(g1.sequence() + 1, g2.sequence());
  EXPECT_EQ(g1.waited(), milliseconds(5));
  EXPECT_EQ(x.Stats().running, 1);
  EXPECT_EQ(y.Stats().running, 1);
  EXPECT_EQ(x.Stats().waiting, 2);
  clock.Advance(milliseconds(7));
  g1.Release();  // charged by the clock: 7 ms held
  EXPECT_EQ(x.Stats().charged, milliseconds(7));
  EXPECT_EQ(x.Stats().waited, milliseconds(5));
  g2.Release(milliseconds(1));
  Drain(log, threads, 4);
  EXPECT_EQ(x.Stats().granted, 3u);
  EXPECT_EQ(y.Stats().granted, 3u);
}

}  // namespace
}  // namespace inferloop::serve
