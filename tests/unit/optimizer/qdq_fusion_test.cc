// QdqFusion / Int8NhwcLayout (src/optimizer/qdq_fusion.cc): QDQ patterns become int8 ops whose
// outputs stay within one quantization step of the unfused graph's (run with optimization off:
// the reference QuantizeLinear / DequantizeLinear and float kernels); patterns outside the rules
// are left alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "graph/shape_inference.h"
#include "optimizer/graph_editor.h"
#include "tools/dynamic_quant.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

void IntAttr(onnxpb::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::INT);
  a->set_i(v);
}

Tensor U8(uint8_t v) { return Tensor::FromVector(DataType::kUInt8, {}, std::vector<uint8_t>{v}); }

// Adds x -> Q -> DQ named `out` (scale s, zero point z) to the builder.
void Qdq(ModelBuilder& b, const std::string& x, const std::string& out, float s, uint8_t z) {
  b.Initializer(out + "_s", ScalarF(s));
  b.Initializer(out + "_z", U8(z));
  b.Node("QuantizeLinear", {x, out + "_s", out + "_z"}, {out + "_q"});
  b.Node("DequantizeLinear", {out + "_q", out + "_s", out + "_z"}, {out});
}

// An int8 weight [rows, ...] with per-row scales (axis 0) through a DQ named `out`.
void Weight(ModelBuilder& b, const std::string& out, const Shape& shape, int8_t zp = 0, int64_t axis = 0) {
  std::vector<int8_t> w(static_cast<size_t>(ShapeElementCount(shape)));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>((i * 37) % 255) - 127);
  const int64_t ch = shape[axis];
  std::vector<float> s(static_cast<size_t>(ch));
  for (int64_t c = 0; c < ch; ++c) s[c] = 0.002f + 0.0005f * static_cast<float>(c % 7);
  b.Initializer(out + "_w", Tensor::FromVector(DataType::kInt8, shape, w));
  b.Initializer(out + "_s", Tensor::FromVector(DataType::kFloat, {ch}, s));
  b.Initializer(out + "_z", Tensor::FromVector(DataType::kInt8, {ch}, std::vector<int8_t>(static_cast<size_t>(ch), zp)));
  IntAttr(b.Node("DequantizeLinear", {out + "_w", out + "_s", out + "_z"}, {out}), "axis", axis);
}

TEST(OptQdqFusion, ConvReluBecomesOneQConvWithinOneStep) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {1, 4, 8, 8}).Output("y", DataType::kFloat, {1, 8, 8, 8});
  Qdq(b, "x", "xd", 0.02f, 128);
  Weight(b, "wd", {8, 4, 3, 3});
  IntsAttr(b.Node("Conv", {"xd", "wd"}, {"c"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"});
  Qdq(b, "r", "y", 0.05f, 0);
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 4, 8, 8}, 1)}}, 2, 0.05f * 1.001f, 0.f);
  EXPECT_EQ(CountOp(o.model, "QConv"), 1);
  EXPECT_EQ(CountOp(o.model, "Conv"), 0);
  EXPECT_EQ(CountOp(o.model, "Relu"), 0);
  const Node* q = FindOp(o.model, "QConv");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(AttrString(*q, "activation", ""), "Relu");
  EXPECT_EQ(q->inputs[0], "xd_q");  // reads the 8-bit tensor itself
}

// Conv -> Relu with a float output (no Q after: what `compare --sensitivity` writes when only
// that layer is quantized): the fused op takes the Relu's place and its readers keep working.
TEST(OptQdqFusion, ConvReluWithFloatOutputKeepsItsReaders) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {1, 4, 8, 8}).Output("y", DataType::kFloat, {1, 8, 4, 4});
  Qdq(b, "x", "xd", 0.02f, 128);
  Weight(b, "wd", {8, 4, 3, 3});
  IntsAttr(b.Node("Conv", {"xd", "wd"}, {"c"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"});
  auto& pool = b.Node("MaxPool", {"r"}, {"y"});
  IntsAttr(pool, "kernel_shape", {2, 2});
  IntsAttr(pool, "strides", {2, 2});
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 4, 8, 8}, 3)}}, 2, 1e-3f, 1e-3f);
  EXPECT_EQ(CountOp(o.model, "QConv"), 1);
  EXPECT_EQ(CountOp(o.model, "Relu"), 0);
}

