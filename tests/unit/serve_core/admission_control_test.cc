#include "serve/admission_control.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace inferloop::serve {
namespace {

TEST(AdmissionGateTest, InflightRequestLimit) {
  auto gate = AdmissionGate::Create("server", {.max_inflight_requests = 2, .max_inflight_bytes = 0});
  auto a = gate->TryAdmit(10);
  auto b = gate->TryAdmit(10);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  auto c = gate->TryAdmit(10);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("server"), std::string::npos);
  EXPECT_EQ(gate->inflight_requests(), 2);
  { AdmissionTicket done = std::move(a).value(); }  // answered: its slot is free again
  EXPECT_EQ(gate->inflight_requests(), 1);
  EXPECT_TRUE(gate->TryAdmit(10).ok());
}

TEST(AdmissionGateTest, InflightBytesLimit) {
  auto gate = AdmissionGate::Create("model 'm'", {.max_inflight_requests = 0, .max_inflight_bytes = 100});
  auto a = gate->TryAdmit(60);
  ASSERT_TRUE(a.ok());
  auto b = gate->TryAdmit(50);  // 110 > 100
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(gate->inflight_bytes(), 60);
  EXPECT_EQ(gate->inflight_requests(), 1);  // the refused one holds nothing
  auto big = gate->TryAdmit(101);          // larger than the limit on its own
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than"), std::string::npos);
  a.value().Release();
  EXPECT_EQ(gate->inflight_bytes(), 0);
  EXPECT_TRUE(gate->TryAdmit(100).ok());
}

TEST(AdmissionGateTest, TicketsReleaseOnceWhenMovedAndOutliveTheCreator) {
  AdmissionTicket kept;
  std::weak_ptr<AdmissionGate> weak;
  {
    auto gate = AdmissionGate::Create("g", {.max_inflight_requests = 1, .max_inflight_bytes = 0});
    weak = gate;
    auto t = gate->TryAdmit(5);
    ASSERT_TRUE(t.ok());
    AdmissionTicket moved = std::move(t).value();
    kept = std::move(moved);
    EXPECT_EQ(gate->inflight_requests(), 1);
  }
  ASSERT_FALSE(weak.expired());  // the ticket keeps the gate alive
  EXPECT_EQ(weak.lock()->inflight_requests(), 1);
  kept.Release();
  kept.Release();  // idempotent
  EXPECT_TRUE(weak.expired());
}

TEST(AdmissionGateTest, ConcurrentAdmissionNeverOvershoots) {
  auto gate = AdmissionGate::Create("g", {.max_inflight_requests = 8, .max_inflight_bytes = 0});
  std::atomic<int> peak{0}, admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto r = gate->TryAdmit(1);
        if (!r.ok()) continue;
        admitted.fetch_add(1);
        int now = static_cast<int>(gate->inflight_requests());
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 8);
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(gate->inflight_requests(), 0);
  EXPECT_EQ(gate->inflight_bytes(), 0);
}

}  // namespace
}  // namespace inferloop::serve

namespace inferloop::serve {
namespace {

// FairAdmission: a flooded model is held to its weighted share of the server's limit while the
// server is contended; a quiet model still gets in.
TEST(FairAdmissionTest, FloodedModelIsHeldToItsShareWhileAnotherWaits) {
  auto server = AdmissionGate::Create("server", AdmissionLimits{10, 0});
  FairAdmission fair(server);
  std::vector<AdmissionTicket> held;
  // Alone, the flooded model may take the whole limit but for the quiet model's one request:
  // quiet has one in flight, so from half full (5) on, flood's share is 10 * 1 / 2 = 5.
  auto q = fair.TryAdmit("quiet", 1, 0);
  ASSERT_TRUE(q.ok());
  held.push_back(std::move(q).value());
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    auto t = fair.TryAdmit("flood", 1, 0);
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
      EXPECT_NE(t.status().message().find("fair share"), std::string::npos) << t.status().message();
      continue;
    }
    ++admitted;
    held.push_back(std::move(t).value());
  }
  EXPECT_EQ(admitted, 5);
  EXPECT_EQ(fair.inflight("flood"), 5);
  // The quiet model is under its share (5): admitted while the flood is refused.
  for (int i = 0; i < 3; ++i) {
    auto t = fair.TryAdmit("quiet", 1, 0);
    ASSERT_TRUE(t.ok()) << t.status().message();
    held.push_back(std::move(t).value());
  }
  EXPECT_EQ(server->inflight_requests(), 9);
  EXPECT_EQ(fair.inflight("quiet"), 4);
  held.clear();  // tickets release both counts
  EXPECT_EQ(server->inflight_requests(), 0);
  EXPECT_EQ(fair.inflight("flood"), 0);
}

TEST(FairAdmissionTest, WeightsSplitTheLimitAndAnUncontendedModelUsesAllOfIt) {
  auto server = AdmissionGate::Create("server", AdmissionLimits{12, 0});
  FairAdmission fair(server);
  std::vector<AdmissionTicket> held;
  auto take = [&](const std::string& m, double w) {
    auto t = fair.TryAdmit(m, w, 0);
    if (t.ok()) held.push_back(std::move(t).value());
    return t.ok();
  };
  int a = 0;
  while (take("a", 1)) ++a;
  EXPECT_EQ(a, 12);  // nobody else: the whole limit (then the server gate refuses)
  held.clear();
  ASSERT_TRUE(take("b", 2));  // b (weight 2) active: a's share is 12 * 1 / 3 = 4 once contended
  a = 0;
  while (take("a", 1)) ++a;
  EXPECT_EQ(a, 5);  // admitted up to half full (6 with b's), then held at its share
  EXPECT_EQ(fair.inflight("a"), 5);
  int b = 0;
  while (take("b", 2) && b < 20) ++b;
  EXPECT_EQ(fair.inflight("b"), 7);  // b's share is 12 * 2 / 3 = 8 but the server is full at 12
  // An unknown model (empty name) goes through the server gate alone.
  held.clear();
  EXPECT_TRUE(fair.TryAdmit("", 1, 0).ok());
}

// A quiet model between two requests (nothing in flight) keeps its share for kActiveWindow: the
// flood cannot fill the limit in the gaps; after the window it may.
TEST(FairAdmissionTest, RecentlyActiveModelKeepsItsShareBetweenRequests) {
  auto now = std::chrono::steady_clock::now();
  auto server = AdmissionGate::Create("server", AdmissionLimits{10, 0});
  FairAdmission fair(server, [&] { return now; });
  ASSERT_TRUE(fair.TryAdmit("quiet", 1, 0).ok());  // answered at once: the ticket is gone
  EXPECT_EQ(fair.inflight("quiet"), 0);
  std::vector<AdmissionTicket> held;
  int flood = 0;
  for (int i = 0; i < 20; ++i) {
    auto t = fair.TryAdmit("flood", 1, 0);
    if (t.ok()) ++flood, held.push_back(std::move(t).value());
  }
  EXPECT_EQ(flood, 5);  // half the limit: quiet's share stays free for it
  EXPECT_TRUE(fair.TryAdmit("quiet", 1, 0).ok());
  now += FairAdmission::kActiveWindow + std::chrono::seconds(1);
  for (int i = 0; i < 20; ++i) {
    auto t = fair.TryAdmit("flood", 1, 0);
    if (t.ok()) ++flood, held.push_back(std::move(t).value());
  }
  EXPECT_EQ(flood, 10);  // quiet went idle: the flood may use the whole limit
}

}  // namespace
}  // namespace inferloop::serve
