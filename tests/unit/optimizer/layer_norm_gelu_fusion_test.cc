// LayerNormFusion and GeluFusion on small graphs.
#include <cmath>

#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

// x [2,5,8]: the primitive layer norm over the last `k` axes.
Model PrimitiveLayerNorm(int64_t opset, bool pow, bool affine, std::vector<int64_t> axes) {
  ModelBuilder b(opset);
  b.Input("x", DataType::kFloat, {2, 5, 8}).Output("y", DataType::kFloat, {2, 5, 8});
  b.Initializer("eps", ScalarF(1e-5f)).Initializer("two", ScalarF(2.f));
  b.Initializer("gamma", RandomTensor({8}, 1, 0.5f, 1.5f)).Initializer("beta", RandomTensor({8}, 2));
  auto reduce = [&](const std::string& in, const std::string& out) {
    if (opset >= 18) {
      b.Initializer(out + "_axes", Int64Tensor({static_cast<int64_t>(axes.size())}, axes));
      b.Node("ReduceMean", {in, out + "_axes"}, {out});
    } else {
      IntsAttr(b.Node("ReduceMean", {in}, {out}), "axes", axes);
    }
  };
  reduce("x", "mean");
  b.Node("Sub", {"x", "mean"}, {"d"});
  if (pow) b.Node("Pow", {"d", "two"}, {"sq"});
  else b.Node("Mul", {"d", "d"}, {"sq"});
  reduce("sq", "var");
  b.Node("Add", {"eps", "var"}, {"ve"});
  b.Node("Sqrt", {"ve"}, {"sd"});
  b.Node("Div", {"d", "sd"}, {affine ? "n" : "y"});
  if (affine) {
    b.Node("Mul", {"gamma", "n"}, {"m"});
    b.Node("Add", {"m", "beta"}, {"y"});
  }
  return LoadBuilt(b);
}

TEST(OptLayerNorm, FusesPrimitiveForms) {
  for (int64_t opset : {13, 17, 18})
    for (bool pow : {true, false})
      for (bool affine : {true, false}) {
        Model m = PrimitiveLayerNorm(opset, pow, affine, {-1});
        auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 5, 8}, 3, -3, 3)}}, 2, 1e-5f, 1e-4f);
        ASSERT_EQ(o.model.graph.nodes.size(), 1u) << opset << pow << affine;
        const Node& n = o.model.graph.nodes[0];
        EXPECT_EQ(n.op_type, "LayerNormalization");
        EXPECT_EQ(n.FindAttribute("axis")->i, -1);
        EXPECT_NEAR(n.FindAttribute("epsilon")->f, 1e-5f, 1e-12);
        EXPECT_EQ(n.inputs.size(), affine ? 3u : 2u);
        EXPECT_GE(o.model.opsets.at(""), 17);
      }
}

TEST(OptLayerNorm, TwoTrailingAxes) {
  Model m = PrimitiveLayerNorm(17, true, false, {1, 2});
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 5, 8}, 4)}});
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(o.model.graph.nodes[0].FindAttribute("axis")->i, -2);
}

TEST(OptLayerNorm, LeavesNonTrailingAxesAndOldOpsets) {
  Model m = PrimitiveLayerNorm(17, true, true, {1});  // normalizes the middle axis
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 5, 8}, 5)}});
  EXPECT_EQ(CountOp(o.model, "LayerNormalization"), 0);
  Model old = PrimitiveLayerNorm(11, true, true, {-1});  // opset 11 is not raised
  auto o2 = OptimizeAndCompare(old, {{"x", RandomTensor({2, 5, 8}, 6)}});
  EXPECT_EQ(CountOp(o2.model, "LayerNormalization"), 0);
  EXPECT_EQ(o2.model.opsets.at(""), 11);
}

enum class GeluShape { kMulXThenHalf, kHalfXThenMul, kHalfAThenMulX };

Model ErfGelu(bool div, GeluShape shape) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3, 7}).Output("y", DataType::kFloat, {3, 7});
  b.Initializer("c", ScalarF(div ? 1.4142135f : 0.70710678f)).Initializer("one", ScalarF(1.f));
  b.Initializer("half", ScalarF(0.5f));
  b.Node(div ? "Div" : "Mul", {"x", "c"}, {"u"});
  b.Node("Erf", {"u"}, {"e"});
  b.Node("Add", {"one", "e"}, {"a"});
  switch (shape) {
    case GeluShape::kMulXThenHalf:
      b.Node("Mul", {"x", "a"}, {"m"});
      b.Node("Mul", {"m", "half"}, {"y"});
      break;
    case GeluShape::kHalfXThenMul:
      b.Node("Mul", {"half", "x"}, {"h"});
      b.Node("Mul", {"a", "h"}, {"y"});
      break;
    case GeluShape::kHalfAThenMulX:
      b.Node("Mul", {"a", "half"}, {"h"});
      b.Node("Mul", {"x", "h"}, {"y"});
      break;
  }
  return LoadBuilt(b);
}

