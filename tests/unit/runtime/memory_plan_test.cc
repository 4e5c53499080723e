#include <gtest/gtest.h>

#include "graph/onnx_loader.h"
#include "graph/shape_inference.h"
#include "inferloop/session.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

// x[batch,3,8,8] -> Conv(4 filters, pad 1) -> Relu -> MaxPool 2x2 -> Flatten -> Reshape(-1, 64)
std::string ConvModel() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {-1, 3, 8, 8}, {"batch"}).Output("y", DataType::kFloat, {-1, 64});
  b.Initializer("w", Tensor::Create(DataType::kFloat, {4, 3, 3, 3}).value());
  b.Initializer("shape", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {-1, 64}));
  auto& conv = b.Node("Conv", {"x", "w"}, {"c"});
  auto* pads = conv.add_attribute();
  pads->set_name("pads");
  pads->set_type(onnxpb::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  b.Node("Relu", {"c"}, {"r"});
  auto& pool = b.Node("MaxPool", {"r"}, {"p"});
  auto* ks = pool.add_attribute();
  ks->set_name("kernel_shape");
  ks->set_type(onnxpb::AttributeProto::INTS);
  ks->add_ints(2);
  ks->add_ints(2);
  auto* st = pool.add_attribute();
  st->set_name("strides");
  st->set_type(onnxpb::AttributeProto::INTS);
  st->add_ints(2);
  st->add_ints(2);
  b.Node("Shape", {"p"}, {"s"});
  b.Node("Reshape", {"p", "shape"}, {"y"});
  return b.Bytes();
}

TEST(ShapeInference, PropagatesThroughConvPoolReshape) {
  std::string bytes = ConvModel();
  auto m = LoadModelFromBytes(bytes.data(), bytes.size(), "");
  ASSERT_TRUE(m.ok());
  auto r = InferShapes(*m, {{"x", {2, 3, 8, 8}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->types.at("c").ToString(), "float32[2,4,8,8]");
  EXPECT_EQ(r->types.at("p").ToString(), "float32[2,4,4,4]");
  EXPECT_EQ(r->types.at("s").ToString(), "int64[4]");
  EXPECT_EQ(r->types.at("y").ToString(), "float32[2,64]");
  // Symbolic batch stays symbolic.
  auto sym = InferShapes(*m);
  ASSERT_TRUE(sym.ok());
  EXPECT_EQ(sym->types.at("p").ToString(), "float32[batch,4,4,4]");
}

TEST(MemoryPlan, ReusesDeadBuffers) {
  std::string bytes = ConvModel();
  SessionOptions opts;
  opts.optimization_level = 0;  // keep Conv and Relu apart
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), opts);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto plan = (*s)->PlanMemory({{"x", {2, 3, 8, 8}}});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const size_t conv_bytes = 2 * 4 * 8 * 8 * 4;  // c and r are each this big
  EXPECT_EQ(plan->planned_values, 4);           // c, r, p, s; the graph output y stays on the heap
  EXPECT_EQ(plan->unplanned_values, 0);
  EXPECT_GE(plan->peak_bytes, conv_bytes);
  EXPECT_LT(plan->arena_bytes, plan->naive_bytes);  // Relu writes over c (in place), p reuses memory
  EXPECT_FALSE((*s)->PlanMemory({{"nope", {1}}}).ok());
  EXPECT_FALSE((*s)->PlanMemory({{"x", {1, 2}}}).ok());
}

}  // namespace
}  // namespace inferloop
// PlanArena: liveness-based reuse, in-place elementwise ops, views kept with their source.
#include <gtest/gtest.h>

#include "graph/onnx_loader.h"
#include "graph/shape_inference.h"
#include "runtime/memory_plan.h"
#include "unit/runtime/test_models.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

struct Compiled {
  Model model;
  std::unique_ptr<ExecutionPlan> plan;
  ShapeInferenceResult shapes;
  int slot(const std::string& name) const {
    for (size_t s = 0; s < plan->num_slots(); ++s)
      if (plan->slot_name(static_cast<int>(s)) == name) return static_cast<int>(s);
    return -1;
  }
};

