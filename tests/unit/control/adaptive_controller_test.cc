// The adaptive controller's decisions (src/control/adaptive_controller.h) under synthetic loads,
// with a simulated clock. Every expected setting follows from the cost table below and the
// formulas of src/control/variant_cost_model.h by the arithmetic written next to it:
//   fp32 {1: 20, 2: 36, 4: 68, 8: 130} ms, bf16 {1: 9, 2: 16, 4: 31, 8: 59} (about 2.2x faster),
//   int8 {1: 6, 2: 10, 4: 19, 8: 37} (about 3.5x faster); SLO p99 60 ms, max batch 8.
// Constants used below: ln(1 / (1 - 0.99)) = ln 100 = 4.60517; default delay cap 60 / 4 = 15 ms;
// downgrade_utilisation 0.85, upgrade_headroom 0.6 (so 36 ms and utilisation 0.51), dwell 3.
// With batch 1 and one instance (run T ms, utilisation rho = rate * T / 1000):
//   latency = T + 4.60517 * rho * T / (2 * (1 - rho)).
// fp32 batch 1 (T = 20): latency = 20 + 46.0517 * rho / (1 - rho); it fits (<= 60) while
// rho <= 40 / 86.0517 = 0.46483, i.e. rate <= 23.24/s, and fits with headroom (<= 36) while
// rho <= 16 / 62.0517 = 0.25785, i.e. rate <= 12.89/s.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "control/adaptive_controller.h"
#include "control/variant_cost_model.h"

namespace inferloop::control {
namespace {

using std::chrono::microseconds;

constexpr int kFp32 = 0, kBf16 = 1, kInt8 = 2;

ControllerConfig TableConfig() {
  ControllerConfig c;
  c.slo_percentile = 99;
  c.slo_ms = 60;
  c.variants = {{"fp32", {{1, 20}, {2, 36}, {4, 68}, {8, 130}}},
                {"bf16", {{1, 9}, {2, 16}, {4, 31}, {8, 59}}},
                {"int8", {{1, 6}, {2, 10}, {4, 19}, {8, 37}}}};
  c.max_batch_size = 8;
  c.max_instances = 1;
  return c;
}

// A model whose runs take the table's time times busy_factor, fed `rate` rows/s; the batches
// are those the knobs in force would form (preferred batch size rows each).
struct Sim {
  explicit Sim(const ControllerConfig& cfg)
      : ctl(cfg), model(cfg.variants, cfg.slo_percentile) {}

  // observed_ms < 0: the latency the cost model predicts for the knobs in force at this rate
  // (times busy_factor): a server that behaves as modelled.
  Decision Step(double rate, double observed_ms = -1, double busy_factor = 1,
                int64_t queue_depth = 0) {
    Observation o;
    now += interval;
    o.now_s = now;
    o.interval_s = interval;
    o.arrivals = std::llround(rate * interval);
    o.completed = o.arrivals;
    const Knobs& k = ctl.knobs();
    o.batches = (o.arrivals + k.preferred_batch_size - 1) / k.preferred_batch_size;
    if (o.batches > 0) {
      const double rows = static_cast<double>(o.arrivals) / o.batches;
      o.busy_s = o.batches * model.RunMs(k.variant, rows) *
                 VariantCostModel::InstanceSlowdown(k.instances) * busy_factor / 1000;
    }
    if (observed_ms < 0) {
      const Prediction p = model.Predict(k.variant, k.preferred_batch_size, k.instances,
                                         std::chrono::duration<double>(k.max_queue_delay).count(), rate,
                                         busy_factor);
      observed_ms = std::isfinite(p.latency_ms) ? p.latency_ms : 1e6;
    }
    o.latency_ms = o.arrivals > 0 ? observed_ms : -1;
    o.queue_depth = queue_depth;
    return ctl.Observe(o);
  }

