#include "serve/circuit_breaker.h"

#include <gtest/gtest.h>

namespace inferloop::serve {
namespace {

using Clock = CircuitBreaker::Clock;
using std::chrono::milliseconds;

CircuitBreaker::Options Opts() {
  CircuitBreaker::Options o;
  o.failures_to_open = 3;
  o.initial_backoff = milliseconds(1000);
  o.max_backoff = milliseconds(4000);
  return o;
}

TEST(CircuitBreakerTest, OpensAfterConsecutiveFailuresOnly) {
  CircuitBreaker b(Opts());
  const auto t = Clock::now();
  b.Record(true, "boom", t);
  b.Record(true, "boom", t);
  b.Record(false, "", t);  // a success in between resets the count
  b.Record(true, "boom", t);
  b.Record(true, "boom", t);
  EXPECT_FALSE(b.open());
  EXPECT_TRUE(b.Accepting(t));
  b.Record(true, "boom 3", t);
  EXPECT_TRUE(b.open());
  EXPECT_FALSE(b.Accepting(t));
  EXPECT_FALSE(b.AllowRun(t + milliseconds(999)));
  EXPECT_NE(b.Describe().find("boom 3"), std::string::npos);
  EXPECT_NE(b.Describe().find("1000 ms"), std::string::npos);
}

TEST(CircuitBreakerTest, HalfOpenLetsExactlyOneTrialThrough) {
  CircuitBreaker b(Opts());
  const auto t = Clock::now();
  for (int i = 0; i < 3; ++i) b.Record(true, "x", t);
  const auto later = t + milliseconds(1000);
  EXPECT_TRUE(b.Accepting(later));
  EXPECT_TRUE(b.AllowRun(later));   // the trial
  EXPECT_FALSE(b.AllowRun(later));  // nothing else while it runs
  b.Record(false, "", later);       // it worked: closed
  EXPECT_FALSE(b.open());
  EXPECT_TRUE(b.AllowRun(later));
  EXPECT_TRUE(b.AllowRun(later));
  EXPECT_EQ(b.Describe(), "");
}

TEST(CircuitBreakerTest, FailedTrialsDoubleTheBackoffUpToTheMaximum) {
  CircuitBreaker b(Opts());
  auto t = Clock::now();
  for (int i = 0; i < 3; ++i) b.Record(true, "x", t);
  const milliseconds expected[] = {milliseconds(2000), milliseconds(4000), milliseconds(4000)};
  milliseconds wait(1000);
  for (milliseconds next : expected) {
    t += wait;
    ASSERT_TRUE(b.AllowRun(t));
    b.Record(true, "still broken", t);
    EXPECT_TRUE(b.open());
    EXPECT_FALSE(b.AllowRun(t + next - milliseconds(1)));
    wait = next;
  }
  // After a success the backoff starts again at the initial value.
  t += wait;
  ASSERT_TRUE(b.AllowRun(t));
  b.Record(false, "", t);
  for (int i = 0; i < 3; ++i) b.Record(true, "x", t);
  EXPECT_FALSE(b.AllowRun(t + milliseconds(999)));
  EXPECT_TRUE(b.AllowRun(t + milliseconds(1000)));
}

}  // namespace
}  // namespace inferloop::serve
