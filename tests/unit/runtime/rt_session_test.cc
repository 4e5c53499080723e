// Runtime: arena-backed runs against heap runs, RunInto, concurrency, plan cache, timings.
#include <cstdio>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "unit/runtime/rt_test_models.h"

namespace inferloop {
namespace {

using testing::AddChainModel;
using testing::MakeSession;
using testing::MaxAbsDiff;
using testing::RandomFloats;
using testing::SeqMlpModel;
using testing::SmallCnnModel;

SessionOptions HeapOnly() {
  SessionOptions o;
  o.enable_memory_arena = false;
  o.intra_op_threads = 1;
  return o;
}

Tensor RunOne(const Session& s, const Tensor& x) {
  auto r = s.Run({{"x", Value(x)}});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0].second.tensor() : Tensor();
}

TEST(RtSession, ArenaRunsMatchHeapRuns) {
  for (int level : {0, 2}) {
    SessionOptions arena_opts;
    arena_opts.optimization_level = level;
    SessionOptions heap_opts = HeapOnly();
    heap_opts.optimization_level = level;
    for (const std::string& model : {SmallCnnModel(), SeqMlpModel()}) {
      auto arena = MakeSession(model, arena_opts);
      auto heap = MakeSession(model, heap_opts);
      ASSERT_TRUE(arena && heap);
      const bool cnn = model == SmallCnnModel();
      for (int rep = 0; rep < 3; ++rep)
        for (int64_t batch : {1, 3, 2}) {
          Shape shape = cnn ? Shape{batch, 3, 8, 8} : Shape{batch, 5 + batch, 16};
          Tensor x = RandomFloats(shape, static_cast<uint32_t>(100 * rep + batch));
          Tensor a = RunOne(*arena, x), h = RunOne(*heap, x);
          ASSERT_TRUE(a.defined() && h.defined());
          EXPECT_EQ(a.shape(), h.shape());
          EXPECT_LE(MaxAbsDiff(a, h), 1e-5f) << "level " << level << " batch " << batch;
        }
      EXPECT_GT(arena->memory_stats().last_arena_bytes, 0u);
    }
  }
}

TEST(RtSession, EarlierResultsSurviveLaterRuns) {
  auto s = MakeSession(SmallCnnModel());
  ASSERT_TRUE(s);
  Tensor x1 = RandomFloats({2, 3, 8, 8}, 1), x2 = RandomFloats({2, 3, 8, 8}, 2);
  Tensor y1 = RunOne(*s, x1);
  Tensor y1_copy = y1.Clone();
  Tensor y2 = RunOne(*s, x2);
  EXPECT_EQ(MaxAbsDiff(y1, y1_copy), 0.f);  // the second run did not write over the first's output
  EXPECT_GT(MaxAbsDiff(y1, y2), 0.f);
}

TEST(RtSession, RunIntoReusesUnsharedOutputBuffers) {
  auto s = MakeSession(SmallCnnModel());
  auto ref = MakeSession(SmallCnnModel(), HeapOnly());
  ASSERT_TRUE(s && ref);
  std::vector<NamedValue> outs;
  Tensor x = RandomFloats({2, 3, 8, 8}, 7);
  ASSERT_TRUE(s->RunInto({{"x", Value(x)}}, outs).ok());
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].first, "y");
  const void* buffer = outs[0].second.tensor().raw_data();
  for (uint32_t seed = 8; seed < 12; ++seed) {
    Tensor xi = RandomFloats({2, 3, 8, 8}, seed);
    ASSERT_TRUE(s->RunInto({{"x", Value(xi)}}, outs).ok());
    EXPECT_EQ(outs[0].second.tensor().raw_data(), buffer);  // written in place
    EXPECT_LE(MaxAbsDiff(outs[0].second.tensor(), RunOne(*ref, xi)), 1e-5f);  // summation order may differ
  }
  // A result the caller still holds elsewhere is not overwritten.
  Tensor kept = outs[0].second.tensor();
  Tensor kept_copy = kept.Clone();
  ASSERT_TRUE(s->RunInto({{"x", Value(x)}}, outs).ok());
  EXPECT_NE(outs[0].second.tensor().raw_data(), kept.raw_data());
  EXPECT_EQ(MaxAbsDiff(kept, kept_copy), 0.f);
  // A different batch: the old buffer does not fit, a new one is made.
  Tensor x3 = RandomFloats({3, 3, 8, 8}, 13);
  ASSERT_TRUE(s->RunInto({{"x", Value(x3)}}, outs).ok());
  EXPECT_EQ(outs[0].second.tensor().shape(), (Shape{3, 10}));
  EXPECT_LE(MaxAbsDiff(outs[0].second.tensor(), RunOne(*ref, x3)), 1e-5f);
  // Errors name the problem.
  std::vector<NamedValue> bad = {{"nope", Value()}};
  Status st = s->RunInto({{"x", Value(x)}}, bad);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("unknown output 'nope'"), std::string::npos);
  EXPECT_FALSE(s->RunInto({{"x", Value(RandomFloats({2, 3, 9, 8}, 1))}}, outs).ok());
}

