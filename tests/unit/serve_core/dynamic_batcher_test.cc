// DynamicBatcher (src/serve/dynamic_batcher.h). Determinism: requests are queued while the
// instance is parked inside the executor (Harness::Hold), so what the next batch holds never
// depends on thread timing; waits are for events, with a generous timeout.
#include "serve/dynamic_batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "batcher_harness.h"

namespace inferloop::serve {
namespace {

using testing::Harness;
using testing::RecordedBatch;
using testing::RecordingObserver;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr auto kHour = std::chrono::hours(1);

BatcherOptions Options(int max_batch_size, microseconds delay = microseconds(0)) {
  BatcherOptions o;
  o.max_batch_size = max_batch_size;
  o.max_queue_delay = delay;
  o.name = "test:1";
  return o;
}

// Parks the batcher's instance on a full batch of `rows` rows (key "blocker").
void Park(Harness& h, DynamicBatcher& b, int64_t rows, const std::string& id = "blocker") {
  h.Hold();
  ASSERT_TRUE(b.Enqueue(h.Make(id, rows, "blocker")).ok());
  ASSERT_TRUE(h.WaitInExecutor(1));
}

TEST(DynamicBatcherTest, ReasonNames) {
  EXPECT_STREQ(DispatchReasonName(DispatchReason::kFull), "full");
  EXPECT_STREQ(DispatchReasonName(DispatchReason::kPreferred), "preferred");
  EXPECT_STREQ(DispatchReasonName(DispatchReason::kDelay), "delay");
}

TEST(DynamicBatcherTest, CoalescesQueuedRequestsUpToMaxBatchSize) {
  Harness h;
  RecordingObserver obs;
  auto b = std::make_unique<DynamicBatcher>(Options(4), h.Executor(), &obs);
  Park(h, *b, 4);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i))).ok());
  EXPECT_EQ(b->QueueDepth(), 10);
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(11));
  b.reset();

  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].reason, DispatchReason::kFull);  // the blocker: rows == max_batch_size
  EXPECT_EQ(batches[1].rows, 4);
  EXPECT_EQ(batches[1].reason, DispatchReason::kFull);
  EXPECT_EQ(batches[2].rows, 4);
  EXPECT_EQ(batches[2].reason, DispatchReason::kFull);
  EXPECT_EQ(batches[3].rows, 2);
  EXPECT_EQ(batches[3].reason, DispatchReason::kDelay);  // max_queue_delay 0: at once
  // FIFO within the level.
  std::vector<std::string> want = {"blocker"};
  for (int i = 0; i < 10; ++i) want.push_back("r" + std::to_string(i));
  EXPECT_EQ(h.ComputedIds(), want);
  for (const auto& [id, a] : h.Answers()) {
    EXPECT_EQ(a.calls, 1) << id;
    EXPECT_EQ(a.code, StatusCode::kOk) << id;
    EXPECT_EQ(a.message, id);
  }
  EXPECT_EQ(obs.dispatches(), 4);
  const auto depths = obs.depths();
  ASSERT_FALSE(depths.empty());
  EXPECT_EQ(depths.back(), 0);
  EXPECT_EQ(*std::max_element(depths.begin(), depths.end()), 10);
}

TEST(DynamicBatcherTest, RowsNeverExceedMaxBatchSize) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(4), h.Executor(), nullptr);
  Park(h, *b, 4);
  const std::vector<int64_t> rows = {3, 2, 2, 1, 3, 4, 1};
  for (size_t i = 0; i < rows.size(); ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i), rows[i])).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(rows.size() + 1));
  b.reset();
  int64_t total = 0;
  for (const auto& batch : h.Batches()) {
    EXPECT_LE(batch.rows, 4);
    EXPECT_GE(batch.rows, 1);
    total += batch.rows;
  }
  EXPECT_EQ(total, 4 + 3 + 2 + 2 + 1 + 3 + 4 + 1);
  // Compatible requests keep their order: a batch stops at the first one that does not fit.
  std::vector<std::string> want = {"blocker", "r0", "r1", "r2", "r3", "r4", "r5", "r6"};
  EXPECT_EQ(h.ComputedIds(), want);
}

