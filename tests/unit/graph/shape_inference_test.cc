// Shape inference additions the optimizer relies on: symbolic shape arithmetic through
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, com.inferloop ops, and Split with
// run-time lengths.
#include "graph/shape_inference.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

TEST(OptShapeInference, ReshapeToSymbolicDimsFromShape) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {-1, -1, 12}, {"batch", "seq"}).Output("y", DataType::kFloat, {});
  b.Initializer("i0", Int64Tensor({}, {0})).Initializer("i1", Int64Tensor({}, {1})).Initializer("ax", Int64Tensor({1}, {0}));
  b.Initializer("heads", Int64Tensor({1}, {3})).Initializer("minus1", Int64Tensor({1}, {-1}));
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Gather", {"s", "i0"}, {"d0"});
  b.Node("Gather", {"s", "i1"}, {"d1"});
  b.Node("Unsqueeze", {"d0", "ax"}, {"u0"});
  b.Node("Unsqueeze", {"d1", "ax"}, {"u1"});
  ModelBuilder::IntAttr(b.Node("Concat", {"u0", "u1", "heads", "minus1"}, {"target"}), "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"y"});
  Model m = LoadBuilt(b);
  auto r = InferShapes(m);
  ASSERT_TRUE(r.ok());
  const TypeInfo& y = r->types.at("y");
  ASSERT_TRUE(y.has_shape);
  ASSERT_EQ(y.dims.size(), 4u);
  EXPECT_EQ(y.dims[0].symbol, "batch");
  EXPECT_EQ(y.dims[1].symbol, "seq");
  EXPECT_EQ(y.dims[2].value, 3);
  EXPECT_EQ(y.dims[3].value, 4);  // -1 solved: batch*seq*12 / (batch*seq*3)
}

TEST(OptShapeInference, FusedOpsAreShapedLikeWhatTheyReplace) {
  ModelBuilder b(17);
  b.proto().add_opset_import()->set_domain("com.inferloop");
  b.proto().mutable_opset_import(1)->set_version(1);
  b.Input("x", DataType::kFloat, {-1, 3, 8, 8}, {"n"}).Input("t", DataType::kFloat, {-1, 5, 16}, {"n", "s"});
  b.Output("c", DataType::kFloat, {}).Output("g", DataType::kFloat, {}).Output("a", DataType::kFloat, {});
  b.Output("mm", DataType::kFloat, {});
  b.Initializer("w", RandomTensor({4, 3, 3, 3}, 1)).Initializer("w2", RandomTensor({16, 7}, 2));
  auto& conv = b.Node("FusedConv", {"x", "w"}, {"c"}, "com.inferloop");
  IntsAttr(conv, "strides", {2, 2});
  b.Node("Gelu", {"t"}, {"g"}, "com.inferloop");
  ModelBuilder::IntAttr(b.Node("MultiHeadAttention", {"t", "t", "t"}, {"a"}, "com.inferloop"), "num_heads", 2);
  b.Node("FusedMatMul", {"t", "w2"}, {"mm"}, "com.inferloop");
  auto r = InferShapes(LoadBuilt(b));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->types.at("c").ToString(), "float32[n,4,3,3]") << r->types.at("c").ToString();
  EXPECT_EQ(r->types.at("g").ToString(), r->types.at("t").ToString());
  EXPECT_EQ(r->types.at("a").ToString(), r->types.at("t").ToString());
  EXPECT_EQ(r->types.at("mm").dims.size(), 3u);
  EXPECT_EQ(r->types.at("mm").dims[2].value, 7);
}

TEST(OptShapeInference, SplitWithRunTimeLengthsIsUnknown) {
  ModelBuilder b(18);
  b.Input("x", DataType::kFloat, {2, 8}).Input("lens", DataType::kInt64, {2}).Output("a", DataType::kFloat, {});
  b.Output("b", DataType::kFloat, {});
  ModelBuilder::IntAttr(b.Node("Split", {"x", "lens"}, {"a", "b"}), "axis", 1);
  auto r = InferShapes(LoadBuilt(b));
  ASSERT_TRUE(r.ok());
  const TypeInfo& a = r->types.at("a");
  ASSERT_TRUE(a.has_shape);
  EXPECT_EQ(a.dims[0].value, 2);
  EXPECT_LT(a.dims[1].value, 0);  // not the even split 4
}

}  // namespace
}  // namespace inferloop::testing
