// ConstantFolding and DeadNodeElimination / IdentityElimination on small graphs.
#include "optimizer/passes.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

Result<int> ApplyPass(GraphPass& p, Model& m, size_t growth = size_t{1} << 20) {
  PassContext ctx;
  ctx.max_folding_growth_bytes = growth;
  return p.Apply(m, ctx);
}

TEST(OptConstantFolding, FoldsTransposedWeightIntoInitializer) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3}).Output("y", DataType::kFloat, {2, 4});
  b.Initializer("w", RandomTensor({4, 3}, 1));
  IntsAttr(b.Node("Transpose", {"w"}, {"wt"}), "perm", {1, 0});
  b.Node("MatMul", {"x", "wt"}, {"y"});
  Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 3}, 2)}}, 1);
  EXPECT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(CountOp(o.model, "Transpose"), 0);
  EXPECT_EQ(o.model.graph.initializers.size(), 1u);  // the unfolded weight is gone
  EXPECT_GE(o.report.rewrites.at("ConstantFolding"), 1);
}

TEST(OptConstantFolding, ConstantNodesAndChainsFold) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {4}).Output("y", DataType::kFloat, {4});
  auto& c = b.Node("Constant", {}, {"c"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnxpb::AttributeProto::TENSOR);
  TensorToProto(FloatTensor({4}, {1, 2, 3, 4}), a->mutable_t());
  b.Node("Sqrt", {"c"}, {"s"});
  b.Node("Mul", {"s", "s"}, {"s2"});
  b.Node("Add", {"x", "s2"}, {"y"});
  Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({4}, 3)}}, 1);
  ASSERT_EQ(o.model.graph.nodes.size(), 1u);
  EXPECT_EQ(o.model.graph.nodes[0].op_type, "Add");
}

TEST(OptConstantFolding, ShapeOfStaticValueFoldsButNotOfSymbolic) {
  for (bool fixed : {true, false}) {
    ModelBuilder b;
    b.Input("x", DataType::kFloat, {fixed ? 2 : -1, 6}, {"batch"}).Output("y", DataType::kFloat, {-1, 3, 2});
    b.Node("Shape", {"x"}, {"s"});
    b.Initializer("idx", Int64Tensor({1}, {0}));
    b.Node("Gather", {"s", "idx"}, {"b"});
    b.Initializer("rest", Int64Tensor({2}, {3, 2}));
    ModelBuilder::IntAttr(b.Node("Concat", {"b", "rest"}, {"shape"}), "axis", 0);
    b.Node("Reshape", {"x", "shape"}, {"y"});
    Model m = LoadBuilt(b);
    auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 6}, 4)}}, 1);
    EXPECT_EQ(o.model.graph.nodes.size(), fixed ? 1u : 4u) << (fixed ? "fixed" : "symbolic");
  }
}

TEST(OptConstantFolding, GrowthCapKeepsBigResultsUnfolded) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {512, 512}).Output("y", DataType::kFloat, {512, 512});
  b.Initializer("shape", Int64Tensor({2}, {512, 512}));
  b.Node("ConstantOfShape", {"shape"}, {"ones"});
  b.Node("Add", {"x", "ones"}, {"y"});
  Model m = LoadBuilt(b);
  auto pass = MakeConstantFoldingPass();
  Model capped = m;
  auto r = ApplyPass(*pass, capped, 1024);  // 1 MiB result > 16 bytes + 1 KiB
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(capped.graph.nodes.size(), 2u);
  Model roomy = m;
  r = ApplyPass(*pass, roomy, size_t{4} << 20);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 1);
  EXPECT_EQ(roomy.graph.nodes.size(), 1u);
}

TEST(OptConstantFolding, LeavesRandomOpsOverridableInitializersAndGraphOutputs) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3}).Input("w", DataType::kFloat, {3});
  b.Output("y", DataType::kFloat, {3}).Output("k", DataType::kFloat, {3}).Output("r", DataType::kFloat, {3});
  b.Initializer("w", FloatTensor({3}, {1, 2, 3}));  // also a graph input: callers may override it
  b.Initializer("c", FloatTensor({3}, {4, 5, 6}));
  b.Node("Neg", {"w"}, {"nw"});
  b.Node("Add", {"x", "nw"}, {"y"});
  b.Node("Neg", {"c"}, {"k"});  // writes a graph output
  b.Node("RandomNormalLike", {"c"}, {"r"});
  Model m = LoadBuilt(b);
  auto pass = MakeConstantFoldingPass();
  auto r = ApplyPass(*pass, m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(m.graph.nodes.size(), 4u);
}