TEST(DynamicBatcherTest, RefusesRequestLargerThanMaxBatchSize) {
  Harness h;
  DynamicBatcher b(Options(4), h.Executor(), nullptr);
  Status s = b.Enqueue(h.Make("big", 5));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_batch_size 4"), std::string::npos) << s.message();
  EXPECT_EQ(b.Enqueue(h.Make("zero", 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.Enqueue(nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(h.Answers().empty());  // refusals do not call done
}

TEST(DynamicBatcherTest, NoBatchingRunsOneRequestPerBatch) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(0), h.Executor(), nullptr);
  Park(h, *b, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i), 1)).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(4));
  b.reset();
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 4u);
  for (const auto& batch : batches) {
    EXPECT_EQ(batch.ids.size(), 1u);
    EXPECT_EQ(batch.reason, DispatchReason::kFull);
  }
}

TEST(DynamicBatcherTest, PreferredSizeDispatchesWithoutWaitingForTheDelay) {
  Harness h;
  BatcherOptions o = Options(8, kHour);
  o.preferred_batch_sizes = {2, 4};
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 8);  // full: goes at once despite the hour-long delay
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i))).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(5));
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].reason, DispatchReason::kFull);
  EXPECT_EQ(batches[1].rows, 4);
  EXPECT_EQ(batches[1].reason, DispatchReason::kPreferred);
}

TEST(DynamicBatcherTest, PartialBatchWaitsForMoreUntilFull) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(3, kHour), h.Executor(), nullptr);
  // With an hour of delay and no preferred sizes, the first requests can only go as a full batch.
  ASSERT_TRUE(b->Enqueue(h.Make("a")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("b")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("c")).ok());
  ASSERT_TRUE(h.WaitAnsweredCount(3));
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].rows, 3);
  EXPECT_EQ(batches[0].reason, DispatchReason::kFull);
}

TEST(DynamicBatcherTest, DelayReasonWhenTheOldestRequestWaitedLongEnough) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(8, milliseconds(2)), h.Executor(), nullptr);
  ASSERT_TRUE(b->Enqueue(h.Make("a")).ok());
  ASSERT_TRUE(h.WaitAnswered("a"));
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].rows, 1);
  EXPECT_EQ(batches[0].reason, DispatchReason::kDelay);
  EXPECT_EQ(h.Answers()["a"].code, StatusCode::kOk);
}

TEST(DynamicBatcherTest, DrainDispatchesPartialBatchesAndRefusesNewRequests) {
  Harness h;
  BatcherOptions o = Options(8, kHour);
  o.preferred_batch_sizes = {4};
  DynamicBatcher b(o, h.Executor(), nullptr);
  Park(h, b, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.Enqueue(h.Make("r" + std::to_string(i))).ok());
  std::thread drainer([&] { b.Drain(); });
  h.Release();
  drainer.join();
  // Drain returned: everything queued was computed, nothing runs or waits.
  EXPECT_EQ(b.QueueDepth(), 0);
  EXPECT_EQ(b.RunningBatches(), 0);
  auto answers = h.Answers();
  ASSERT_EQ(answers.size(), 4u);
  for (const auto& [id, a] : answers) {
    EXPECT_EQ(a.calls, 1) << id;
    EXPECT_EQ(a.code, StatusCode::kOk) << id;
  }
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].rows, 3);  // not full, not preferred: went because of the drain
  EXPECT_EQ(batches[1].reason, DispatchReason::kDelay);
  Status s = b.Enqueue(h.Make("late"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(h.Answers().count("late"), 0u);
}

TEST(DynamicBatcherTest, HigherPriorityOvertakesQueuedLowerPriority) {
  Harness h;
  BatcherOptions o = Options(0);
  o.priority_levels = 3;
  o.default_priority_level = 2;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 1);
  ASSERT_TRUE(b->Enqueue(h.Make("low1", 1, "k", 3)).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("mid", 1, "k", 0)).ok());  // default level 2
  ASSERT_TRUE(b->Enqueue(h.Make("low2", 1, "k", 3)).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("high", 1, "k", 1)).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(5));
  b.reset();
  std::vector<std::string> want = {"blocker", "high", "mid", "low1", "low2"};
  EXPECT_EQ(h.ComputedIds(), want);
}

TEST(DynamicBatcherTest, BatchIsFilledFromTheHighestLevelDown) {
  Harness h;
  BatcherOptions o = Options(2);
  o.priority_levels = 2;
  o.default_priority_level = 2;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 2);
  ASSERT_TRUE(b->Enqueue(h.Make("low1")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("low2")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("high", 1, "k", 1)).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(4));
  b.reset();
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[1].ids, (std::vector<std::string>{"high", "low1"}));
  EXPECT_EQ(batches[2].ids, (std::vector<std::string>{"low2"}));
}

