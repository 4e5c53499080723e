// ActivationFusion, MatMulAddFusion and ResidualAddFusion on small graphs; the fused graphs
// run on the registered com.inferloop kernels and must match the unfused ones.
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

std::string ActivationAttr(const Node& n) {
  const Attribute* a = n.FindAttribute("activation");
  return a ? a->s : "";
}

// x [1,3,8,8] -> Conv(3->4, 3x3, pad 1) -> <act nodes> -> y
Model ConvThen(const std::function<void(ModelBuilder&)>& act) {
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {1, 3, 8, 8}).Output("y", DataType::kFloat, {1, 4, 8, 8});
  b.Initializer("w", RandomTensor({4, 3, 3, 3}, 21));
  b.Initializer("b", RandomTensor({4}, 22));
  IntsAttr(b.Node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  act(b);
  return LoadBuilt(b);
}

TEST(OptActivationFusion, ConvWithEachActivation) {
  struct Case {
    const char* op;
    std::string expect;
    std::function<void(onnxpb::NodeProto&)> attrs;
  };
  std::vector<Case> cases = {
      {"Relu", "Relu", nullptr},
      {"Sigmoid", "Sigmoid", nullptr},
      {"Tanh", "Tanh", nullptr},
      {"HardSwish", "HardSwish", nullptr},
      {"LeakyRelu", "LeakyRelu", [](onnxpb::NodeProto& n) { FloatAttr(n, "alpha", 0.2f); }},
      {"HardSigmoid", "HardSigmoid", [](onnxpb::NodeProto& n) { FloatAttr(n, "alpha", 0.3f); }},
      {"Elu", "Elu", [](onnxpb::NodeProto& n) { FloatAttr(n, "alpha", 0.7f); }},
  };
  for (const auto& c : cases) {
    Model m = ConvThen([&](ModelBuilder& b) {
      auto& n = b.Node(c.op, {"c"}, {"y"});
      if (c.attrs) c.attrs(n);
    });
    auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 3, 8, 8}, 23, -2, 2)}});
    ASSERT_EQ(o.model.graph.nodes.size(), 1u) << c.op;
    const Node& n = o.model.graph.nodes[0];
    EXPECT_EQ(n.op_type, "FusedConv");
    EXPECT_EQ(n.domain, "com.inferloop");
    EXPECT_EQ(ActivationAttr(n), c.expect);
    EXPECT_EQ(n.FindAttribute("pads")->ints, (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(o.model.opsets.at("com.inferloop"), 1);
  }
}

TEST(OptActivationFusion, ClipNeedsConstantBounds) {
  Model m = ConvThen([](ModelBuilder& b) {
    b.Initializer("lo", ScalarF(0.f)).Initializer("hi", ScalarF(6.f));
    b.Node("Clip", {"c", "lo", "hi"}, {"y"});
  });
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 3, 8, 8}, 24, -3, 3)}});
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(ActivationAttr(o.model.graph.nodes[0]), "Clip");
  EXPECT_EQ(o.model.graph.nodes[0].FindAttribute("activation_params")->floats, (std::vector<float>{0.f, 6.f}));
  // Only a max: min is -inf.
  Model m2 = ConvThen([](ModelBuilder& b) {
    b.Initializer("hi", ScalarF(0.5f));
    b.Node("Clip", {"c", "", "hi"}, {"y"});
  });
  auto o2 = OptimizeAndCompare(m2, {{"x", RandomTensor({1, 3, 8, 8}, 25, -3, 3)}});
  EXPECT_EQ(o2.model.graph.nodes.size(), 1u);
  // A bound that is a graph input cannot be fused.
  Model m3 = ConvThen([](ModelBuilder& b) {
    b.Input("hi", DataType::kFloat, {});
    b.Node("Clip", {"c", "", "hi"}, {"y"});
  });
  ASSERT_TRUE(OptimizeModel(m3).ok());
  EXPECT_EQ(CountOp(m3, "Clip"), 1);
}

