#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace inferloop {
namespace {

// Every index of [0, n) is visited exactly once; every range except the last is >= grain.
void CheckCoverage(ThreadPool* pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  ParallelFor(pool, n, grain, [&](int64_t b, int64_t e) {
    ASSERT_LE(0, b);
    ASSERT_LT(b, e);
    ASSERT_LE(e, n);
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    ranges.emplace_back(b, e);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " grain=" << grain << " i=" << i;
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 0; k + 1 < ranges.size(); ++k) EXPECT_GE(ranges[k].second - ranges[k].first, grain);
}

TEST(RtThreadPool, CoversRangeExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 4097})
      for (int64_t grain : {1, 2, 3, 16, 100, 5000}) CheckCoverage(&pool, n, grain);
  }
  for (int64_t n : {0, 1, 17}) CheckCoverage(nullptr, n, 1);
}

// The threads that ran the two blocks of parallel_for(2, 1, fn): each block waits (briefly) for
// the other, so two distinct ids only with two threads.
template <typename ParallelForFn>
std::vector<std::thread::id> ThreadsOfTwoBlocks(ParallelForFn parallel_for) {
  std::mutex mu;
  std::vector<std::thread::id> ids;
  std::atomic<int> arrived{0};
  parallel_for([&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.push_back(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    for (int spin = 0; spin < 2000000 && arrived.load() < 2; ++spin) std::this_thread::yield();
  });
  return ids;
}

TEST(RtThreadPool, UsesSeveralThreads) {
  ThreadPool pool(2);
  const auto ids = ThreadsOfTwoBlocks([&](auto fn) { ParallelFor(&pool, 2, 1, fn); });
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_NE(ids[0], ids[1]);
}

TEST(RtThreadPool, NestedCallsRunInline) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  std::atomic<int> nested_saw_region{0};
  ParallelFor(&pool, 12, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      EXPECT_TRUE(ThreadPool::InParallelRegion());
      std::thread::id outer = std::this_thread::get_id();
      pool.ParallelFor(100, 1, [&](int64_t ib, int64_t ie) {
        EXPECT_EQ(std::this_thread::get_id(), outer);  // inline on the same thread
        EXPECT_EQ(ib, 0);
        EXPECT_EQ(ie, 100);
        nested_saw_region.fetch_add(1);
        total.fetch_add(ie - ib);
      });
    }
  });
  EXPECT_EQ(total.load(), 12 * 100);
  EXPECT_EQ(nested_saw_region.load(), 12);
  EXPECT_FALSE(ThreadPool::InParallelRegion());
}

TEST(RtThreadPool, ConcurrentCallersEachComplete) {
  ThreadPool* pool = SharedThreadPool(2);
  EXPECT_EQ(pool, SharedThreadPool(2));
  EXPECT_NE(pool, SharedThreadPool(3));
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 200; ++rep) {
        int64_t n = 50 + c * 13 + rep;
        std::vector<int> hits(static_cast<size_t>(n), 0);
        ParallelFor(pool, n, 4, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[i];
        });
        for (int h : hits)
          if (h != 1) bad.fetch_add(1);
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(RtThreadPool, ReservationStaysWithinPool) {
  ThreadPool pool(4);
  ThreadPool::Reservation a(&pool, 3);
  EXPECT_EQ(a.threads(), 3);
  ThreadPool::Reservation b(&pool, 3);
  EXPECT_EQ(b.threads(), 1);
  {
    ThreadPool::Reservation c(&pool, 8);
    EXPECT_EQ(c.threads(), 1);  // the caller itself, even when the pool is fully used
  }
  ThreadPool::Reservation none(nullptr, 4);
  EXPECT_EQ(none.threads(), 1);
}

// A reservation's ParallelFor runs on the threads it holds (two distinct threads here, where the
// pool's own ParallelFor would find them taken and run inline), covers the range once, and runs
// inline for a reservation of one thread.
TEST(RtThreadPool, ReservationParallelForUsesItsThreads) {
  ThreadPool pool(2);
  ThreadPool::Reservation r(&pool, 2);
  ASSERT_EQ(r.threads(), 2);
  const auto ids = ThreadsOfTwoBlocks([&](auto fn) { r.ParallelFor(2, 1, fn); });
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_NE(ids[0], ids[1]);
  for (int64_t n : {0, 1, 5, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    r.ParallelFor(n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
  ThreadPool::Reservation one(&pool, 1);
  std::thread::id ran;
  one.ParallelFor(100, 1, [&](int64_t, int64_t) { ran = std::this_thread::get_id(); });
  EXPECT_EQ(ran, std::this_thread::get_id());
}

TEST(RtThreadPool, DefaultThreadCountIsAtLeastOne) {
  EXPECT_GE(DefaultThreadCount(), 1);
  ThreadPool pool(0);
  EXPECT_EQ(pool.num_threads(), DefaultThreadCount());
}

// A stall makes the pool Contended for kContendedFor after it (the latest stall counts), and
// only then: a quiet pool never is.
TEST(ThreadPool, ContendedForAWhileAfterTheLastStall) {
  ThreadPool pool(2);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(pool.Contended(t0));
  pool.NoteStall(t0);
  EXPECT_TRUE(pool.Contended(t0));
  EXPECT_TRUE(pool.Contended(t0 + ThreadPool::kContendedFor - std::chrono::milliseconds(1)));
  EXPECT_FALSE(pool.Contended(t0 + ThreadPool::kContendedFor));
  // A later stall extends it; an earlier one reported late does not shorten it.
  pool.NoteStall(t0 + std::chrono::milliseconds(300));
  pool.NoteStall(t0);
  EXPECT_TRUE(pool.Contended(t0 + ThreadPool::kContendedFor + std::chrono::milliseconds(299)));
  EXPECT_FALSE(pool.Contended(t0 + ThreadPool::kContendedFor + std::chrono::milliseconds(300)));
  ThreadPool other(2);  // per pool
  EXPECT_FALSE(other.Contended(t0));
}

}  // namespace
}  // namespace inferloop