TEST(DynamicBatcherTest, RefusesUnknownPriority) {
  Harness h;
  BatcherOptions o = Options(4);
  o.priority_levels = 2;
  DynamicBatcher b(o, h.Executor(), nullptr);
  Status s = b.Enqueue(h.Make("p3", 1, "k", 3));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("priority 3"), std::string::npos) << s.message();
  EXPECT_TRUE(h.Answers().empty());
}

TEST(DynamicBatcherTest, MaxQueueSizeRefusesWithUnavailable) {
  Harness h;
  BatcherOptions o = Options(0);
  o.priority_levels = 2;
  o.level_policies[2].max_queue_size = 2;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 1);  // level 1 (default): dispatched, so not queued
  ASSERT_TRUE(b->Enqueue(h.Make("a", 1, "k", 2)).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("b", 1, "k", 2)).ok());
  Status s = b->Enqueue(h.Make("c", 1, "k", 2));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("full"), std::string::npos) << s.message();
  // Level 1 is unbounded.
  EXPECT_TRUE(b->Enqueue(h.Make("d", 1, "k", 1)).ok());
  EXPECT_EQ(b->QueueDepth(), 3);
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(4));
  b.reset();
  EXPECT_EQ(h.Answers().count("c"), 0u);
  EXPECT_EQ(h.Answers().size(), 4u);
}

TEST(DynamicBatcherTest, RejectTimeoutAnswersDeadlineExceededWhileInstanceIsBusy) {
  Harness h;
  RecordingObserver obs;
  BatcherOptions o = Options(4);
  o.priority_levels = 2;
  o.level_policies[2].default_timeout = milliseconds(5);
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), &obs);
  Park(h, *b, 4);  // level 1: no timeout
  ASSERT_TRUE(b->Enqueue(h.Make("t", 1, "k", 2)).ok());
  // Answered while the only instance is still parked in the executor.
  ASSERT_TRUE(h.WaitAnswered("t"));
  EXPECT_EQ(h.Answers()["t"].code, StatusCode::kDeadlineExceeded);
  EXPECT_EQ(b->RunningBatches(), 1);
  EXPECT_EQ(b->QueueDepth(), 0);
  h.Release();
  ASSERT_TRUE(h.WaitAnswered("blocker"));
  b.reset();
  EXPECT_EQ(h.ComputedIds(), std::vector<std::string>{"blocker"});
  EXPECT_EQ(h.Answers()["t"].calls, 1);
  ASSERT_EQ(obs.dropped().size(), 1u);
  EXPECT_EQ(obs.dropped()[0].first, "t");
  EXPECT_EQ(obs.dropped()[0].second, StatusCode::kDeadlineExceeded);
}

TEST(DynamicBatcherTest, RequestTimeoutOverridesOnlyWhenAllowedAndShorter) {
  Harness h;
  BatcherOptions o = Options(0);
  o.priority_levels = 2;
  o.level_policies[1].allow_timeout_override = true;  // no default timeout on level 1
  o.level_policies[2].allow_timeout_override = false;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 1);
  ASSERT_TRUE(b->Enqueue(h.Make("override", 1, "k", 1, microseconds(1000))).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("ignored", 1, "k", 2, microseconds(1))).ok());
  ASSERT_TRUE(h.WaitAnswered("override"));
  EXPECT_EQ(h.Answers()["override"].code, StatusCode::kDeadlineExceeded);
  h.Release();
  ASSERT_TRUE(h.WaitAnswered("ignored"));
  EXPECT_EQ(h.Answers()["ignored"].code, StatusCode::kOk);
  b.reset();
}

TEST(DynamicBatcherTest, LongerRequestTimeoutDoesNotExtendTheDefault) {
  Harness h;
  BatcherOptions o = Options(0);
  o.priority_levels = 2;
  o.level_policies[2].default_timeout = milliseconds(2);
  o.level_policies[2].allow_timeout_override = true;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 1);
  ASSERT_TRUE(b->Enqueue(h.Make("long", 1, "k", 2, std::chrono::hours(1))).ok());
  ASSERT_TRUE(h.WaitAnswered("long"));
  EXPECT_EQ(h.Answers()["long"].code, StatusCode::kDeadlineExceeded);
  h.Release();
}

