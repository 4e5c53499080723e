// OptimizeModel (levels, report, invalid graphs) and its use by Session.
#include "compute/kernel_registry.h"
#include "base/npy.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

const std::string kTinyCnn = std::string(INFERLOOP_SOURCE_DIR) + "/examples/model_repository/tiny_cnn/1/model.onnx";

TEST(OptPipeline, LevelsOnTinyCnn) {
  auto m = LoadModelFromFile(kTinyCnn);
  ASSERT_TRUE(m.ok());
  auto image = ReadNpyFile(std::string(INFERLOOP_SOURCE_DIR) + "/examples/data/tiny_cnn/image.npy");
  ASSERT_TRUE(image.ok());
  auto l0 = OptimizeAndCompare(*m, {{"image", *image}}, 0);
  EXPECT_EQ(l0.report.nodes_after, l0.report.nodes_before);
  auto l2 = OptimizeAndCompare(*m, {{"image", *image}}, 2, 1e-5f, 1e-4f);
  EXPECT_EQ(l2.report.nodes_before, 10);
  // Conv+BN+Relu and Conv+Relu become FusedConvs; Gemm stays (Softmax is no activation). The
  // second conv (16 channels) and the pool after it run channel-blocked, with one reorder back.
  EXPECT_EQ(l2.report.ops_before.at("BatchNormalization"), 1);
  EXPECT_EQ(l2.report.ops_after.count("BatchNormalization"), 0u);
  EXPECT_EQ(l2.report.ops_after.at("com.inferloop:FusedConv"), 2);
  EXPECT_EQ(l2.report.ops_after.at("com.inferloop:ReorderFromNchwc"), 1);
  EXPECT_EQ(l2.report.nodes_after, 8);
  EXPECT_EQ(l2.report.rewrites.at("ConvBatchNormFolding"), 1);
  EXPECT_EQ(l2.report.rewrites.at("ActivationFusion"), 2);
  const std::string table = FormatOptimizeReport(l2.report);
  EXPECT_NE(table.find("total"), std::string::npos);
  EXPECT_NE(table.find("com.inferloop:FusedConv"), std::string::npos);
}

TEST(OptPipeline, InvalidGraphsAreLeftAlone) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("Identity", {"x"}, {"a"});
  b.Node("Add", {"a", "c"}, {"b"});  // c is produced below from b: a cycle
  b.Node("Relu", {"b"}, {"c"});
  b.Node("Identity", {"c"}, {"y"});
  Model m = LoadBuilt(b);
  auto r = OptimizeModel(m);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->skipped);
  EXPECT_EQ(m.graph.nodes.size(), 4u);
  auto bytes = SerializeModel(m);
  ASSERT_TRUE(bytes.ok());
  auto s = Session::CreateFromBytes(bytes->data(), bytes->size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cycle"), std::string::npos) << s.status().message();
}

TEST(OptPipeline, SessionOptimizesByDefaultWithSameOutputs) {
  auto image = ReadNpyFile(std::string(INFERLOOP_SOURCE_DIR) + "/examples/data/tiny_cnn/image.npy");
  ASSERT_TRUE(image.ok());
  std::vector<Tensor> outs[3];
  for (int level : {0, 1, 2}) {
    SessionOptions so;
    so.optimization_level = level;
    auto s = Session::CreateFromFile(kTinyCnn, so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ((*s)->inputs().size(), 1u);
    auto r = (*s)->Run({{"image", *image}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    outs[level].push_back((*r)[0].second.tensor());
  }
  ExpectAllClose(outs[1][0], outs[0][0], 1e-6f, 1e-5f);
  ExpectAllClose(outs[2][0], outs[0][0], 1e-5f, 1e-4f);
  auto expected = ReadNpyFile(std::string(INFERLOOP_SOURCE_DIR) + "/examples/data/tiny_cnn/expected_probs.npy");
  ASSERT_TRUE(expected.ok());
  ExpectAllClose(outs[2][0], *expected, 1e-5f, 1e-3f);
}

TEST(OptPipeline, FusionsNeedKernels) {
  // A registry without the fused ops: nothing may be rewritten into them.
  KernelRegistry bare;
  RegisterNnKernels(bare);
  ModelBuilder b(14);
  b.Input("x", DataType::kFloat, {1, 3, 8, 8}).Output("y", DataType::kFloat, {1, 4, 8, 8});
  b.Initializer("w", RandomTensor({4, 3, 3, 3}, 1));
  IntsAttr(b.Node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"y"});
  Model m = LoadBuilt(b);
  OptimizeOptions opts;
  opts.registry = &bare;
  auto r = OptimizeModel(m, opts);
  ASSERT_TRUE(r.ok());
  // RegisterNnKernels registers FusedConv alongside Conv when the oneDNN kernels exist.
  const bool has = bare.Find("com.inferloop", "FusedConv", 1) != nullptr;
  EXPECT_EQ(CountOp(m, "FusedConv"), has ? 1 : 0);
  KernelRegistry none;
  Model m2 = LoadBuilt(b);
  opts.registry = &none;
  r = OptimizeModel(m2, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(CountOp(m2, "FusedConv"), 0);
  EXPECT_EQ(m2.graph.nodes.size(), 2u);
}

}  // namespace
}  // namespace inferloop::testing
