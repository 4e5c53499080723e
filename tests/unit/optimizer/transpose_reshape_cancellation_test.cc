// TransposeReshapeCancellation on small graphs.
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

TEST(OptTransposeReshape, InversePairDisappears) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3, 4}).Output("y", DataType::kFloat, {2, 3, 4});
  IntsAttr(b.Node("Transpose", {"x"}, {"t1"}), "perm", {0, 2, 1});
  IntsAttr(b.Node("Transpose", {"t1"}, {"t2"}), "perm", {0, 2, 1});
  b.Node("Relu", {"t2"}, {"y"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 3, 4}, 1)}}, 1);
  EXPECT_EQ(CountOp(o.model, "Transpose"), 0);
  EXPECT_EQ(o.model.graph.nodes.size(), 1u);
}

TEST(OptTransposeReshape, PairComposesIntoOne) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3, 4, 5}).Output("y", DataType::kFloat, {2, 4, 5, 3});
  IntsAttr(b.Node("Transpose", {"x"}, {"t1"}), "perm", {0, 2, 1, 3});
  IntsAttr(b.Node("Transpose", {"t1"}, {"y"}), "perm", {0, 1, 3, 2});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 3, 4, 5}, 2)}}, 1);
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(o.model.graph.nodes[0].FindAttribute("perm")->ints, (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(o.model.graph.nodes[0].outputs[0], "y");
}

TEST(OptTransposeReshape, GraphOutputNameSurvives) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3}).Output("y", DataType::kFloat, {2, 3});
  b.Node("Relu", {"x"}, {"r"});
  IntsAttr(b.Node("Transpose", {"r"}, {"t"}), "perm", {1, 0});
  b.Node("Transpose", {"t"}, {"y"});  // default perm: reverse
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 3}, 3)}}, 1);
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(o.model.graph.nodes[0].op_type, "Relu");
  EXPECT_EQ(o.model.graph.nodes[0].outputs[0], "y");
}

TEST(OptTransposeReshape, ReshapeChainsAndNoOpReshapes) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3, 4}).Output("y", DataType::kFloat, {6, 4}).Output("z", DataType::kFloat, {2, 3, 4});
  b.Initializer("s1", Int64Tensor({2}, {4, 6}));
  b.Initializer("s2", Int64Tensor({2}, {6, -1}));
  b.Initializer("same", Int64Tensor({3}, {0, 3, -1}));
  b.Node("Reshape", {"x", "s1"}, {"r1"});
  b.Node("Reshape", {"r1", "s2"}, {"y"});
  b.Node("Reshape", {"x", "same"}, {"r3"});
  b.Node("Neg", {"r3"}, {"z"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 3, 4}, 4)}}, 1);
  EXPECT_EQ(CountOp(o.model, "Reshape"), 1);
  EXPECT_EQ(o.model.graph.nodes.size(), 2u);
}

TEST(OptTransposeReshape, ReshapeWithCopyEntryIsNotMerged) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3, 4}).Output("y", DataType::kFloat, {-1, 2, 2});
  b.Initializer("s1", Int64Tensor({2}, {6, 4}));
  b.Initializer("s2", Int64Tensor({3}, {0, 2, -1}));  // 0 copies r1's dim 0 (6), not x's (2)
  b.Node("Reshape", {"x", "s1"}, {"r1"});
  b.Node("Reshape", {"r1", "s2"}, {"y"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 3, 4}, 5)}}, 1);
  EXPECT_EQ(CountOp(o.model, "Reshape"), 2);
}

}  // namespace
}  // namespace inferloop::testing