TEST(DynamicBatcherTest, DelayTimeoutIsComputedAfterEveryOtherLevel) {
  Harness h;
  BatcherOptions o = Options(0);
  o.priority_levels = 2;
  o.level_policies[1].default_timeout = microseconds(1);
  o.level_policies[1].timeout_action = TimeoutAction::kDelay;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 1);
  ASSERT_TRUE(b->Enqueue(h.Make("delayed", 1, "k", 1)).ok());
  // Past its deadline (sleep_for waits at least this long), whoever sweeps next moves it.
  std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(b->Enqueue(h.Make("low", 1, "k", 2)).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("high", 1, "k", 1)).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(4));
  b.reset();
  // "high" is level 1 too, but its 1 us deadline may pass before dispatch, so it may be delayed
  // as well (behind "delayed"); "delayed" is always after "low".
  auto ids = h.ComputedIds();
  auto pos = [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) - ids.begin(); };
  EXPECT_LT(pos("low"), pos("delayed"));
  EXPECT_EQ(h.Answers()["delayed"].code, StatusCode::kOk);
  EXPECT_EQ(h.Answers()["delayed"].calls, 1);
}

TEST(DynamicBatcherTest, CancelledRequestIsNeverComputed) {
  Harness h;
  RecordingObserver obs;
  auto b = std::make_unique<DynamicBatcher>(Options(4), h.Executor(), &obs);
  Park(h, *b, 4);
  auto c = h.Make("cancelled");
  auto flag = c->context.cancelled;
  ASSERT_TRUE(b->Enqueue(std::move(c)).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("kept")).ok());
  flag->store(true);
  ASSERT_TRUE(h.WaitAnswered("cancelled"));  // noticed while the instance is busy
  EXPECT_EQ(h.Answers()["cancelled"].code, StatusCode::kCancelled);
  h.Release();
  ASSERT_TRUE(h.WaitAnswered("kept"));
  b.reset();
  EXPECT_EQ(h.ComputedIds(), (std::vector<std::string>{"blocker", "kept"}));
  ASSERT_EQ(obs.dropped().size(), 1u);
  EXPECT_EQ(obs.dropped()[0].second, StatusCode::kCancelled);
}

TEST(DynamicBatcherTest, CancelledWhileWaitingForTheDelay) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(8, kHour), h.Executor(), nullptr);
  auto c = h.Make("c");
  auto flag = c->context.cancelled;
  ASSERT_TRUE(b->Enqueue(std::move(c)).ok());
  flag->store(true);
  ASSERT_TRUE(h.WaitAnswered("c"));
  EXPECT_EQ(h.Answers()["c"].code, StatusCode::kCancelled);
  EXPECT_EQ(b->QueueDepth(), 0);
  b.reset();
  EXPECT_TRUE(h.Batches().empty());
}

TEST(DynamicBatcherTest, DroppedRequestCallbackRunsWithoutTheBatcherLock) {
  Harness h;
  BatcherOptions o = Options(4);
  o.priority_levels = 2;
  o.level_policies[2].default_timeout = microseconds(1);
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 4);
  // The timed-out request's callback calls back into the batcher (it would deadlock if the
  // batcher held its lock while answering).
  std::atomic<bool> reentered{false};
  auto t = h.Make("t", 1, "k", 2);
  auto inner_done = std::move(t->done);
  DynamicBatcher* raw = b.get();
  t->done = [&, inner_done](Result<InferResponse> r) {
    (void)raw->QueueDepth();
    Status s = raw->Enqueue(h.Make("again", 1, "k", 1));
    reentered = s.ok();
    inner_done(std::move(r));
  };
  ASSERT_TRUE(b->Enqueue(std::move(t)).ok());
  ASSERT_TRUE(h.WaitAnswered("t"));
  EXPECT_EQ(h.Answers()["t"].code, StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(reentered);
  h.Release();
  ASSERT_TRUE(h.WaitAnswered("again"));
  b.reset();
  EXPECT_EQ(h.Answers()["again"].code, StatusCode::kOk);
}