std::unique_ptr<Compiled> Compile(const std::string& bytes, const std::map<std::string, Shape>& input_shapes = {}) {
  auto c = std::make_unique<Compiled>();
  auto m = LoadModelFromBytes(bytes.data(), bytes.size(), "");
  if (!m.ok()) return nullptr;
  c->model = std::move(m).value();
  auto p = ExecutionPlan::Compile(c->model.graph, c->model.opsets, PlanOptions{});
  if (!p.ok()) return nullptr;
  c->plan = std::move(p).value();
  auto sh = InferShapes(c->model, input_shapes);
  if (!sh.ok()) return nullptr;
  c->shapes = std::move(sh).value();
  return c;
}

// x[4,16] -> Relu a -> Relu b -> Relu c -> Relu y
std::string ReluChain() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {4, 16}).Output("y", DataType::kFloat, {4, 16});
  b.Node("Relu", {"x"}, {"a"});
  b.Node("Relu", {"a"}, {"b"});
  b.Node("Relu", {"b"}, {"c"});
  b.Node("Relu", {"c"}, {"y"});
  return b.Bytes();
}

TEST(RtMemoryPlan, ElementwiseChainRunsInPlace) {
  auto c = Compile(ReluChain());
  ASSERT_TRUE(c);
  ArenaLayout l = PlanArena(*c->plan, c->shapes);
  const auto& a = l.slots[c->slot("a")];
  const auto& b = l.slots[c->slot("b")];
  const auto& cc = l.slots[c->slot("c")];
  EXPECT_EQ(l.arena_bytes, 256u);  // one 4x16 float block for all three
  EXPECT_EQ(a.offset, 0);
  EXPECT_FALSE(a.reuses_input);  // x is the caller's
  EXPECT_EQ(b.offset, a.offset);
  EXPECT_TRUE(b.reuses_input);
  EXPECT_EQ(cc.offset, a.offset);
  EXPECT_TRUE(cc.reuses_input);
  EXPECT_EQ(cc.shape, (Shape{4, 16}));
  EXPECT_EQ(cc.dtype, DataType::kFloat);
  EXPECT_EQ(l.slots[c->slot("y")].offset, -1);  // graph output: heap
  EXPECT_EQ(l.planned, 3);
  EXPECT_EQ(l.unplanned, 0);

  ArenaLayout no_in_place = PlanArena(*c->plan, c->shapes, {}, /*in_place=*/false);
  EXPECT_EQ(no_in_place.arena_bytes, 512u);  // two blocks, alternating
  EXPECT_NE(no_in_place.slots[c->slot("a")].offset, no_in_place.slots[c->slot("b")].offset);
  EXPECT_EQ(no_in_place.slots[c->slot("a")].offset, no_in_place.slots[c->slot("c")].offset);
}

// x -> Relu r -> Reshape v (view of r) ; x -> Neg n ; Add(v', n) where v' = Reshape(v) back.
std::string ViewModel() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {4, 16}).Output("y", DataType::kFloat, {4, 16});
  b.Initializer("flat", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {64}));
  b.Initializer("back", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {4, 16}));
  b.Node("Relu", {"x"}, {"r"});
  b.Node("Reshape", {"r", "flat"}, {"v"});
  b.Node("Neg", {"x"}, {"n"});
  b.Node("Reshape", {"v", "back"}, {"w"});
  b.Node("Add", {"w", "n"}, {"y"});
  return b.Bytes();
}

