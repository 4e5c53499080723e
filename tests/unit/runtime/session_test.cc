#include "inferloop/session.h"

#include <gtest/gtest.h>

#include <thread>

#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

std::string AddModel() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {-1, 3}, {"batch"}).Input("y", DataType::kFloat, {-1, 3}, {"batch"});
  b.Output("z", DataType::kFloat, {-1, 3});
  b.Node("Add", {"x", "y"}, {"z"});
  return b.Bytes();
}

Tensor F32(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(DataType::kFloat, std::move(shape), v); }

std::unique_ptr<Session> MustCreate(const std::string& bytes) {
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(Session, RunsAndReportsSignature) {
  auto s = MustCreate(AddModel());
  ASSERT_TRUE(s);
  ASSERT_EQ(s->inputs().size(), 2u);
  EXPECT_EQ(s->inputs()[0].ToString(), "x: float32[batch,3]");
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"y", F32({1, 3}, {10, 20, 30})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& z = (*r)[0].second.tensor();
  EXPECT_EQ(z.shape(), (Shape{1, 3}));
  EXPECT_EQ(z.data<float>()[2], 33.0f);
}

TEST(Session, TruncatedModelIsAClearError) {
  std::string bytes = AddModel();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{1}}) {
    auto s = Session::CreateFromBytes(bytes.data(), cut);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  }
}

TEST(Session, GarbageIsAClearError) {
  std::string junk(1000, '\xff');
  auto s = Session::CreateFromBytes(junk.data(), junk.size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a valid ONNX model"), std::string::npos);
}

TEST(Session, MissingFileNamesThePath) {
  auto s = Session::CreateFromFile("/nonexistent/model.onnx");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/model.onnx"), std::string::npos);
}

TEST(Session, UnknownOperatorNamesOpDomainAndOpset) {
  ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("FrobnicateV2", {"x"}, {"y"}).set_name("n1");
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("FrobnicateV2"), std::string::npos) << m;
  EXPECT_NE(m.find("ai.onnx"), std::string::npos) << m;
  EXPECT_NE(m.find("opset 13"), std::string::npos) << m;
}

TEST(Session, UnimportedDomainIsAnError) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("Thing", {"x"}, {"y"}, "com.example");
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("com.example"), std::string::npos);
}

TEST(Session, CyclicGraphIsRejected) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("c", DataType::kFloat, {2});
  b.Node("Add", {"x", "c"}, {"a"});
  b.Node("Add", {"a", "x"}, {"c"});
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cycle"), std::string::npos) << s.status().ToString();
}

TEST(Session, UndefinedValueIsRejected) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("Add", {"x", "ghost"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'ghost'"), std::string::npos);
}

TEST(Session, MissingInput) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing required input 'y'"), std::string::npos) << r.status().ToString();
}

TEST(Session, ExtraInput) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"y", F32({1, 3}, {1, 2, 3})}, {"w", F32({1}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown input 'w'"), std::string::npos) << r.status().ToString();
}

TEST(Session, WrongDtypeNamesInputExpectedAndGot) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", Tensor::FromVector<int32_t>(DataType::kInt32, {1, 3}, {1, 2, 3})}, {"y", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'x' expects dtype float32, got int32"), std::string::npos) << r.status().ToString();
}

TEST(Session, WrongRankAndShape) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({3}, {1, 2, 3})}, {"y", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expects rank 2"), std::string::npos) << r.status().ToString();
  r = s->Run({{"x", F32({1, 2}, {1, 2})}, {"y", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dimension 1 must be 3"), std::string::npos) << r.status().ToString();
}

TEST(Session, SymbolicDimsMustAgree) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"y", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'batch'"), std::string::npos) << r.status().ToString();
}

TEST(Session, InitializerThatIsAlsoAnInputCanBeOverridden) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Input("bias", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Initializer("bias", F32({2}, {100, 200}));
  b.Node("Add", {"x", "bias"}, {"y"});
  auto s = MustCreate(b.Bytes());
  ASSERT_EQ(s->inputs().size(), 1u);  // bias has a default
  auto r = s->Run({{"x", F32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 202.0f);
  r = s->Run({{"x", F32({2}, {1, 2})}, {"bias", F32({2}, {0, 0})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 2.0f);
}

TEST(Session, HugeExpandIsRefusedBeforeAllocating) {
  ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {1}).Output("y", DataType::kFloat, {-1});
  b.Initializer("shape", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {int64_t{1} << 40}));
  b.Node("Expand", {"x", "shape"}, {"y"});
  SessionOptions opts;
  opts.max_tensor_bytes = size_t{1} << 30;
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size(), opts);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({1}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  EXPECT_NE(r.status().message().find("Expand"), std::string::npos) << r.status().ToString();
}

TEST(Session, OverflowingExpandIsAnErrorNotACrash) {
  ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {1}).Output("y", DataType::kFloat, {-1, -1});
  b.Initializer("shape", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {int64_t{1} << 40, int64_t{1} << 40}));
  b.Node("Expand", {"x", "shape"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_TRUE(s.ok());
  auto r = (*s)->Run({{"x", F32({1}, {1})}});
  ASSERT_FALSE(r.ok());
}

TEST(Session, ConcurrentRunsOnOneSessionAgree) {
  auto s = MustCreate(AddModel());
  constexpr int kThreads = 8, kIters = 200;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        float v = static_cast<float>(t * 1000 + i);
        auto r = s->Run({{"x", F32({1, 3}, {v, v, v})}, {"y", F32({1, 3}, {1, 2, 3})}});
        if (!r.ok() || (*r)[0].second.tensor().data<float>()[2] != v + 3) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace inferloop
// Runtime: arena-backed runs against heap runs, RunInto, concurrency, plan cache, timings.
#include <cstdio>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "unit/runtime/test_models.h"

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