TEST(OptGelu, ErfFormsInEveryGrouping) {
  for (bool div : {true, false})
    for (GeluShape s : {GeluShape::kMulXThenHalf, GeluShape::kHalfXThenMul, GeluShape::kHalfAThenMulX}) {
      auto o = OptimizeAndCompare(ErfGelu(div, s), {{"x", RandomTensor({3, 7}, 7, -4, 4)}});
      ASSERT_EQ(o.model.graph.nodes.size(), 1u) << div << static_cast<int>(s);
      const Node& n = o.model.graph.nodes[0];
      EXPECT_EQ(n.op_type, "Gelu");
      EXPECT_EQ(n.domain, "com.inferloop");
      EXPECT_EQ(n.FindAttribute("approximate")->s, "none");
    }
}

TEST(OptGelu, TanhForms) {
  for (bool pow : {true, false}) {
    ModelBuilder b;
    b.Input("x", DataType::kFloat, {3, 7}).Output("y", DataType::kFloat, {3, 7});
    b.Initializer("three", ScalarF(3.f)).Initializer("k", ScalarF(0.044715f));
    b.Initializer("s", ScalarF(0.7978845608f)).Initializer("one", ScalarF(1.f)).Initializer("half", ScalarF(0.5f));
    if (pow) {
      b.Node("Pow", {"x", "three"}, {"cube"});
    } else {
      b.Node("Mul", {"x", "x"}, {"sq"});
      b.Node("Mul", {"sq", "x"}, {"cube"});
    }
    b.Node("Mul", {"k", "cube"}, {"kc"});
    b.Node("Add", {"x", "kc"}, {"inner"});
    b.Node("Mul", {"inner", "s"}, {"arg"});
    b.Node("Tanh", {"arg"}, {"t"});
    b.Node("Add", {"t", "one"}, {"a"});
    b.Node("Mul", {"x", "a"}, {"m"});
    b.Node("Mul", {"m", "half"}, {"y"});
    auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({3, 7}, 8, -4, 4)}});
    ASSERT_EQ(o.model.graph.nodes.size(), 1u) << pow;
    EXPECT_EQ(o.model.graph.nodes[0].FindAttribute("approximate")->s, "tanh");
  }
}

// The body of ONNX's Gelu function: constants through CastLike, 1 + erf as a Sum.
TEST(OptGelu, OnnxFunctionBodyForm) {
  ModelBuilder b(20);
  b.Input("x", DataType::kFloat, {3, 7}).Output("y", DataType::kFloat, {3, 7});
  b.Initializer("half", ScalarF(0.5f)).Initializer("one", ScalarF(1.f)).Initializer("two", ScalarF(2.f));
  b.Node("CastLike", {"half", "x"}, {"half_c"});
  b.Node("CastLike", {"one", "x"}, {"one_c"});
  b.Node("CastLike", {"two", "x"}, {"two_c"});
  b.Node("Sqrt", {"two_c"}, {"sqrt2"});
  b.Node("Div", {"x", "sqrt2"}, {"u"});
  b.Node("Erf", {"u"}, {"e"});
  b.Node("Sum", {"one_c", "e"}, {"phi"});
  b.Node("Mul", {"half_c", "x"}, {"hx"});
  b.Node("Mul", {"hx", "phi"}, {"y"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({3, 7}, 13, -4, 4)}});
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(o.model.graph.nodes[0].op_type, "Gelu");
}

TEST(OptGelu, WrongConstantOrExtraReaderBlocks) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {4}).Output("y", DataType::kFloat, {4}).Output("e", DataType::kFloat, {4});
  b.Initializer("c", ScalarF(2.f)).Initializer("one", ScalarF(1.f)).Initializer("half", ScalarF(0.5f));
  b.Node("Div", {"x", "c"}, {"u"});  // not sqrt(2)
  b.Node("Erf", {"u"}, {"e"});
  b.Node("Add", {"e", "one"}, {"a"});
  b.Node("Mul", {"x", "a"}, {"m"});
  b.Node("Mul", {"m", "half"}, {"y"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({4}, 9)}});
  EXPECT_EQ(CountOp(o.model, "Gelu"), 0);
  EXPECT_EQ(CountOp(o.model, "Erf"), 1);
}

TEST(OptGelu, FollowsMatMulIntoFusedMatMul) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3, 6}).Output("y", DataType::kFloat, {2, 3, 5});
  b.Initializer("w", RandomTensor({6, 5}, 10)).Initializer("bias", RandomTensor({5}, 11));
  b.Initializer("c", ScalarF(1.4142135f)).Initializer("one", ScalarF(1.f)).Initializer("half", ScalarF(0.5f));
  b.Node("MatMul", {"x", "w"}, {"mm"});
  b.Node("Add", {"bias", "mm"}, {"h"});
  b.Node("Div", {"h", "c"}, {"u"});
  b.Node("Erf", {"u"}, {"e"});
  b.Node("Add", {"e", "one"}, {"a"});
  b.Node("Mul", {"h", "a"}, {"m"});
  b.Node("Mul", {"m", "half"}, {"y"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 3, 6}, 12)}});
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(o.model.graph.nodes[0].op_type, "FusedMatMul");
  EXPECT_EQ(o.model.graph.nodes[0].FindAttribute("activation")->s, "Gelu");
}

}  // namespace
}  // namespace inferloop::testing