  AdaptiveController ctl;
  VariantCostModel model;
  double now = 0;
  double interval = 1;
};

void ExpectKnobs(const Decision& d, int variant, int batch, int64_t delay_us, int instances = 1) {
  EXPECT_EQ(d.knobs.variant, variant) << d.reason;
  EXPECT_EQ(d.knobs.preferred_batch_size, batch) << d.reason;
  EXPECT_EQ(d.knobs.max_queue_delay, microseconds(delay_us)) << d.reason;
  EXPECT_EQ(d.knobs.instances, instances) << d.reason;
}

TEST(AdaptiveControllerCostModel, InterpolatesAndExtrapolatesTheTable) {
  const ControllerConfig c = TableConfig();
  VariantCostModel m(c.variants, 99);
  EXPECT_DOUBLE_EQ(m.RunMs(kFp32, 1), 20);
  EXPECT_DOUBLE_EQ(m.RunMs(kFp32, 3), 52);    // 36 + (3 - 2) / (4 - 2) * (68 - 36)
  EXPECT_DOUBLE_EQ(m.RunMs(kFp32, 16), 254);  // 130 + (16 - 8) * (130 - 68) / (8 - 4)
  VariantCostModel single({{"x", {{1, 10}}}}, 99);
  EXPECT_DOUBLE_EQ(single.RunMs(0, 4), 40);  // one point: 10 ms per row
  EXPECT_EQ(m.BatchSizes(kFp32, 8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(m.BatchSizes(kFp32, 6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(m.BatchSizes(kFp32, 0), (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(VariantCostModel::InstanceThroughput(3), 1.3);  // 1 + 0.15 * 2
}

TEST(AdaptiveControllerCostModel, PredictsQueueingAndBatchFill) {
  VariantCostModel m(TableConfig().variants, 99);
  // fp32 batch 1 at 10/s: rho = 0.2, latency = 20 + 46.0517 * 0.2 / 0.8 = 31.5129.
  Prediction p = m.Predict(kFp32, 1, 1, 0, 10, 1);
  EXPECT_NEAR(p.utilisation, 0.2, 1e-12);
  EXPECT_NEAR(p.latency_ms, 31.5129, 1e-3);
  // fp32 batch 2, delay 15 ms at 10/s: the batch holds 1 + 10 * 0.015 = 1.15 rows, one run
  // T = 20 + 0.15 * 16 = 22.4 ms, rho = 10 * 0.0224 / 1.15 = 0.194783,
  // wait = 4.60517 * 0.194783 * 22.4 / (2 * 0.805217) = 12.4767, latency = 15 + 12.4767 + 22.4.
  p = m.Predict(kFp32, 2, 1, 0.015, 10, 1);
  EXPECT_NEAR(p.utilisation, 0.194783, 1e-5);
  EXPECT_NEAR(p.latency_ms, 49.8767, 1e-3);
  // Saturated: fp32 batch 1 at 60/s is rho 1.2: unbounded.
  EXPECT_TRUE(std::isinf(m.Predict(kFp32, 1, 1, 0, 60, 1).latency_ms));
  // A correction of 2 doubles the run: fp32 batch 1 at 10/s is rho 0.4, run 40 ms.
  p = m.Predict(kFp32, 1, 1, 0, 10, 2);
  EXPECT_NEAR(p.utilisation, 0.4, 1e-12);
  EXPECT_NEAR(p.run_ms, 40, 1e-12);
}

TEST(AdaptiveControllerTest, LowLoadKeepsFp32Batch1) {
  Sim s(TableConfig());
  // 10/s: fp32 batch 1 predicts 31.51 ms (<= 60, rho 0.2 <= 0.85): the most precise setting fits.
  Decision d = s.Step(10);
  EXPECT_EQ(d.reason, "start");
  EXPECT_TRUE(d.valid);
  EXPECT_FALSE(d.slo_unreachable);
  ExpectKnobs(d, kFp32, 1, 0);
  EXPECT_NEAR(d.predicted_ms, 31.5129, 1e-3);
  EXPECT_NEAR(d.rate_rps, 10, 1e-12);
  EXPECT_NEAR(d.correction, 1, 1e-12);
  for (int w = 0; w < 10; ++w) {
    d = s.Step(10);
    EXPECT_EQ(d.reason, "steady");
    EXPECT_FALSE(d.changed);
    ExpectKnobs(d, kFp32, 1, 0);
  }
}

TEST(AdaptiveControllerTest, StepTo150PercentOfFp32MovesWithinOneWindow) {
  Sim s(TableConfig());
  for (int w = 0; w < 3; ++w) s.Step(10);
  // fp32 batch 1 computes 1000 / 20 = 50 rows/s; 150% of it is 75/s (the newest window counts at
  // once: max(75, EWMA 42.5) = 75). fp32 batch 1: rho 1.5 > 0.85: "overload".
  // fp32 batch 2: delay min(15, 60 - 36, 1 / 75 s = 13.3) ms, full batches, rho = 75 * 0.036 / 2
  //   = 1.35: no. fp32 batch 4 and 8: one run (68, 130 ms) leaves no SLO budget for a delay, so
  //   the batch holds 1 row: rho 1.5: no.
  // bf16 batch 1: rho = 75 * 0.009 = 0.675, latency = 9 + 4.60517 * 0.675 * 9 / (2 * 0.325)
  //   = 9 + 43.04 = 52.04 <= 60: the first setting that fits.
  Decision d = s.Step(75);
  EXPECT_EQ(d.reason, "overload");
  EXPECT_TRUE(d.changed);
  EXPECT_FALSE(d.slo_unreachable);
  ExpectKnobs(d, kBf16, 1, 0);
  EXPECT_NEAR(d.rate_rps, 75, 1e-12);
  EXPECT_NEAR(d.predicted_ms, 52.04, 0.01);
}

TEST(AdaptiveControllerTest, ReturnsToFp32OnlyAfterTheDwellWindows) {
  ControllerConfig c = TableConfig();
  c.smoothing = 1;  // the rate is the newest window: isolates the dwell from the smoothing
  Sim s(c);
  ExpectKnobs(s.Step(75), kBf16, 1, 0);  // as in the test above
  // 5/s: fp32 batch 1 predicts 20 + 46.0517 * 0.1 / 0.9 = 25.12 ms <= 36 and rho 0.1 <= 0.51:
  // it fits with headroom; the move waits for 3 such windows in a row.
  for (int w = 1; w <= 2; ++w) {
    Decision d = s.Step(5);
    EXPECT_EQ(d.reason, "steady") << "window " << w;
    ExpectKnobs(d, kBf16, 1, 0);
  }
  Decision d = s.Step(5);
  EXPECT_EQ(d.reason, "load_fell");
  EXPECT_TRUE(d.changed);
  ExpectKnobs(d, kFp32, 1, 0);
}

TEST(AdaptiveControllerTest, SmoothedRateDelaysTheReturnFurther) {
  Sim s(TableConfig());  // smoothing 0.5
  ExpectKnobs(s.Step(75), kBf16, 1, 0);
  // Then 5/s: the EWMA goes 40, 22.5, 13.75, 9.375, 7.19, 6.09 (the decision uses it, being
  // above the newest 5). fp32 batch 1 fits with headroom only at <= 12.89/s: first in window 4,
  // so the third such window in a row is window 6. (fp32 batch 2 at 13.75/s: 1.206 rows per
  // batch, 23.3 ms a run, rho 0.266, 57.7 ms: no.)
  for (int w = 1; w <= 5; ++w) {
    Decision d = s.Step(5);
    EXPECT_EQ(d.knobs.variant, kBf16) << "window " << w;
  }
  Decision d = s.Step(5);
  EXPECT_EQ(d.reason, "load_fell");
  ExpectKnobs(d, kFp32, 1, 0);
  EXPECT_NEAR(d.rate_rps, 6.09375, 1e-9);
}

TEST(AdaptiveControllerTest, LoadOnTheBoundaryDoesNotFlap) {
  Sim s(TableConfig());
  s.interval = 10;  // 0.1/s resolution of the rate
  s.Step(10);
  // 50 windows at 23.24/s (where fp32 batch 1 stops fitting) +-5%: 22.1..24.4/s. Once on bf16
  // batch 1, the way back needs fp32 batch 1 under 36 ms, i.e. <= 12.89/s: never here.
  int changes = 0, above = 0, below = 0;
  for (int w = 0; w < 50; ++w) {
    const double rate = 23.24 * (1 + 0.05 * std::sin(1.7 * w));
    (rate > 23.24 ? above : below) += 1;
    Decision d = s.Step(rate);
    changes += d.changed;
  }
  EXPECT_GE(above, 10);  // the load really sits on both sides of the boundary
  EXPECT_GE(below, 10);
  EXPECT_GE(changes, 1);
  EXPECT_LE(changes, 2);
  EXPECT_EQ(s.ctl.knobs().variant, kBf16);
}

TEST(AdaptiveControllerTest, UnreachableSloUsesTheFastestVariantAndSaysSo) {
  ControllerConfig c = TableConfig();
  c.slo_ms = 3;  // no variant runs one row in 3 ms (int8 batch 1: 6 ms)
  Sim s(c);
  // Fastest: most rows per ms at batch 8: int8 8/37 = 0.216 > bf16 8/59 = 0.136 > fp32 0.062.
  // Delay: the configured cap, 3 / 4 ms = 750 us.
  Decision d = s.Step(10);
  EXPECT_EQ(d.reason, "slo_unreachable");
  EXPECT_TRUE(d.slo_unreachable);
  ExpectKnobs(d, kInt8, 8, 750);
  d = s.Step(10);
  EXPECT_EQ(d.reason, "slo_unreachable");
  EXPECT_TRUE(d.slo_unreachable);
  EXPECT_FALSE(d.changed);
}

TEST(AdaptiveControllerTest, ObservedLatencyOverSloOnABusierMachineDowngrades) {
  Sim s(TableConfig());
  ExpectKnobs(s.Step(10), kFp32, 1, 0);
  // By the table 10/s on fp32 batch 1 is rho 0.2 (31.5 ms); but runs take 3x the table and the
  // observed p99 is 90 ms. Correction: newest 3, smoothed 0.5 * 3 + 0.5 * 1 = 2; in use 3.
  // fp32 batch 1: 60 ms a run alone: > 60 with any wait; fp32 batch 2+: 108+ ms a run: no.
  // bf16 batch 1: 27 ms, rho 0.27, 27 + 4.60517 * 0.27 * 27 / (2 * 0.73) = 49.99 ms: fits.
  Decision d = s.Step(10, /*observed_ms=*/90, /*busy_factor=*/3);
  EXPECT_EQ(d.reason, "slo_risk");
  EXPECT_NEAR(d.correction, 3, 1e-12);
  ExpectKnobs(d, kBf16, 1, 0);
  EXPECT_NEAR(d.predicted_ms, 49.99, 0.01);
}

TEST(AdaptiveControllerTest, BacklogCountsAsLoad) {
  Sim s(TableConfig());
  ExpectKnobs(s.Step(10), kFp32, 1, 0);
  // 10 arrivals but 65 waiting at the end of a 1 s window: 10 + 65 = 75/s: bf16 batch 1.
  Decision d = s.Step(10, 30, 1, /*queue_depth=*/65);
  EXPECT_NEAR(d.rate_rps, 75, 1e-12);
  EXPECT_EQ(d.reason, "overload");
  ExpectKnobs(d, kBf16, 1, 0);
}

TEST(AdaptiveControllerTest, PinHoldsUnderOverloadAndFreeLetsItMove) {
  Sim s(TableConfig());
  s.Step(10);
  Decision d = s.ctl.Pin(kFp32);
  EXPECT_EQ(d.reason, "pinned");
  EXPECT_TRUE(s.ctl.pinned());
  ExpectKnobs(d, kFp32, 1, 0);
  // 75/s: no fp32 setting fits (see StepTo150Percent...): fp32 stays, with its largest batch and
  // the delay cap (15 ms), and the SLO is said unreachable.
  for (int w = 0; w < 3; ++w) {
    d = s.Step(75);
    EXPECT_EQ(d.knobs.variant, kFp32);
    EXPECT_TRUE(d.slo_unreachable);
  }
  ExpectKnobs(d, kFp32, 8, 15000);
  EXPECT_EQ(d.reason, "slo_unreachable");
  d = s.ctl.Free();
  EXPECT_EQ(d.reason, "freed");
  EXPECT_FALSE(s.ctl.pinned());
  EXPECT_FALSE(d.changed);
  // fp32 batch 8 with 15 ms at 75/s: 1 + 75 * 0.015 = 2.125 rows a batch, 38 ms a run,
  // rho = 75 * 0.038 / 2.125 = 1.34: overload; bf16 batch 1 fits (52.04 ms).
  d = s.Step(75);
  EXPECT_EQ(d.reason, "overload");
  ExpectKnobs(d, kBf16, 1, 0);
}

TEST(AdaptiveControllerTest, PinToAFasterVariantHoldsAtLowLoadUntilFreed) {
  Sim s(TableConfig());
  s.Step(5);
  Decision d = s.ctl.Pin(kInt8);
  ExpectKnobs(d, kInt8, 1, 0);
  EXPECT_TRUE(d.changed);
  for (int w = 0; w < 5; ++w) EXPECT_EQ(s.Step(5).knobs.variant, kInt8);
  s.ctl.Free();
  // 5/s: fp32 batch 1 fits with headroom (25.12 ms): back after the 3 dwell windows.
  EXPECT_EQ(s.Step(5).knobs.variant, kInt8);
  EXPECT_EQ(s.Step(5).knobs.variant, kInt8);
  d = s.Step(5);
  EXPECT_EQ(d.reason, "load_fell");
  ExpectKnobs(d, kFp32, 1, 0);
}

TEST(AdaptiveControllerTest, PinOfAnIndexThatIsNoUsableVariantChangesNothing) {
  ControllerConfig c = TableConfig();
  c.variants.push_back({"broken", {}});  // index 3: no measured point
  Sim s(c);
  s.Step(10);
  for (int v : {-1, 3, 4}) {
    Decision d = s.ctl.Pin(v);
    EXPECT_FALSE(d.valid) << v;
    EXPECT_EQ(d.reason, "invalid");
    EXPECT_FALSE(d.changed);
    EXPECT_FALSE(s.ctl.pinned());
    ExpectKnobs(d, kFp32, 1, 0);
  }
}

TEST(AdaptiveControllerTest, IdleWindowReturnsToFp32Batch1) {
  Sim s(TableConfig());
  ExpectKnobs(s.Step(75), kBf16, 1, 0);
  Decision d = s.Step(0);
  EXPECT_EQ(d.reason, "idle");
  EXPECT_TRUE(d.changed);
  ExpectKnobs(d, kFp32, 1, 0);
}

TEST(AdaptiveControllerTest, NoBatchingKeepsBatch1AndNoDelay) {
  ControllerConfig c = TableConfig();
  c.max_batch_size = 0;
  Sim s(c);
  ExpectKnobs(s.Step(75), kBf16, 1, 0);  // bf16 batch 1 at 75/s: 52.04 ms
  // 150/s: bf16 batch 1 rho 1.35, int8 batch 1 rho 0.9 > 0.85: nothing fits; fastest = int8,
  // its largest batch is 1, no delay.
  Decision d = s.Step(150);
  EXPECT_EQ(d.reason, "slo_unreachable");
  ExpectKnobs(d, kInt8, 1, 0);
}

TEST(AdaptiveControllerTest, InstancesGrowWhenOneInstanceIsOverloaded) {
  ControllerConfig c;
  c.slo_ms = 200;
  c.variants = {{"fp32", {{1, 20}}}};
  c.max_instances = 2;
  Sim s(c);
  ExpectKnobs(s.Step(10), 0, 1, 0, 1);
  // 45/s: one instance rho = 0.9 > 0.85. Two: 1.15x the rows, S = 20 / 1.15 = 17.391 ms,
  // rho = 45 * 0.017391 = 0.7826, run = 20 * 2 / 1.15 = 34.78 ms,
  // latency = 34.78 + 4.60517 * 0.7826 * 17.391 / (2 * 0.2174) = 34.78 + 144.2 = 179.0 <= 200.
  Decision d = s.Step(45);
  EXPECT_EQ(d.reason, "overload");
  ExpectKnobs(d, 0, 1, 0, 2);
  EXPECT_NEAR(d.predicted_ms, 179.0, 0.1);
}

TEST(AdaptiveControllerTest, BadObservationsAreIgnored) {
  Sim s(TableConfig());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Observation> bad(8);
  for (Observation& o : bad) o.arrivals = 10, o.completed = 10, o.batches = 10, o.busy_s = 0.2;
  bad[0].interval_s = 0;
  bad[1].interval_s = -1;
  bad[2].interval_s = nan;
  bad[3].interval_s = inf;
  bad[4].arrivals = -1;
  bad[5].completed = -5;
  bad[6].batches = -1;
  bad[7].queue_depth = -3;
  for (size_t k = 0; k < bad.size(); ++k) {
    Decision d = s.ctl.Observe(bad[k]);
    EXPECT_FALSE(d.valid) << k;
    EXPECT_EQ(d.reason, "invalid") << k;
    ExpectKnobs(d, kFp32, 1, 0);
  }
  // The first valid window is still the start; NaN latency and busy time are no data: no
  // slo_risk, no correction.
  Observation o;
  o.arrivals = 10, o.completed = 10, o.batches = 10, o.busy_s = nan, o.latency_ms = nan;
  Decision d = s.ctl.Observe(o);
  EXPECT_TRUE(d.valid);
  EXPECT_EQ(d.reason, "start");
  EXPECT_NEAR(d.correction, 1, 1e-12);
  o.busy_s = 5;
  o.batches = 0;  // busy time without batches: no data
  o.latency_ms = -1;
  d = s.ctl.Observe(o);
  EXPECT_EQ(d.reason, "steady");
  EXPECT_NEAR(d.correction, 1, 1e-12);
  // Runs 100x the table: the correction is clamped to 4 (newest 4, smoothed 2.5).
  o.batches = 10;
  o.busy_s = 10 * 2.0;  // 2 s a batch against 20 ms
  d = s.ctl.Observe(o);
  EXPECT_NEAR(d.correction, 4, 1e-12);
}

TEST(AdaptiveControllerTest, ConfigWithoutUsableVariantsRejectsEverything) {
  ControllerConfig c = TableConfig();
  c.variants = {{"fp32", {}}, {"bf16", {{0, 5}, {2, -1}}}};
  AdaptiveController ctl(c);
  Observation o;
  o.arrivals = 10;
  EXPECT_FALSE(ctl.Observe(o).valid);
  EXPECT_FALSE(ctl.Pin(0).valid);
  ctl.Free();
  AdaptiveController empty(ControllerConfig{});
  EXPECT_FALSE(empty.Observe(o).valid);
}

TEST(AdaptiveControllerTest, UnusableVariantIsSkipped) {
  ControllerConfig c = TableConfig();
  c.variants[kBf16].latency_ms.clear();  // say its preparation failed
  Sim s(c);
  s.Step(10);
  // 75/s: fp32 cannot (above); bf16 has no table; int8 batch 1: rho 0.45,
  // 6 + 4.60517 * 0.45 * 6 / (2 * 0.55) = 17.3 ms: fits.
  ExpectKnobs(s.Step(75), kInt8, 1, 0);
}

}  // namespace
}  // namespace inferloop::control

namespace inferloop::control {
namespace {

// A server whose latency is 2.5x what the cost model predicts (time outside the runs: HTTP, a
// client on the same CPUs): the controller moves off fp32 and, while that stays true, does not
// come back to a setting that only the uncorrected prediction says fits.
TEST(AdaptiveControllerTest, LatencyAboveThePredictionKeepsItConservative) {
  const ControllerConfig c = TableConfig();
  Sim s(c);
  const double rate = 5;
  const Prediction fp32 = s.model.Predict(kFp32, 1, 1, 0, rate, 1);
  ASSERT_LT(fp32.latency_ms, 0.6 * c.slo_ms);  // premise: the model alone would call fp32 roomy
  ASSERT_GT(2.5 * fp32.latency_ms, c.slo_ms);  // premise: observed 2.5x breaks the SLO
  Decision d = s.Step(rate);
  ExpectKnobs(d, kFp32, 1, 0);
  d = s.Step(rate, 2.5 * fp32.latency_ms);
  EXPECT_EQ(d.reason, "slo_risk");
  EXPECT_NE(d.knobs.variant, kFp32);
  for (int w = 0; w < 10; ++w) {
    const Knobs& k = s.ctl.knobs();
    const Prediction p = s.model.Predict(k.variant, k.preferred_batch_size, k.instances,
                                         std::chrono::duration<double>(k.max_queue_delay).count(), rate, 1);
    d = s.Step(rate, 2.5 * p.latency_ms);
    EXPECT_NE(d.knobs.variant, kFp32) << "window " << w << ": " << d.reason;
  }
}

}  // namespace
}  // namespace inferloop::control