TEST(OptQdqFusion, NonZeroWeightZeroPointIsLeftAlone) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {1, 4, 6, 6}).Output("y", DataType::kFloat, {1, 8, 4, 4});
  Qdq(b, "x", "xd", 0.02f, 128);
  Weight(b, "wd", {8, 4, 3, 3}, /*zp=*/3);
  b.Node("Conv", {"xd", "wd"}, {"c"});
  Qdq(b, "c", "y", 0.05f, 128);
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 4, 6, 6}, 2)}});
  EXPECT_EQ(CountOp(o.model, "QConv"), 0);
  EXPECT_EQ(CountOp(o.model, "Conv") + CountOp(o.model, "FusedConv"), 1);
}

TEST(OptQdqFusion, MatMulWithConstantWeightsFusesActivationMatMulDoesNot) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {2, 3, 16}).Input("k", DataType::kFloat, {2, 16, 5}).Output("y", DataType::kFloat, {2, 3, 5});
  Qdq(b, "x", "xd", 0.02f, 120);
  Qdq(b, "k", "kd", 0.02f, 128);
  Weight(b, "wd", {16, 16}, 0, /*axis=*/1);
  b.Node("MatMul", {"xd", "wd"}, {"m"});
  Qdq(b, "m", "md", 0.05f, 128);
  b.Node("MatMul", {"md", "kd"}, {"y"});  // two activations: stays float
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 3, 16}, 3)}, {"k", RandomTensor({2, 16, 5}, 4)}}, 2, 0.05f, 0.f);
  EXPECT_EQ(CountOp(o.model, "QMatMul"), 1);
  EXPECT_EQ(CountOp(o.model, "MatMul"), 1);
}

TEST(OptQdqFusion, DqQPairWithSameParametersCancelsAndTransposeRunsOn8Bits) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {2, 3, 4}).Output("y", DataType::kFloat, {4, 3, 2});
  Qdq(b, "x", "xd", 0.02f, 128);
  IntsAttr(b.Node("Transpose", {"xd"}, {"t"}), "perm", {2, 1, 0});
  b.Node("QuantizeLinear", {"t", "xd_s", "xd_z"}, {"tq"});
  b.Node("DequantizeLinear", {"tq", "xd_s", "xd_z"}, {"td"});
  b.Node("QuantizeLinear", {"td", "xd_s", "xd_z"}, {"tq2"});  // DQ -> Q, same parameters: cancels
  b.Node("DequantizeLinear", {"tq2", "xd_s", "xd_z"}, {"y"});
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({2, 3, 4}, 5)}});
  EXPECT_EQ(CountOp(o.model, "QuantizeLinear"), 1);    // the input's
  EXPECT_EQ(CountOp(o.model, "DequantizeLinear"), 1);  // the output's
  const Node* t = FindOp(o.model, "Transpose");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->inputs[0], "xd_q");
}

// x [1, C, H, W] -> QConv 3x3 (m channels) + Relu -> QConv 1x1 -> QAdd (residual) + Relu ->
// QMaxPool 2x2 -> QGlobalAveragePool -> y [1, m, 1, 1], every tensor between them QDQ.
Model ResidualBlock(const Shape& x, int64_t m) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, x).Output("y", DataType::kFloat, {1, m, 1, 1});
  Qdq(b, "x", "xd", 0.02f, 128);
  Weight(b, "w1", {m, x[1], 3, 3});
  IntsAttr(b.Node("Conv", {"xd", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"});
  Qdq(b, "r1", "r1d", 0.04f, 0);
  Weight(b, "w2", {m, m, 1, 1});
  b.Node("Conv", {"r1d", "w2"}, {"c2"});
  Qdq(b, "c2", "c2d", 0.04f, 128);
  b.Node("Add", {"c2d", "r1d"}, {"s"});
  b.Node("Relu", {"s"}, {"sr"});
  Qdq(b, "sr", "sd", 0.05f, 0);
  auto& pool = b.Node("MaxPool", {"sd"}, {"p"});
  IntsAttr(pool, "kernel_shape", {2, 2});
  IntsAttr(pool, "strides", {2, 2});
  Qdq(b, "p", "pd", 0.05f, 0);
  b.Node("GlobalAveragePool", {"pd"}, {"g"});
  Qdq(b, "g", "y", 0.01f, 0);
  return LoadBuilt(b);
}

TEST(OptQdqFusion, ResidualAddAndPoolsStayChannelsLastBetweenConvs) {
  const Model m = ResidualBlock({1, 8, 8, 8}, 8);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 8, 8, 8}, 6)}}, 2, 0.01f * 1.001f, 0.f);
  EXPECT_EQ(CountOp(o.model, "QConv"), 2);
  EXPECT_EQ(CountOp(o.model, "QAdd"), 1);
  EXPECT_EQ(CountOp(o.model, "QMaxPool"), 1);
  EXPECT_EQ(CountOp(o.model, "QGlobalAveragePool"), 1);
  EXPECT_EQ(CountOp(o.model, "Transpose"), 2);  // into the first conv, out of the pool
  EXPECT_EQ(o.report.rewrites["Int8NhwcLayout"], 5);
}