TEST(DynamicBatcherTest, IncompatibleKeysAreNotMixed) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(8), h.Executor(), nullptr);
  Park(h, *b, 8);
  ASSERT_TRUE(b->Enqueue(h.Make("a1", 1, "A")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("b1", 1, "B")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("a2", 1, "A")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("b2", 1, "B")).ok());
  ASSERT_TRUE(b->Enqueue(h.Make("a3", 1, "A")).ok());
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(6));
  b.reset();
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 3u);
  // The head of the line decides the key; the others keep their places.
  EXPECT_EQ(batches[1].ids, (std::vector<std::string>{"a1", "a2", "a3"}));
  EXPECT_EQ(batches[1].key, "A");
  EXPECT_EQ(batches[2].ids, (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(batches[2].key, "B");
}

TEST(DynamicBatcherTest, DestructorAnswersEveryQueuedRequestExactlyOnce) {
  Harness h;
  BatcherOptions o = Options(3, kHour);
  o.priority_levels = 2;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  Park(h, *b, 3);
  const int n = 20;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i), 1 + i % 2, i % 3 ? "A" : "B", 1 + i % 2)).ok());
  }
  std::thread destroyer([&] { b.reset(); });
  h.Release();
  destroyer.join();
  auto answers = h.Answers();
  ASSERT_EQ(answers.size(), static_cast<size_t>(n + 1));
  for (const auto& [id, a] : answers) {
    EXPECT_EQ(a.calls, 1) << id;
    EXPECT_EQ(a.code, StatusCode::kOk) << id;
  }
  EXPECT_EQ(h.ComputedIds().size(), static_cast<size_t>(n + 1));
}

TEST(DynamicBatcherTest, StallTimeGrowsWhileAnExecutorIsBlocked) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(1), h.Executor(), nullptr);
  EXPECT_EQ(b->StallTime(), std::chrono::steady_clock::duration::zero());
  Park(h, *b, 1);
  const auto first = b->StallTime();
  bool grew = false;
  for (int i = 0; i < 10000 && !grew; ++i) {
    std::this_thread::sleep_for(milliseconds(1));
    grew = b->StallTime() > first;
  }
  EXPECT_TRUE(grew);
  h.Release();
  ASSERT_TRUE(h.WaitAnswered("blocker"));
  b->Drain();
  EXPECT_EQ(b->StallTime(), std::chrono::steady_clock::duration::zero());
}

TEST(DynamicBatcherTest, MultipleInstancesRunBatchesConcurrently) {
  Harness h;
  BatcherOptions o = Options(0);
  o.instance_count = 3;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  h.Hold();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i))).ok());
  // All three are inside the executor at once, one per instance.
  ASSERT_TRUE(h.WaitInExecutor(3));
  EXPECT_EQ(b->RunningBatches(), 3);
  ASSERT_TRUE(b->Enqueue(h.Make("r3")).ok());
  EXPECT_EQ(b->QueueDepth(), 1);
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(4));
  b.reset();
  std::vector<int> instances;
  for (const auto& batch : h.Batches()) instances.push_back(batch.instance);
  std::sort(instances.begin(), instances.end());
  ASSERT_EQ(instances.size(), 4u);
  // The first three batches ran on three different instances.
  std::vector<int> first3;
  for (int i = 0; i < 3; ++i) first3.push_back(h.Batches()[i].instance);
  std::sort(first3.begin(), first3.end());
  EXPECT_EQ(first3, (std::vector<int>{0, 1, 2}));
}