TEST(OptActivationFusion, SecondReaderBlocksFusion) {
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {1, 3, 8, 8}).Output("y", DataType::kFloat, {}).Output("c", DataType::kFloat, {});
  b.Initializer("w", RandomTensor({4, 3, 3, 3}, 21));
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("Relu", {"c"}, {"y"});
  Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 3, 8, 8}, 26)}});
  EXPECT_EQ(CountOp(o.model, "Relu"), 1);
  EXPECT_EQ(CountOp(o.model, "FusedConv"), 0);
}

TEST(OptActivationFusion, GemmAndMatMul) {
  ModelBuilder b(14);
  b.Input("a", DataType::kFloat, {5, 6}).Input("x", DataType::kFloat, {2, 5, 6});
  b.Output("y", DataType::kFloat, {5, 4}).Output("z", DataType::kFloat, {2, 5, 4});
  b.Initializer("w", RandomTensor({4, 6}, 31)).Initializer("c", RandomTensor({4}, 32));
  b.Initializer("w2", RandomTensor({6, 4}, 33));
  auto& g = b.Node("Gemm", {"a", "w", "c"}, {"g"});
  ModelBuilder::IntAttr(g, "transB", 1);
  FloatAttr(g, "alpha", 0.5f);
  FloatAttr(b.Node("LeakyRelu", {"g"}, {"y"}), "alpha", 0.1f);
  b.Node("MatMul", {"x", "w2"}, {"mm"});
  b.Node("Sigmoid", {"mm"}, {"z"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"a", RandomTensor({5, 6}, 34)}, {"x", RandomTensor({2, 5, 6}, 35)}});
  const Node* fg = FindOp(o.model, "FusedGemm");
  ASSERT_NE(fg, nullptr);
  EXPECT_EQ(fg->FindAttribute("transB")->i, 1);
  EXPECT_FLOAT_EQ(fg->FindAttribute("alpha")->f, 0.5f);
  EXPECT_EQ(ActivationAttr(*fg), "LeakyRelu");
  const Node* fm = FindOp(o.model, "FusedMatMul");
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ(ActivationAttr(*fm), "Sigmoid");
  EXPECT_EQ(o.model.graph.nodes.size(), 2u);
}

TEST(OptMatMulAdd, TwoDimensionalBecomesGemmAndNDimensionalFusedMatMul) {
  ModelBuilder b(14);
  b.Input("a", DataType::kFloat, {5, 6}).Input("x", DataType::kFloat, {2, 5, 6});
  b.Output("y", DataType::kFloat, {5, 4}).Output("z", DataType::kFloat, {2, 5, 4});
  b.Initializer("w", RandomTensor({6, 4}, 41)).Initializer("bias", RandomTensor({4}, 42));
  b.Node("MatMul", {"a", "w"}, {"m1"});
  b.Node("Add", {"m1", "bias"}, {"y"});
  b.Node("MatMul", {"x", "w"}, {"m2"});
  b.Node("Add", {"bias", "m2"}, {"s"});  // bias first
  b.Node("Relu", {"s"}, {"z"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"a", RandomTensor({5, 6}, 43)}, {"x", RandomTensor({2, 5, 6}, 44)}});
  EXPECT_EQ(CountOp(o.model, "Gemm"), 1);
  const Node* fm = FindOp(o.model, "FusedMatMul");
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ(fm->inputs.size(), 3u);
  EXPECT_EQ(ActivationAttr(*fm), "Relu");
  EXPECT_EQ(o.model.graph.nodes.size(), 2u);
}

TEST(OptMatMulAdd, BiasThatBroadcastsWiderIsLeft) {
  ModelBuilder b(14);
  b.Input("a", DataType::kFloat, {5, 6}).Output("y", DataType::kFloat, {}).Output("z", DataType::kFloat, {});
  b.Initializer("w", RandomTensor({6, 4}, 45));
  b.Initializer("b3", RandomTensor({1, 1, 4}, 46));  // would make the sum 3-D
  b.Initializer("bm", RandomTensor({5, 4}, 47));     // a full matrix, not a bias vector
  b.Node("MatMul", {"a", "w"}, {"m1"});
  b.Node("Add", {"m1", "b3"}, {"y"});
  b.Node("MatMul", {"a", "w"}, {"m2"});
  b.Node("Add", {"m2", "bm"}, {"z"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"a", RandomTensor({5, 6}, 48)}});
  EXPECT_EQ(CountOp(o.model, "MatMul"), 2);
  EXPECT_EQ(CountOp(o.model, "Add"), 2);
}