// The channels-last int8 ops' outputs have known shapes ([N, H, W, C]), so the memory plan
// places them in the arena: H != W != C catches a wrong permutation.
TEST(OptQdqFusion, ChannelsLastInt8OpsHaveInferredShapes) {
  const Model m = ResidualBlock({1, 8, 6, 10}, 12);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 8, 6, 10}, 7)}}, 2, 0.01f * 1.001f, 0.f);
  auto shapes = InferShapes(o.model);
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  std::map<std::string, std::vector<int64_t>> want = {
      {"QConv", {1, 6, 10, 12}}, {"QAdd", {1, 6, 10, 12}}, {"QMaxPool", {1, 3, 5, 12}}, {"QGlobalAveragePool", {1, 1, 1, 12}}};
  int checked = 0;
  for (const Node& n : o.model.graph.nodes) {
    auto it = want.find(n.op_type);
    if (it == want.end()) continue;
    const TypeInfo& t = shapes->types.at(n.outputs[0]);
    ASSERT_TRUE(t.has_shape) << n.op_type << " " << n.outputs[0];
    std::vector<int64_t> dims;
    for (const Dim& d : t.dims) dims.push_back(d.value);
    EXPECT_EQ(dims, it->second) << n.op_type << " " << n.outputs[0];
    EXPECT_EQ(t.elem_type, DataType::kUInt8) << n.op_type;
    ++checked;
  }
  EXPECT_EQ(checked, 5);  // two QConvs, QAdd, QMaxPool, QGlobalAveragePool
  EXPECT_EQ(shapes->unknown, 0);
}

TEST(OptQdqFusion, AveragePoolAndConcatRunOn8Bits) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {1, 4, 7, 7}).Input("z", DataType::kFloat, {1, 3, 7, 7}).Output("y", DataType::kFloat, {1, 7, 7, 7});
  Qdq(b, "x", "xd", 0.02f, 128);
  auto& pool = b.Node("AveragePool", {"xd"}, {"p"});
  IntsAttr(pool, "kernel_shape", {3, 3});
  IntsAttr(pool, "pads", {1, 1, 1, 1});
  Qdq(b, "p", "pd", 0.015f, 120);
  Qdq(b, "z", "zd", 0.03f, 100);
  IntAttr(b.Node("Concat", {"pd", "zd"}, {"c"}), "axis", 1);
  Qdq(b, "c", "y", 0.03f, 110);
  const Model m = LoadBuilt(b);
  auto o = OptimizeAndCompare(m, {{"x", RandomTensor({1, 4, 7, 7}, 7)}, {"z", RandomTensor({1, 3, 7, 7}, 8)}}, 2, 0.03f * 1.001f, 0.f);
  EXPECT_EQ(CountOp(o.model, "QAveragePool"), 1);
  EXPECT_EQ(CountOp(o.model, "QConcat"), 1);
  EXPECT_EQ(CountOp(o.model, "AveragePool") + CountOp(o.model, "Concat"), 0);
}

