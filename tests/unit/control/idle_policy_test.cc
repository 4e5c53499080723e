// DecideIdle (the idle policy's decision) and ParseMemorySize: no clock, no threads.
#include "control/idle_policy.h"

#include <gtest/gtest.h>

namespace inferloop::control {
namespace {

IdleModelView Model(const std::string& name, double idle_s, int64_t bytes) {
  IdleModelView v;
  v.model = name;
  v.idle_seconds = idle_s;
  v.memory_bytes = bytes;
  v.serving = true;
  return v;
}

using Names = std::vector<std::string>;

TEST(DecideIdle, NoBudgetNoReleaseDoesNothing) {
  const IdleDecision d = DecideIdle({Model("a", 1000, 100), Model("b", 5, 100)}, 0, 0);
  EXPECT_TRUE(d.release.empty());
  EXPECT_TRUE(d.unload.empty());
  EXPECT_EQ(d.serving_bytes, 200);
}

TEST(DecideIdle, ReleasesModelsIdleLongEnoughOnce) {
  auto released = Model("c", 100, 10);
  released.released = true;
  const IdleDecision d = DecideIdle({Model("a", 30, 10), Model("b", 29.9, 10), released}, 30, 0);
  EXPECT_EQ(d.release, Names({"a"}));
  EXPECT_TRUE(d.unload.empty());
}

TEST(DecideIdle, UnderBudgetUnloadsNothing) {
  const IdleDecision d = DecideIdle({Model("a", 10, 100), Model("b", 5, 100)}, 0, 200);
  EXPECT_TRUE(d.unload.empty());
}

TEST(DecideIdle, OverBudgetUnloadsLeastRecentlyUsedUntilItFits) {
  // 400 bytes, budget 250: the two longest idle (c then a) go; b and d stay.
  const IdleDecision d =
      DecideIdle({Model("a", 20, 100), Model("b", 5, 100), Model("c", 50, 100), Model("d", 1, 100)}, 0, 250);
  EXPECT_EQ(d.unload, Names({"c", "a"}));
  EXPECT_EQ(d.serving_bytes, 400);
}

TEST(DecideIdle, OneBigIdleModelIsEnough) {
  const IdleDecision d = DecideIdle({Model("small", 5, 10), Model("big", 50, 1000)}, 0, 500);
  EXPECT_EQ(d.unload, Names({"big"}));
}

TEST(DecideIdle, HotAndNeededModelsAreNeverUnloaded) {
  auto hot = Model("hot", 1000, 500);
  hot.hot = true;
  auto step = Model("step", 900, 500);
  step.needed = true;
  const IdleDecision d = DecideIdle({hot, step, Model("x", 1, 100)}, 0, 100);
  // Even unloading every candidate does not fit: all candidates go, hot and needed stay.
  EXPECT_EQ(d.unload, Names({"x"}));
}

TEST(DecideIdle, HotModelsAreNotReleasedButNeededOnesAre) {
  auto hot = Model("hot", 1000, 5);
  hot.hot = true;
  auto step = Model("step", 1000, 5);
  step.needed = true;
  const IdleDecision d = DecideIdle({hot, step}, 10, 0);
  EXPECT_EQ(d.release, Names({"step"}));
}

TEST(DecideIdle, UnloadedModelsAreNeitherCountedNorReleased) {
  auto gone = Model("gone", 1000, 0);
  gone.serving = false;
  const IdleDecision d = DecideIdle({gone, Model("a", 1, 100)}, 10, 100);
  EXPECT_TRUE(d.unload.empty());
  EXPECT_TRUE(d.release.empty());
  EXPECT_EQ(d.serving_bytes, 100);
}

TEST(DecideIdle, AModelBeingUnloadedIsNotAlsoReleased) {
  const IdleDecision d = DecideIdle({Model("a", 100, 100), Model("b", 50, 100)}, 10, 150);
  EXPECT_EQ(d.unload, Names({"a"}));
  EXPECT_EQ(d.release, Names({"b"}));
}

TEST(DecideIdle, TiesGoByName) {
  const IdleDecision d = DecideIdle({Model("b", 10, 100), Model("a", 10, 100)}, 0, 100);
  EXPECT_EQ(d.unload, Names({"a"}));
}

TEST(ParseMemorySize, AcceptsBytesAndBinaryUnits) {
  EXPECT_EQ(ParseMemorySize("0").value(), 0);
  EXPECT_EQ(ParseMemorySize("1048576").value(), 1048576);
  EXPECT_EQ(ParseMemorySize("512MiB").value(), int64_t{512} << 20);
  EXPECT_EQ(ParseMemorySize("2GiB").value(), int64_t{2} << 30);
  EXPECT_EQ(ParseMemorySize("64kib").value(), int64_t{64} << 10);
  EXPECT_EQ(ParseMemorySize("3MB").value(), int64_t{3} << 20);
  EXPECT_EQ(ParseMemorySize("7B").value(), 7);
}

TEST(ParseMemorySize, RejectsBadText) {
  for (const char* bad : {"", "-1", "1.5GiB", "12XB", "GiB", "abc", "99999999999999999999", "9000000000GiB"}) {
    auto r = ParseMemorySize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("memory size"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace inferloop::control