// x -> Conv -> [BN] -> Add(z) -> [Relu]
TEST(OptResidualAdd, AddAndReluJoinTheConv) {
  for (bool relu : {true, false}) {
    ModelBuilder b(14);
    b.Input("x", DataType::kFloat, {2, 4, 6, 6}).Input("z", DataType::kFloat, {2, 4, 6, 6});
    b.Output("y", DataType::kFloat, {2, 4, 6, 6});
    b.Initializer("w", RandomTensor({4, 4, 3, 3}, 51));
    IntsAttr(b.Node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
    b.Node("Add", {"z", "c"}, {relu ? "s" : "y"});
    if (relu) b.Node("Relu", {"s"}, {"y"});
    auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 4, 6, 6}, 52)}, {"z", RandomTensor({2, 4, 6, 6}, 53)}});
    ASSERT_EQ(o.model.graph.nodes.size(), 1u);
    const Node& n = o.model.graph.nodes[0];
    EXPECT_EQ(n.op_type, "FusedConv");
    ASSERT_EQ(n.inputs.size(), 4u);
    EXPECT_EQ(n.inputs[3], "z");
    EXPECT_EQ(ActivationAttr(n), relu ? "Relu" : "");
  }
}

TEST(OptResidualAdd, BroadcastingOperandOrSecondReaderBlocks) {
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {2, 4, 6, 6}).Input("z", DataType::kFloat, {1, 4, 1, 1});
  b.Output("y", DataType::kFloat, {}).Output("y2", DataType::kFloat, {}).Output("c2", DataType::kFloat, {});
  b.Initializer("w", RandomTensor({4, 4, 1, 1}, 54));
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("Add", {"c", "z"}, {"y"});  // z broadcasts: not a residual
  b.Node("Conv", {"x", "w"}, {"c2"});
  b.Node("Add", {"c2", "x"}, {"y2"});  // c2 is also a graph output
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 4, 6, 6}, 55)}, {"z", RandomTensor({1, 4, 1, 1}, 56)}});
  EXPECT_EQ(CountOp(o.model, "Add"), 2);
  EXPECT_EQ(CountOp(o.model, "FusedConv"), 0);
}

// A ResNet basic block: Conv-BN-Relu-Conv-BN-Add(x)-Relu becomes two FusedConvs.
TEST(OptResidualAdd, ResNetBlock) {
  ModelBuilder b(14);
  const int64_t C = 8;
  b.Input("x", DataType::kFloat, {1, C, 10, 10}).Output("y", DataType::kFloat, {1, C, 10, 10});
  for (int k = 1; k <= 2; ++k) {
    const std::string s = std::to_string(k);
    b.Initializer("w" + s, RandomTensor({C, C, 3, 3}, 60 + k, -0.3f, 0.3f));
    b.Initializer("g" + s, RandomTensor({C}, 70 + k, 0.5f, 1.5f));
    b.Initializer("be" + s, RandomTensor({C}, 80 + k));
    b.Initializer("m" + s, RandomTensor({C}, 90 + k));
    b.Initializer("v" + s, RandomTensor({C}, 100 + k, 0.5f, 2.f));
  }
  IntsAttr(b.Node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c1", "g1", "be1", "m1", "v1"}, {"n1"});
  b.Node("Relu", {"n1"}, {"r1"});
  IntsAttr(b.Node("Conv", {"r1", "w2"}, {"c2"}), "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c2", "g2", "be2", "m2", "v2"}, {"n2"});
  b.Node("Add", {"n2", "x"}, {"s"});
  b.Node("Relu", {"s"}, {"y"});
  // Channel block 16 whatever the CPU: 8 channels then stay plain (with block 8, the AVX2 one,
  // NchwcLayout would block them and add the reorders of x and y; not what this test is about).
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({1, C, 10, 10}, 110)}}, 2, 1e-4f, 1e-4f, 16);
  EXPECT_EQ(o.report.nodes_before, 7);
  EXPECT_EQ(o.report.nodes_after, 2);
  EXPECT_EQ(CountOp(o.model, "FusedConv"), 2);
}

}  // namespace
}  // namespace inferloop::testing