// Without VNNI, oneDNN's int8 kernels add pairs of u8 x s8 products in saturating int16. QConv and
// QMatMul keep them only for weights within +-64 (Int8ProductsExact), where no pair can saturate,
// and compute in float otherwise. Inputs at the top of the u8 range (255) against weights at the
// top of their range, all of one sign, are the worst case: with 7-bit weights (64) every pair sum
// is 32640, with full-range ones (127) 64770, which would saturate to 32767 and give about half the
// sum. Both must give the unfused graph's result with oneDNN capped to AVX2 (INFERLOOP_ISA=avx2,
// in a fresh process: oneDNN reads its ISA once). y = sum of 1.0 x 1.0 over K products.
Model AllOnesQdq(const std::string& op, int8_t w_int) {
  ModelBuilder b(17);
  const bool conv = op == "Conv";
  const Shape xs = conv ? Shape{1, 16, 6, 6} : Shape{4, 64}, ws = conv ? Shape{8, 16, 3, 3} : Shape{64, 8};
  const Shape ys = conv ? Shape{1, 8, 4, 4} : Shape{4, 8};
  b.Input("x", DataType::kFloat, xs).Output("y", DataType::kFloat, ys);
  Qdq(b, "x", "xd", 1.f / 255.f, 0);  // x = 1.0 quantizes to 255
  const int64_t ch = conv ? ws[0] : ws[1];
  b.Initializer("w_q", Tensor::FromVector(DataType::kInt8, ws, std::vector<int8_t>(ShapeElementCount(ws), w_int)));
  b.Initializer("w_s", Tensor::FromVector(DataType::kFloat, {ch}, std::vector<float>(ch, 1.f / w_int)));
  b.Initializer("w_z", Tensor::FromVector(DataType::kInt8, {ch}, std::vector<int8_t>(ch, 0)));
  IntAttr(b.Node("DequantizeLinear", {"w_q", "w_s", "w_z"}, {"wd"}), "axis", conv ? 0 : 1);
  b.Node(op, {"xd", "wd"}, {"m"});
  Qdq(b, "m", "y", 1.f, 0);  // the sums (144, 64) fit u8 at scale 1
  return LoadBuilt(b);
}

void CheckAllOnesQdq() {
  for (const char* op : {"Conv", "MatMul"}) {
    for (int8_t w : {int8_t{64}, int8_t{127}}) {
      const Model m = AllOnesQdq(op, w);
      const Shape xs = std::string(op) == "Conv" ? Shape{1, 16, 6, 6} : Shape{4, 64};
      const Tensor ones = FloatTensor(xs, std::vector<float>(ShapeElementCount(xs), 1.f));
      auto o = OptimizeAndCompare(m, {{"x", ones}}, 2, 1e-4f, 0.f);
      EXPECT_EQ(CountOp(o.model, std::string("Q") + op), 1) << op;
      const float want = std::string(op) == "Conv" ? 144.f : 64.f;
      const auto got = RunModel(o.model, {{"x", ones}});
      if (!got.empty()) {
        EXPECT_EQ(got[0].data<float>()[0], want) << op << " w " << int{w};
        std::fprintf(stderr, "%s w %d: y[0] = %g\n", op, int{w}, got[0].data<float>()[0]);
      }
    }
  }
}

// Runs `check` in a fresh process with oneDNN capped to AVX2 (it reads its ISA once).
void ExpectPassesOnAvx2(void (*check)(), const std::string& what) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("INFERLOOP_ISA", "avx2", 1);
        unsetenv("ONEDNN_MAX_CPU_ISA");
        check();
        std::fprintf(stderr, "%s on avx2: %s\n", what.c_str(), ::testing::Test::HasFailure() ? "failed" : "passed");
        std::exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), what + " on avx2: passed");
}

TEST(OptQdqFusion, SevenBitWeightsExactOnAvx2) { ExpectPassesOnAvx2(CheckAllOnesQdq, "all-ones QDQ"); }

// The same cases on this CPU's own path (VNNI / AMX where present).
TEST(OptQdqFusion, AllOnesQdqExact) { CheckAllOnesQdq(); }