TEST(OptConstantFolding, KernelErrorsStayForRunTime) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {-1});
  b.Initializer("a", FloatTensor({2}, {1, 2}));
  b.Initializer("bad", Int64Tensor({1}, {5}));
  b.Node("Reshape", {"a", "bad"}, {"r"});  // 2 elements into [5]: fails
  b.Node("Add", {"x", "r"}, {"y"});
  Model m = LoadBuilt(b);
  auto pass = MakeConstantFoldingPass();
  auto r = ApplyPass(*pass, m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0);
}

TEST(OptDeadNodes, RemovesUnreadChainsAndInitializers) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3}).Output("y", DataType::kFloat, {3});
  b.Initializer("unused", FloatTensor({1}, {1}));
  b.Initializer("c", FloatTensor({3}, {1, 2, 3}));
  b.Node("Relu", {"x"}, {"y"});
  b.Node("Mul", {"x", "c"}, {"d1"});
  b.Node("Exp", {"d1"}, {"d2"});
  Model m = LoadBuilt(b);
  auto pass = MakeDeadNodeEliminationPass();
  auto r = ApplyPass(*pass, m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);  // two nodes, two initializers
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_TRUE(m.graph.initializers.empty());
}

TEST(OptIdentity, RemovesIdentitiesAndKeepsOutputNames) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3}).Output("y", DataType::kFloat, {3}).Output("z", DataType::kFloat, {3});
  b.Node("Identity", {"x"}, {"i1"});
  b.Node("Relu", {"i1"}, {"r"});
  b.Node("Identity", {"r"}, {"y"});      // graph output: Relu is renamed to write "y"
  b.Node("Dropout", {"r"}, {"d"});       // inference dropout
  b.Node("Identity", {"d"}, {"z"});
  Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({3}, 5)}}, 1);
  // y and z end up the same value: one Identity must stay to give it both output names.
  EXPECT_EQ(CountOp(o.model, "Identity"), 1);
  EXPECT_EQ(o.model.graph.nodes.size(), 2u);
  EXPECT_EQ(CountOp(o.model, "Dropout"), 0);
  EXPECT_EQ(o.model.graph.outputs[0].name, "y");
  EXPECT_EQ(o.model.graph.outputs[1].name, "z");
}

TEST(OptIdentity, KeepsIdentityFromGraphInputToOutputAndDropoutWithMask) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3}).Output("y", DataType::kFloat, {3}).Output("m", DataType::kBool, {3});
  b.Output("d", DataType::kFloat, {3});
  b.Node("Identity", {"x"}, {"y"});
  b.Node("Dropout", {"x"}, {"d", "m"});
  Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({3}, 6)}}, 1);
  EXPECT_EQ(o.model.graph.nodes.size(), 2u);
}

TEST(OptIdentity, LeavesValuesReadBySubgraphs) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3}).Input("c", DataType::kBool, {}).Output("y", DataType::kFloat, {3});
  b.Node("Identity", {"x"}, {"i"});
  auto& iff = b.Node("If", {"c"}, {"y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = iff.add_attribute();
    a->set_name(branch);
    a->set_type(onnxpb::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(branch);
    auto* n = g->add_node();
    n->set_op_type(std::string(branch) == "then_branch" ? "Relu" : "Neg");
    n->add_input("i");  // read from the outer graph by name
    n->add_output("o");
    auto* out = g->add_output();
    out->set_name("o");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  }
  Model m = LoadBuilt(b);
  Tensor cond = Tensor::FromVector<uint8_t>(DataType::kBool, {}, {1});
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({3}, 7)}, {"c", cond}}, 2);
  EXPECT_EQ(CountOp(o.model, "Identity"), 1);
}

}  // namespace
}  // namespace inferloop::testing