TEST(DynamicBatcherTest, ManyConcurrentProducersAllAnsweredOnce) {
  Harness h;
  BatcherOptions o = Options(8, microseconds(100));
  o.instance_count = 2;
  o.priority_levels = 2;
  o.preferred_batch_sizes = {4};
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  const int producers = 4, per = 50;
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < per; ++i) {
        auto r = h.Make("p" + std::to_string(p) + "_" + std::to_string(i), 1 + i % 3, i % 2 ? "A" : "B",
                        1 + (i + p) % 2);
        if (i % 7 == 0) r->context.cancelled->store(true);
        ASSERT_TRUE(b->Enqueue(std::move(r)).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  b.reset();
  auto answers = h.Answers();
  ASSERT_EQ(answers.size(), static_cast<size_t>(producers * per));
  for (const auto& [id, a] : answers) EXPECT_EQ(a.calls, 1) << id;
  for (const auto& batch : h.Batches()) {
    EXPECT_LE(batch.rows, 8);
    for (const auto& id : batch.ids) EXPECT_EQ(answers[id].code, StatusCode::kOk);
  }
}


// --- TryRunInline: a request runs on the caller's thread only when that changes no outcome ---

TEST(DynamicBatcherInlineTest, RunsOnTheCallerThreadWhenIdleAndEmpty) {
  Harness h;
  std::thread::id ran_on;
  auto exec = h.Executor();
  auto b = std::make_unique<DynamicBatcher>(
      Options(8), [&](int instance, Batch batch) { ran_on = std::this_thread::get_id(); exec(instance, std::move(batch)); },
      nullptr);
  auto r = h.Make("a");
  ASSERT_TRUE(b->TryRunInline(r));
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  auto answers = h.Answers();
  ASSERT_EQ(answers.count("a"), 1u);
  EXPECT_EQ(answers["a"].calls, 1);
  EXPECT_EQ(answers["a"].code, StatusCode::kOk);
  EXPECT_EQ(b->RunningBatches(), 0);
}

TEST(DynamicBatcherInlineTest, RefusedWhenABatchingDelayApplies) {
  Harness h;
  DynamicBatcher b(Options(8, microseconds(500)), h.Executor(), nullptr);
  auto r = h.Make("a");
  EXPECT_FALSE(b.TryRunInline(r));
  ASSERT_NE(r, nullptr);  // untouched: the caller queues it
  EXPECT_EQ(r->request.id, "a");
  EXPECT_TRUE(h.Batches().empty());
}

TEST(DynamicBatcherInlineTest, RefusedWhileRequestsAreQueuedOrEveryInstanceIsBusy) {
  Harness h;
  DynamicBatcher b(Options(0), h.Executor(), nullptr);  // one instance
  Park(h, b, 1);                                        // the only instance is busy
  auto r = h.Make("a");
  EXPECT_FALSE(b.TryRunInline(r));
  ASSERT_TRUE(b.Enqueue(h.Make("queued")).ok());
  auto r2 = h.Make("b");
  EXPECT_FALSE(b.TryRunInline(r2));  // would overtake "queued"
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(2));
  EXPECT_EQ(h.Batches().size(), 2u);
}

TEST(DynamicBatcherInlineTest, RefusedWhileDraining) {
  Harness h;
  DynamicBatcher b(Options(0), h.Executor(), nullptr);
  b.Drain();
  auto r = h.Make("a");
  EXPECT_FALSE(b.TryRunInline(r));
  ASSERT_NE(r, nullptr);
}

TEST(DynamicBatcherInlineTest, WorkerDoesNotRunOnTheClaimedInstanceMeanwhile) {
  Harness h;
  DynamicBatcher b(Options(0), h.Executor(), nullptr);  // one instance
  h.Hold();
  std::thread caller([&] {
    auto r = h.Make("inline");
    EXPECT_TRUE(b.TryRunInline(r));
  });
  ASSERT_TRUE(h.WaitInExecutor(1));  // the inline run holds the instance
  ASSERT_TRUE(b.Enqueue(h.Make("queued")).ok());
  // The queued request must not start while the instance is taken: still one in the executor.
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(h.Batches().size(), 1u);
  EXPECT_EQ(b.QueueDepth(), 1);
  h.Release();
  caller.join();
  ASSERT_TRUE(h.WaitAnswered("queued"));  // and it runs once the instance is free again
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].ids, std::vector<std::string>{"inline"});
  EXPECT_EQ(batches[1].ids, std::vector<std::string>{"queued"});
}

}  // namespace
}  // namespace inferloop::serve

namespace inferloop::serve {
namespace {

// SetTuning (the adaptive loop's knobs): a preferred size set while serving takes effect for the
// queued requests; switched-off instances take no batch; switching them back on does.
TEST(DynamicBatcherTuningTest, PreferredSizeSetWhileServingDispatchesQueuedRequests) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(8, kHour), h.Executor(), nullptr);
  Park(h, *b, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i))).ok());
  b->SetTuning({3}, kHour, 1);
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(4));  // without the preferred size 3 they would wait an hour
  auto batches = h.Batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].rows, 3);
  EXPECT_EQ(batches[1].reason, DispatchReason::kPreferred);
}

TEST(DynamicBatcherTuningTest, DelaySetToZeroDispatchesAWaitingPartialBatch) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(8, kHour), h.Executor(), nullptr);
  ASSERT_TRUE(b->Enqueue(h.Make("a")).ok());
  EXPECT_EQ(b->QueueDepth(), 1);  // waits for the hour-long delay
  b->SetTuning({}, microseconds(0), 1);
  ASSERT_TRUE(h.WaitAnsweredCount(1));
  EXPECT_EQ(h.Batches()[0].reason, DispatchReason::kDelay);
}

