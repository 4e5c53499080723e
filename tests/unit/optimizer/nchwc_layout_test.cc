// NchwcLayout: 2-D convolution chains become channel-blocked (NCHW16c or NCHW8c, both run here
// whatever the CPU) FusedConv / pools with one reorder back to NCHW where a plain reader needs
// it; results equal the plain graph's, and the memory planner sizes every blocked value (shape
// inference knows the layout).
#include <gtest/gtest.h>

#include "compute/kernels/dnnl_kernels.h"
#include "compute/simd/cpu_isa.h"
#include "graph/channel_block.h"
#include "optimizer/graph_editor.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

// Nodes other than the reorders with attribute layout = `layout`.
int CountLayout(const Model& m, const std::string& layout) {
  int n = 0;
  for (const auto& node : m.graph.nodes) {
    if (node.op_type == "ReorderToNchwc" || node.op_type == "ReorderFromNchwc") continue;
    if (const Attribute* a = node.FindAttribute("layout"); a && a->s == layout) ++n;
  }
  return n;
}

constexpr int64_t kBlocks[] = {16, 8};

int UnplannedValues(const Model& m, const std::map<std::string, Shape>& shapes) {
  auto bytes = SerializeModel(m);
  EXPECT_TRUE(bytes.ok());
  SessionOptions so;
  so.optimization_level = 0;
  auto s = Session::CreateFromBytes(bytes->data(), bytes->size(), so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  auto plan = (*s)->PlanMemory(shapes);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? plan->unplanned_values : -1;
}

TEST(OptNchwcLayout, ConvChainStaysBlockedUntilAPlainReader) {
  for (const int64_t block : kBlocks) {
  SCOPED_TRACE("block " + std::to_string(block));
  const std::string layout = ChannelBlockedLayoutName(block);
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {2, 3, 12, 12}).Output("y", DataType::kFloat, {2, 10});
  b.Initializer("w1", RandomTensor({32, 3, 3, 3}, 1, -0.3f, 0.3f));
  b.Initializer("b1", RandomTensor({32}, 2));
  b.Initializer("w2", RandomTensor({32, 32, 3, 3}, 3, -0.1f, 0.1f));
  b.Initializer("w3", RandomTensor({48, 32, 1, 1}, 4, -0.2f, 0.2f));
  b.Initializer("fc", RandomTensor({48, 10}, 5));
  IntsAttr(b.Node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"});
  auto& pool = b.Node("MaxPool", {"r1"}, {"p1"});
  IntsAttr(pool, "kernel_shape", {2, 2});
  IntsAttr(pool, "strides", {2, 2});
  IntsAttr(b.Node("Conv", {"p1", "w2"}, {"c2"}), "pads", {1, 1, 1, 1});
  b.Node("Add", {"c2", "p1"}, {"s2"});  // residual: becomes FusedConv's Z, blocked already
  b.Node("Mul", {"s2", "s2"}, {"r2"});  // elementwise on two blocked operands
  b.Node("Conv", {"r2", "w3"}, {"c3"});
  b.Node("GlobalAveragePool", {"c3"}, {"g"});
  b.Node("Flatten", {"g"}, {"f"});
  b.Node("MatMul", {"f", "fc"}, {"y"});
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 3, 12, 12}, 6)}}, 2, 1e-5f, 1e-4f, block);
  EXPECT_EQ(o.report.rewrites["NchwcLayout"], 6);  // 3 convs, MaxPool, Mul, GlobalAveragePool
  EXPECT_EQ(CountLayout(o.model, layout), 5);  // all but Mul
  EXPECT_EQ(CountOp(o.model, "ReorderFromNchwc"), 1);  // before Flatten
  EXPECT_EQ(CountOp(o.model, "ReorderToNchwc"), 0);    // the first conv reads plain x itself
  const Node* back = FindOp(o.model, "ReorderFromNchwc");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(AttrInt(*back, "channels", -1), 48);
  EXPECT_EQ(NodeChannelBlock(*back), block);
  EXPECT_EQ(UnplannedValues(o.model, {{"x", {2, 3, 12, 12}}}), 0);
  }
}

TEST(OptNchwcLayout, PlainResidualGetsReorderedAndGraphOutputsComeBackPlain) {
  for (const int64_t block : kBlocks) {
  SCOPED_TRACE("block " + std::to_string(block));
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {1, 16, 8, 8}).Output("y", DataType::kFloat, {1, 16, 8, 8});
  b.Initializer("w1", RandomTensor({16, 16, 3, 3}, 11, -0.2f, 0.2f));
  b.Initializer("w2", RandomTensor({16, 16, 3, 3}, 12, -0.2f, 0.2f));
  IntsAttr(b.Node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"});
  IntsAttr(b.Node("Conv", {"r1", "w2"}, {"c2"}), "pads", {1, 1, 1, 1});
  b.Node("Add", {"c2", "x"}, {"y"});  // Z = x, a plain graph input; y a graph output
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({1, 16, 8, 8}, 13)}}, 2, 1e-5f, 1e-4f, block);
  EXPECT_EQ(CountLayout(o.model, ChannelBlockedLayoutName(block)), 2);
  EXPECT_EQ(CountOp(o.model, "ReorderToNchwc"), 1);
  const Node* to = FindOp(o.model, "ReorderToNchwc");
  ASSERT_NE(to, nullptr);
  EXPECT_EQ(NodeChannelBlock(*to), block);
  EXPECT_EQ(CountOp(o.model, "ReorderFromNchwc"), 1);
  ASSERT_FALSE(o.model.graph.nodes.empty());
  EXPECT_EQ(o.model.graph.nodes.back().op_type, "ReorderFromNchwc");
  EXPECT_EQ(o.model.graph.nodes.back().outputs[0], "y");
  EXPECT_EQ(UnplannedValues(o.model, {{"x", {1, 16, 8, 8}}}), 0);
  }
}

