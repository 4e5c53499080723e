// ConvBatchNormFolding on small graphs.
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

// Conv (with the given attributes) followed by BatchNormalization; weights random.
Model ConvBn(int64_t group, bool bias, const std::vector<int64_t>& dilations, const std::vector<int64_t>& strides) {
  const int64_t C = 4, M = 6;
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, C, 9, 9}).Output("y", DataType::kFloat, {});
  b.Initializer("w", RandomTensor({M, C / group, 3, 3}, 11));
  if (bias) b.Initializer("b", RandomTensor({M}, 12));
  b.Initializer("scale", RandomTensor({M}, 13, 0.5f, 1.5f));
  b.Initializer("shift", RandomTensor({M}, 14));
  b.Initializer("mean", RandomTensor({M}, 15));
  b.Initializer("var", RandomTensor({M}, 16, 0.1f, 2.f));
  auto& conv = b.Node("Conv", bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"c"});
  ModelBuilder::IntAttr(conv, "group", group);
  IntsAttr(conv, "dilations", dilations);
  IntsAttr(conv, "strides", strides);
  IntsAttr(conv, "pads", {1, 1, 1, 1});
  FloatAttr(b.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}), "epsilon", 1e-3f);
  b.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return LoadBuilt(b);
}

TEST(OptConvBn, FoldsIntoConvWeights) {
  for (int64_t group : {1, 2})
    for (bool bias : {true, false}) {
      Model m = ConvBn(group, bias, {2, 2}, {1, 2});
      auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 4, 9, 9}, 17)}}, 2, 1e-4f, 1e-4f);
      EXPECT_EQ(CountOp(o.model, "BatchNormalization"), 0) << group << bias;
      ASSERT_EQ(o.model.graph.nodes.size(), 1u);
      const Node& n = o.model.graph.nodes[0];
      EXPECT_EQ(n.FindAttribute("group")->i, group);
      EXPECT_EQ(n.FindAttribute("dilations")->ints, (std::vector<int64_t>{2, 2}));
      EXPECT_EQ(n.FindAttribute("strides")->ints, (std::vector<int64_t>{1, 2}));
      EXPECT_EQ(n.inputs.size(), 3u);
    }
}

TEST(OptConvBn, NeedsConstantStatisticsAndASingleReader) {
  Model m = ConvBn(1, true, {1, 1}, {1, 1});
  // mean becomes a graph input: not constant.
  GraphValue mean_in;
  mean_in.name = "mean";
  mean_in.type.kind = TypeInfo::Kind::kTensor;
  mean_in.type.elem_type = DataType::kFloat;
  Model a = m;
  a.graph.inputs.push_back(mean_in);
  auto r = OptimizeModel(a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(CountOp(a, "BatchNormalization"), 1);
  // The conv output also feeds a second output.
  Model b = m;
  GraphValue extra;
  extra.name = "c";
  b.graph.outputs.push_back(extra);
  r = OptimizeModel(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(CountOp(b, "BatchNormalization"), 1);
}

}  // namespace
}  // namespace inferloop::testing