TEST(RtMemoryPlan, ViewsShareTheirSourcesBlockAndLifetime) {
  auto c = Compile(ViewModel());
  ASSERT_TRUE(c);
  const int r = c->slot("r"), v = c->slot("v"), w = c->slot("w"), n = c->slot("n");
  // Without alias knowledge r's block is free after the first Reshape and Neg takes it.
  ArenaLayout naive = PlanArena(*c->plan, c->shapes);
  EXPECT_EQ(naive.slots[n].offset, naive.slots[r].offset);
  // Knowing v views r and w views v, the three live as one block until Add.
  ArenaLayout l = PlanArena(*c->plan, c->shapes, {{v, r}, {w, v}});
  EXPECT_EQ(l.slots[v].alias_of, r);
  EXPECT_EQ(l.slots[w].alias_of, r);
  EXPECT_EQ(l.slots[v].offset, l.slots[r].offset);
  EXPECT_EQ(l.slots[v].shape, (Shape{64}));
  EXPECT_NE(l.slots[n].offset, l.slots[r].offset);
  // A view that is a graph output keeps its whole group off the arena.
  int y = c->slot("y");
  ArenaLayout out = PlanArena(*c->plan, c->shapes, {{v, r}, {w, v}, {y, w}});
  EXPECT_EQ(out.slots[r].offset, -1);
  EXPECT_EQ(out.slots[v].offset, -1);
  // An unknown source leaves just that value to the heap.
  ArenaLayout unknown = PlanArena(*c->plan, c->shapes, {{n, -1}});
  EXPECT_EQ(unknown.slots[n].offset, -1);
  EXPECT_GE(unknown.slots[r].offset, 0);
}

// Values alive at the same time never share bytes (checked on real models).
void CheckNoOverlap(const Compiled& c, const ArenaLayout& l) {
  const size_t n = c.plan->num_slots();
  std::vector<int> def(n, -1), last(n, 1 << 30);
  for (size_t p = 0; p < c.plan->num_steps(); ++p) {
    for (int s : c.plan->step_outputs(p))
      if (s >= 0) def[s] = static_cast<int>(p);
    for (int s : c.plan->step_releases(p)) last[s] = static_cast<int>(p);
  }
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      const auto& pa = l.slots[a];
      const auto& pb = l.slots[b];
      if (pa.offset < 0 || pb.offset < 0 || pa.alias_of >= 0 || pb.alias_of >= 0) continue;
      const bool bytes_overlap = pa.offset < pb.offset + static_cast<int64_t>(pb.bytes) &&
                                 pb.offset < pa.offset + static_cast<int64_t>(pa.bytes);
      // Lifetimes [def, last]; an in-place output may start where its input ends.
      const bool in_place_pair = (pb.reuses_input && def[b] == last[a]) || (pa.reuses_input && def[a] == last[b]);
      const bool live_together = def[a] <= last[b] && def[b] <= last[a] && !in_place_pair;
      EXPECT_FALSE(bytes_overlap && live_together)
          << c.plan->slot_name(static_cast<int>(a)) << " and " << c.plan->slot_name(static_cast<int>(b));
      EXPECT_LE(pa.offset + static_cast<int64_t>(pa.bytes), static_cast<int64_t>(l.arena_bytes));
    }
}

TEST(RtMemoryPlan, LiveValuesNeverOverlap) {
  auto cnn = Compile(testing::SmallCnnModel(), {{"x", {3, 3, 8, 8}}});
  ASSERT_TRUE(cnn);
  ArenaLayout l = PlanArena(*cnn->plan, cnn->shapes);
  EXPECT_GT(l.planned, 5);
  EXPECT_LE(l.arena_bytes, l.naive_bytes);
  EXPECT_GE(l.arena_bytes, l.peak_bytes);
  CheckNoOverlap(*cnn, l);
  auto mlp = Compile(testing::SeqMlpModel(), {{"x", {2, 7, 16}}});
  ASSERT_TRUE(mlp);
  ArenaLayout m = PlanArena(*mlp->plan, mlp->shapes);
  EXPECT_GT(m.planned, 3);
  CheckNoOverlap(*mlp, m);
}

TEST(RtMemoryPlan, UnknownShapesStayOnTheHeap) {
  auto c = Compile(testing::SeqMlpModel());  // batch and seq symbolic
  ASSERT_TRUE(c);
  ArenaLayout l = PlanArena(*c->plan, c->shapes);
  EXPECT_EQ(l.arena_bytes, 0u);
  EXPECT_EQ(l.planned, 0);
}

}  // namespace
}  // namespace inferloop