// Full-range weights without VNNI take the window split (dnnl_int8_common.h): the u8 input's
// values within [shift, shift + 128] go to oneDNN's int8 kernel, the others are added by the
// kernel as a correction. Inputs spread over the whole u8 range put about half the values outside
// the window, for zero points 0 (shift 0), 128 (shift 64) and 250 (shift 127), through a grouped,
// strided, padded 3x3 convolution with a ReLU, a dilated one over two images, and a matrix product
// (each within one output step of the unfused float graph), and ORT's dynamic MatMul format.
void CheckWindowSplit() {
  for (const uint8_t zp : {uint8_t{0}, uint8_t{128}, uint8_t{250}}) {
    const float lo = -static_cast<float>(zp) * 0.02f, hi = (255.f - static_cast<float>(zp)) * 0.02f;
    {
      ModelBuilder b(17);
      b.Input("x", DataType::kFloat, {1, 8, 9, 7}).Output("y", DataType::kFloat, {1, 12, 5, 4});
      Qdq(b, "x", "xd", 0.02f, zp);
      Weight(b, "wd", {12, 4, 3, 3});
      auto& conv = b.Node("Conv", {"xd", "wd"}, {"c"});
      IntsAttr(conv, "pads", {1, 1, 1, 1});
      IntsAttr(conv, "strides", {2, 2});
      IntAttr(conv, "group", 2);
      b.Node("Relu", {"c"}, {"r"});
      Qdq(b, "r", "y", 0.1f, 0);
      auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({1, 8, 9, 7}, 11, lo, hi)}}, 2, 0.1f * 1.001f, 0.f);
      EXPECT_EQ(CountOp(o.model, "QConv"), 1) << "zp " << int{zp};
    }
    {
      ModelBuilder b(17);
      b.Input("x", DataType::kFloat, {2, 5, 8, 8}).Output("y", DataType::kFloat, {2, 6, 4, 4});
      Qdq(b, "x", "xd", 0.02f, zp);
      Weight(b, "wd", {6, 5, 3, 3});
      IntsAttr(b.Node("Conv", {"xd", "wd"}, {"c"}), "dilations", {2, 2});
      Qdq(b, "c", "y", 0.2f, 128);
      auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({2, 5, 8, 8}, 12, lo, hi)}}, 2, 0.2f * 1.001f, 0.f);
      EXPECT_EQ(CountOp(o.model, "QConv"), 1) << "zp " << int{zp};
    }
    if (zp == 128) {
      // ORT's dynamic format (DynamicQuantizeLinear -> MatMulInteger -> ...; DynamicQMatMul fused):
      // the zero point is computed at run time from x's range, the inputs spread over it.
      ModelBuilder b(17);
      b.Input("x", DataType::kFloat, {6, 48}).Output("y", DataType::kFloat, {6, 20});
      b.Initializer("w", RandomTensor({48, 20}, 14));
      b.Initializer("bias", RandomTensor({20}, 15));
      b.Node("MatMul", {"x", "w"}, {"m"});
      b.Node("Add", {"m", "bias"}, {"y"});
      auto dyn = WriteDynamicQuantModel(LoadBuilt(b), DynamicQuantOptions{true});
      ASSERT_TRUE(dyn.ok()) << dyn.status().ToString();
      // The unfused graph is exact integer arithmetic too: only float rounding may differ.
      auto o = OptimizeAndCompare(dyn->model, {{"x", RandomTensor({6, 48}, 16, -3.f, 2.f)}}, 2, 1e-4f, 1e-4f);
      EXPECT_EQ(CountOp(o.model, "DynamicQMatMul"), 1);
    }
    {
      ModelBuilder b(17);
      b.Input("x", DataType::kFloat, {5, 40}).Output("y", DataType::kFloat, {5, 24});
      Qdq(b, "x", "xd", 0.02f, zp);
      Weight(b, "wd", {40, 24}, 0, 1);
      b.Node("MatMul", {"xd", "wd"}, {"m"});
      Qdq(b, "m", "y", 0.1f, 128);
      auto o = OptimizeAndCompare(LoadBuilt(b), {{"x", RandomTensor({5, 40}, 13, lo, hi)}}, 2, 0.1f * 1.001f, 0.f);
      EXPECT_EQ(CountOp(o.model, "QMatMul"), 1) << "zp " << int{zp};
    }
  }
}

TEST(OptQdqFusion, WindowSplitExactOnAvx2) { ExpectPassesOnAvx2(CheckWindowSplit, "window split"); }

TEST(OptQdqFusion, WindowSplitCasesOnThisCpu) { CheckWindowSplit(); }

}  // namespace
}  // namespace inferloop::testing
