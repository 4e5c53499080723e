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