TEST(RtSession, ConcurrentRunsOnOneSession) {
  SessionOptions opts;
  opts.intra_op_threads = 2;
  auto s = MakeSession(SmallCnnModel(), opts);
  auto ref = MakeSession(SmallCnnModel(), HeapOnly());
  ASSERT_TRUE(s && ref);
  EXPECT_EQ(s->intra_op_threads(), 2);
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<Tensor> xs, expected;
  for (int i = 0; i < 8; ++i) {
    xs.push_back(RandomFloats({1 + i % 3, 3, 8, 8}, 50 + i));
    expected.push_back(RunOne(*ref, xs.back()));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<NamedValue> outs;
      for (int r = 0; r < kRuns; ++r) {
        const size_t k = static_cast<size_t>(t * 7 + r) % xs.size();
        if (r % 2) {
          auto res = s->Run({{"x", Value(xs[k])}});
          const float d = res.ok() ? MaxAbsDiff((*res)[0].second.tensor(), expected[k]) : -1.f;
          if (d < 0 || d > 1e-5f) {  // other threads may get another (equally valid) summation order
            failures.fetch_add(1);
            std::fprintf(stderr, "Run t%d r%d k%zu: %s diff %g\n", t, r, k, res.status().ToString().c_str(), d);
          }
        } else {
          Status st = s->RunInto({{"x", Value(xs[k])}}, outs);
          const float d = st.ok() ? MaxAbsDiff(outs[0].second.tensor(), expected[k]) : -1.f;
          if (d < 0 || d > 1e-5f) {  // other threads may get another (equally valid) summation order
            failures.fetch_add(1);
            std::fprintf(stderr, "RunInto t%d r%d k%zu: %s diff %g\n", t, r, k, st.ToString().c_str(), d);
          }
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(s->memory_stats().run_states, kThreads);
}

TEST(RtSession, ViewsThatOutliveTheirSourceStayCorrect) {
  // Cast to the same type returns a view of r; r's block is free after Cast in a plan that
  // does not know that, and Neg would write over it while c still needs it.
  testing::ModelBuilder b;
  b.Input("x", DataType::kFloat, {4, 32}).Output("y", DataType::kFloat, {4, 32});
  b.Node("Relu", {"x"}, {"r"});
  auto& cast = b.Node("Cast", {"r"}, {"c"});
  testing::ModelBuilder::IntAttr(cast, "to", static_cast<int64_t>(DataType::kFloat));
  b.Node("Neg", {"x"}, {"n"});
  b.Node("Add", {"c", "n"}, {"y"});
  SessionOptions opts;
  opts.optimization_level = 0;
  auto s = MakeSession(b.Bytes(), opts);
  ASSERT_TRUE(s);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = RandomFloats({4, 32}, 90 + rep);
    Tensor y = RunOne(*s, x);
    ASSERT_TRUE(y.defined());
    for (int64_t i = 0; i < x.size(); ++i) {
      const float v = x.data<float>()[i];
      ASSERT_FLOAT_EQ(y.data<float>()[i], std::max(v, 0.f) - v) << "run " << rep << " element " << i;
    }
  }
}

TEST(RtSession, ShapePlansAreCachedUpToTheLimit) {
  SessionOptions opts;
  opts.max_cached_shape_plans = 3;
  auto s = MakeSession(SeqMlpModel(), opts);
  ASSERT_TRUE(s);
  for (int64_t seq = 1; seq <= 6; ++seq) ASSERT_TRUE(RunOne(*s, RandomFloats({2, seq, 16}, 1)).defined());
  EXPECT_EQ(s->memory_stats().cached_shape_plans, 3);
  RuntimeMemoryStats before = s->memory_stats();
  EXPECT_GT(before.arena_bytes_held, 0u);
  s->Trim();
  RuntimeMemoryStats after = s->memory_stats();
  EXPECT_EQ(after.cached_shape_plans, 0);
  EXPECT_EQ(after.arena_bytes_held, 0u);
  EXPECT_TRUE(RunOne(*s, RandomFloats({2, 4, 16}, 1)).defined());  // still runs after Trim
}

TEST(RtSession, ReportsCreateTimings) {
  std::string bytes = SmallCnnModel();
  auto s = MakeSession(bytes);
  ASSERT_TRUE(s);
  const SessionCreateTimings& t = s->create_timings();
  EXPECT_GE(t.load_ms, 0.0);
  EXPECT_GE(t.optimize_ms, 0.0);
  EXPECT_GE(t.plan_ms, 0.0);
  EXPECT_GE(t.total_ms, t.load_ms + t.optimize_ms + t.plan_ms - 1e-6);
  EXPECT_GT(t.total_ms, 0.0);
}

TEST(RtSession, AddChainUsesOneOrTwoBlocks) {
  auto s = MakeSession(AddChainModel(50, 4, 16), [] {
    SessionOptions o;
    o.optimization_level = 0;
    return o;
  }());
  ASSERT_TRUE(s);
  auto plan = s->PlanMemory();
  ASSERT_TRUE(plan.ok());
  // 49 intermediates of 256 bytes; with in-place Adds they all share one block.
  EXPECT_EQ(plan->planned_values, 49);
  EXPECT_EQ(plan->arena_bytes, 256u);
  Tensor x = RandomFloats({4, 16}, 3);
  Tensor y = RunOne(*s, x);
  ASSERT_TRUE(y.defined());
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], x.data<float>()[i] + 50.f);
}

}  // namespace
}  // namespace inferloop