TEST(DynamicBatcherTuningTest, SwitchedOffInstancesTakeNoBatch) {
  Harness h;
  BatcherOptions o = Options(0);
  o.instance_count = 3;
  auto b = std::make_unique<DynamicBatcher>(o, h.Executor(), nullptr);
  b->SetTuning({}, microseconds(0), 1);
  EXPECT_EQ(b->active_instances(), 1);
  h.Hold();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b->Enqueue(h.Make("r" + std::to_string(i))).ok());
  ASSERT_TRUE(h.WaitInExecutor(1));
  EXPECT_EQ(b->RunningBatches(), 1);
  EXPECT_EQ(b->QueueDepth(), 2);  // instances 1 and 2 are off
  b->SetTuning({}, microseconds(0), 3);
  ASSERT_TRUE(h.WaitInExecutor(3));
  EXPECT_EQ(b->RunningBatches(), 3);
  h.Release();
  ASSERT_TRUE(h.WaitAnsweredCount(3));
  b->SetTuning({}, microseconds(0), 99);  // clamped to the instances there are
  EXPECT_EQ(b->active_instances(), 3);
  b->SetTuning({0, 5, -1}, microseconds(-5), 0);  // nonsense knobs are clamped, never crash
  EXPECT_EQ(b->active_instances(), 1);
}

}  // namespace
}  // namespace inferloop::serve

namespace inferloop::serve {
namespace {

// TryEnqueue refused (a priority out of range, a draining batcher): the request is still the
// caller's, callback and tickets included; Answer then frees both tickets before the callback
// runs, and a second Answer calls nothing.
TEST(DynamicBatcherTest, TryEnqueueLeavesARefusedRequestWithTheCallerAndAnswerFreesTicketsFirst) {
  auto gate = AdmissionGate::Create("test", AdmissionLimits{});
  DynamicBatcher b(Options(4), [](int, Batch) {}, nullptr);
  auto p = std::make_unique<PendingRequest>();
  p->priority = 7;  // one level only
  int calls = 0;
  int64_t inflight_at_answer = -1;
  p->done = [&](Result<InferResponse> r) {
    ++calls;
    inflight_at_answer = gate->inflight_requests();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  };
  p->server_ticket = std::move(gate->TryAdmit(10)).value();
  p->model_ticket = std::move(gate->TryAdmit(10)).value();
  ASSERT_EQ(gate->inflight_requests(), 2);
  Status st = b.TryEnqueue(p);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  ASSERT_NE(p, nullptr);  // still ours
  p->Answer(st);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(inflight_at_answer, 0);
  p->Answer(Status::Internal("again"));
  EXPECT_EQ(calls, 1);
  b.Drain();
  auto q = std::make_unique<PendingRequest>();
  q->done = [&](Result<InferResponse>) { ++calls; };
  EXPECT_EQ(b.TryEnqueue(q).code(), StatusCode::kUnavailable);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(calls, 1);
}

// A request made without a cancelled flag (PendingRequest's default holds none) is queued,
// computed and answered like any other.
TEST(DynamicBatcherTest, ARequestWithoutACancelledFlagIsComputed) {
  Harness h;
  auto b = std::make_unique<DynamicBatcher>(Options(4), h.Executor(), nullptr);
  auto p = h.Make("no-flag");
  p->context.cancelled.reset();
  ASSERT_TRUE(b->TryEnqueue(p).ok());
  EXPECT_EQ(p, nullptr);
  ASSERT_TRUE(h.WaitAnswered("no-flag"));
  EXPECT_EQ(h.Answers()["no-flag"].code, StatusCode::kOk);
  b.reset();  // drained: the worker is done with "no-flag"
  DynamicBatcher idle(Options(4), h.Executor(), nullptr);
  auto inline_one = h.Make("inline");
  inline_one->context.cancelled.reset();
  EXPECT_TRUE(idle.TryRunInline(inline_one));  // nothing queued or running: it runs here
  EXPECT_EQ(h.ComputedIds(), (std::vector<std::string>{"no-flag", "inline"}));
}

}  // namespace
}  // namespace inferloop::serve