// The block follows the ISA the tensor kernels use: 16 with AVX-512, 8 on AVX2 (whose oneDNN
// convolutions take 8-channel blocks only).
TEST(OptNchwcLayout, PreferredBlockFollowsTheKernelsIsa) {
  EXPECT_EQ(dnnl_kernels::PreferredChannelBlock(), simd::ActiveIsa() >= simd::Isa::kAvx512 ? 16 : 8);
  const simd::Isa before = simd::SetActiveIsa(simd::Isa::kAvx2);
  EXPECT_EQ(dnnl_kernels::PreferredChannelBlock(), 8);
  simd::SetActiveIsa(before);
}

// With block 8 a chain of 8-channel convolutions is blocked (no padding: at block 16 it stays
// plain, below); a conv only plain readers take stays plain.
TEST(OptNchwcLayout, Block8TakesEightChannelConvolutions) {
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {1, 8, 6, 6}).Input("u", DataType::kFloat, {1, 16, 6, 6});
  b.Output("y", DataType::kFloat, {}).Output("t", DataType::kFloat, {});
  b.Initializer("w8", RandomTensor({8, 8, 3, 3}, 21, -0.2f, 0.2f));
  b.Initializer("w8b", RandomTensor({8, 8, 1, 1}, 22, -0.2f, 0.2f));
  b.Initializer("w16", RandomTensor({16, 16, 1, 1}, 23, -0.2f, 0.2f));
  IntsAttr(b.Node("Conv", {"x", "w8"}, {"c8"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c8"}, {"r8"});
  b.Node("Conv", {"r8", "w8b"}, {"c9"});
  b.Node("Flatten", {"c9"}, {"y"});
  b.Node("Conv", {"u", "w16"}, {"c16"});
  b.Node("Flatten", {"c16"}, {"t"});
  const std::vector<NamedValue> in = {{"x", RandomTensor({1, 8, 6, 6}, 24)}, {"u", RandomTensor({1, 16, 6, 6}, 26)}};
  auto o = OptimizeAndCompare(LoadBuilt(b), in, 2, 1e-5f, 1e-4f, 8);
  EXPECT_EQ(o.report.rewrites["NchwcLayout"], 2);  // both 8-channel convs (the Relu is fused)
  EXPECT_EQ(CountLayout(o.model, "NCHW8c"), 2);
  EXPECT_EQ(CountOp(o.model, "ReorderFromNchwc"), 1);  // before the Flatten
  auto o16 = OptimizeAndCompare(LoadBuilt(b), in, 2, 1e-5f, 1e-4f, 16);
  EXPECT_EQ(o16.report.rewrites["NchwcLayout"], 0);
}

// Few channels (8 pads to 16: twice the work) and 3-D convolutions stay NCHW (measured slower
// blocked, see nchwc_layout.cc); so does a conv whose output only plain readers take.
TEST(OptNchwcLayout, SmallChannelCounts3DAndPlainReadersStayPlain) {
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {1, 8, 6, 6}).Input("v", DataType::kFloat, {1, 16, 4, 4, 4});
  b.Input("u", DataType::kFloat, {1, 16, 6, 6});
  b.Output("y", DataType::kFloat, {}).Output("z", DataType::kFloat, {}).Output("t", DataType::kFloat, {});
  b.Initializer("w8", RandomTensor({8, 8, 3, 3}, 21, -0.2f, 0.2f));
  b.Initializer("w3d", RandomTensor({16, 16, 3, 3, 3}, 22, -0.2f, 0.2f));
  b.Initializer("w16", RandomTensor({16, 16, 1, 1}, 23, -0.2f, 0.2f));
  IntsAttr(b.Node("Conv", {"x", "w8"}, {"c8"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c8"}, {"y"});
  IntsAttr(b.Node("Conv", {"v", "w3d"}, {"c3"}), "pads", {1, 1, 1, 1, 1, 1});
  b.Node("Relu", {"c3"}, {"z"});
  b.Node("Conv", {"u", "w16"}, {"c16"});
  b.Node("Flatten", {"c16"}, {"t"});
  auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({1, 8, 6, 6}, 24)},
                                             {"v", RandomTensor({1, 16, 4, 4, 4}, 25)},
                                             {"u", RandomTensor({1, 16, 6, 6}, 26)}}, 2, 1e-5f, 1e-4f, 16);
  EXPECT_EQ(o.report.rewrites["NchwcLayout"], 0);
  EXPECT_EQ(CountLayout(o.model, "NCHW16c"), 0);
  EXPECT_EQ(CountOp(o.model, "ReorderFromNchwc"), 0);
}

}  // namespace
}  // namespace inferloop::testing
