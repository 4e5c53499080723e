// The static QDQ writer (tools/qdq_writer.h) and the dynamic writer (tools/dynamic_quant.h) on tiny
// graphs: node structure, scales and zero points, int8 weights = round(w / s), int32 bias, and the
// written models run in inferloop close to the FP32 model.
#include "tools/qdq_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "graph/onnx_loader.h"
#include "runtime/session_internal.h"
#include "tools/dynamic_quant.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

const Node* FindNode(const Model& m, const std::string& op, const std::string& output) {
  for (const Node& n : m.graph.nodes)
    if (n.op_type == op && !n.outputs.empty() && n.outputs[0] == output) return &n;
  return nullptr;
}
const Node* Producer(const Model& m, const std::string& t) {
  for (const Node& n : m.graph.nodes)
    for (const auto& o : n.outputs)
      if (o == t) return &n;
  return nullptr;
}
const Tensor* Init(const Model& m, const std::string& name) {
  for (const auto& [n, t] : m.graph.initializers)
    if (n == name) return &t;
  return nullptr;
}

// x[1,2,3,3] -> conv1 (w1 [3,2,1,1], b1 [3]) -> relu1 -> conv2 (w2 [2,3,1,1]) -> y
Model TwoConvs() {
  testing::ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {1, 2, 3, 3}).Output("y", DataType::kFloat, {1, 2, 3, 3});
  b.Initializer("w1", Tensor::FromVector<float>(DataType::kFloat, {3, 2, 1, 1}, {0.5f, -1.0f, 0.25f, 0.125f, -2.0f, 0.3f}));
  b.Initializer("b1", Tensor::FromVector<float>(DataType::kFloat, {3}, {0.1f, -0.2f, 0.05f}));
  b.Initializer("w2", Tensor::FromVector<float>(DataType::kFloat, {2, 3, 1, 1}, {1.0f, 0.5f, -0.5f, 0.2f, 0.7f, -0.9f}));
  b.Node("Conv", {"x", "w1", "b1"}, {"c1"}).set_name("conv1");
  b.Node("Relu", {"c1"}, {"r1"}).set_name("relu1");
  b.Node("Conv", {"r1", "w2"}, {"y"}).set_name("conv2");
  const std::string bytes = b.Bytes();
  return std::move(LoadModelFromBytes(bytes.data(), bytes.size(), "")).value();
}

RangeLookup Ranges(std::map<std::string, QuantRange> m) {
  return [m](const std::string& t) -> std::optional<QuantRange> {
    auto it = m.find(t);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

const std::map<std::string, QuantRange> kRanges = {{"x", {-1.0, 1.0}}, {"c1", {-3.0, 3.0}}, {"r1", {0.0, 2.0}}, {"y", {-4, 4}}};

TEST(QdqWriter, ConvReluConvStructureScalesAndValues) {
  QdqOptions o;
  o.per_channel = true;
  auto r = WriteQdqModel(TwoConvs(), Ranges(kRanges), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Model& m = r->model;
  EXPECT_EQ(r->quantized_nodes, 2);
  EXPECT_EQ(r->qdq_tensors, 2);  // x and r1; none between conv1 and relu1, none on the graph output
  // x -> Q -> DQ -> conv1
  const Node* conv1 = FindNode(m, "Conv", "c1");
  ASSERT_NE(conv1, nullptr);
  const Node* dqx = Producer(m, conv1->inputs[0]);
  ASSERT_NE(dqx, nullptr);
  EXPECT_EQ(dqx->op_type, "DequantizeLinear");
  const Node* qx = Producer(m, dqx->inputs[0]);
  ASSERT_NE(qx, nullptr);
  EXPECT_EQ(qx->op_type, "QuantizeLinear");
  EXPECT_EQ(qx->inputs[0], "x");
  EXPECT_EQ(qx->inputs[1], dqx->inputs[1]);  // same scale and zero point
  EXPECT_EQ(qx->inputs[2], dqx->inputs[2]);
  const Tensor* xs = Init(m, qx->inputs[1]);
  const Tensor* xz = Init(m, qx->inputs[2]);
  ASSERT_TRUE(xs && xz);
  EXPECT_EQ(xs->dtype(), DataType::kFloat);
  EXPECT_EQ(xs->rank(), 0);
  EXPECT_FLOAT_EQ(xs->data<float>()[0], 2.0f / 255.0f);
  EXPECT_EQ(xz->dtype(), DataType::kUInt8);
  EXPECT_EQ(xz->data<uint8_t>()[0], static_cast<uint8_t>(std::nearbyint(1.0 / (2.0f / 255.0f))));
  // Relu reads conv1 directly; its output gets the pair (zero point 0 for [0, 2]).
  const Node* relu = FindNode(m, "Relu", "r1");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->inputs[0], "c1");
  const Node* conv2 = FindNode(m, "Conv", "y");
  ASSERT_NE(conv2, nullptr);
  const Node* dqr = Producer(m, conv2->inputs[0]);
  ASSERT_EQ(dqr->op_type, "DequantizeLinear");
  EXPECT_EQ(Producer(m, dqr->inputs[0])->inputs[0], "r1");
  EXPECT_EQ(Init(m, dqr->inputs[2])->data<uint8_t>()[0], 0);
  EXPECT_FLOAT_EQ(Init(m, dqr->inputs[1])->data<float>()[0], 2.0f / 255.0f);
  // Weights: int8 per output channel (axis 0), symmetric, round(w / s) with s = max|w_c| / 127.
  const Node* dqw = Producer(m, conv1->inputs[1]);
  ASSERT_EQ(dqw->op_type, "DequantizeLinear");
  ASSERT_NE(dqw->FindAttribute("axis"), nullptr);
  EXPECT_EQ(dqw->FindAttribute("axis")->i, 0);
  const Tensor* wq = Init(m, dqw->inputs[0]);
  const Tensor* ws = Init(m, dqw->inputs[1]);
  const Tensor* wz = Init(m, dqw->inputs[2]);
  ASSERT_TRUE(wq && ws && wz);
  EXPECT_EQ(wq->dtype(), DataType::kInt8);
  EXPECT_EQ(wq->shape(), (Shape{3, 2, 1, 1}));
  EXPECT_EQ(ws->shape(), (Shape{3}));
  EXPECT_EQ(wz->dtype(), DataType::kInt8);
  const std::vector<float> w = {0.5f, -1.0f, 0.25f, 0.125f, -2.0f, 0.3f};
  for (int c = 0; c < 3; ++c) {
    const float s = std::max(std::fabs(w[2 * c]), std::fabs(w[2 * c + 1])) / 127.0f;
    EXPECT_FLOAT_EQ(ws->data<float>()[c], s);
    EXPECT_EQ(wz->data<int8_t>()[c], 0);
    for (int k = 0; k < 2; ++k) EXPECT_EQ(wq->data<int8_t>()[2 * c + k], std::nearbyint(w[2 * c + k] / s)) << c << "," << k;
  }
  // Bias: int32 with scale x_scale * w_scale, zero point 0, axis 0.
  const Node* dqb = Producer(m, conv1->inputs[2]);
  ASSERT_EQ(dqb->op_type, "DequantizeLinear");
  const Tensor* bq = Init(m, dqb->inputs[0]);
  const Tensor* bs = Init(m, dqb->inputs[1]);
  EXPECT_EQ(bq->dtype(), DataType::kInt32);
  EXPECT_EQ(Init(m, dqb->inputs[2])->dtype(), DataType::kInt32);
  const std::vector<float> b = {0.1f, -0.2f, 0.05f};
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(bs->data<float>()[c], xs->data<float>()[0] * ws->data<float>()[c]);
    EXPECT_EQ(bq->data<int32_t>()[c], std::nearbyint(b[c] / bs->data<float>()[c]));
  }
  // The float weights are gone.
  EXPECT_EQ(Init(m, "w1"), nullptr);
  EXPECT_EQ(Init(m, "b1"), nullptr);
}

TEST(QdqWriter, PerTensorWeightsHaveScalarScale) {
  auto r = WriteQdqModel(TwoConvs(), Ranges(kRanges), QdqOptions{});
  ASSERT_TRUE(r.ok());
  const Node* conv2 = FindNode(r->model, "Conv", "y");
  const Node* dqw = Producer(r->model, conv2->inputs[1]);
  EXPECT_EQ(dqw->FindAttribute("axis"), nullptr);
  const Tensor* ws = Init(r->model, dqw->inputs[1]);
  EXPECT_EQ(ws->rank(), 0);
  EXPECT_FLOAT_EQ(ws->data<float>()[0], 1.0f / 127.0f);
  EXPECT_EQ(Init(r->model, dqw->inputs[0])->data<int8_t>()[5], std::nearbyint(-0.9f / (1.0f / 127.0f)));
}

// reduce_range: weights within [-64, 64] with scale max|w| / 64 (per tensor here).
TEST(QdqWriter, ReduceRangeQuantizesWeightsTo7Bits) {
  QdqOptions o;
  o.reduce_range = true;
  auto r = WriteQdqModel(TwoConvs(), Ranges(kRanges), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const char* y : {"c1", "y"}) {
    const Node* conv = FindNode(r->model, "Conv", y);
    ASSERT_NE(conv, nullptr) << y;
    const Node* dqw = Producer(r->model, conv->inputs[1]);
    const Tensor* w = Init(r->model, dqw->inputs[0]);
    int lo = 0, hi = 0;
    for (int64_t i = 0; i < w->size(); ++i) lo = std::min<int>(lo, w->data<int8_t>()[i]), hi = std::max<int>(hi, w->data<int8_t>()[i]);
    EXPECT_EQ(std::max(-lo, hi), 64) << y;  // the largest |w| lands on the top of the 7-bit range
  }
  const Node* conv2 = FindNode(r->model, "Conv", "y");
  const Node* dqw = Producer(r->model, conv2->inputs[1]);
  EXPECT_FLOAT_EQ(Init(r->model, dqw->inputs[1])->data<float>()[0], 1.0f / 64.0f);  // max |w2| = 1.0
  EXPECT_EQ(Init(r->model, dqw->inputs[0])->data<int8_t>()[0], 64);
  EXPECT_EQ(Init(r->model, dqw->inputs[0])->data<int8_t>()[5], -58);  // round(-0.9 * 64) = round(-57.6)
  auto bad = QuantizeWeightSymmetric(Tensor::FromVector<float>(DataType::kFloat, {2}, {1.f, 2.f}), -1, 0);
  EXPECT_FALSE(bad.ok());
}

TEST(QdqWriter, ExcludeKeepsTheLayerFp32) {
  QdqOptions o;
  o.exclude = {"conv2"};
  auto r = WriteQdqModel(TwoConvs(), Ranges(kRanges), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->quantized_nodes, 1);
  EXPECT_EQ(r->qdq_tensors, 1);  // x only: nothing wants r1 quantized
  const Node* conv2 = FindNode(r->model, "Conv", "y");
  EXPECT_EQ(conv2->inputs[0], "r1");
  EXPECT_EQ(conv2->inputs[1], "w2");
  EXPECT_NE(Init(r->model, "w2"), nullptr);
  o.exclude = {"no_such_node"};
  auto bad = WriteQdqModel(TwoConvs(), Ranges(kRanges), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no_such_node"), std::string::npos);
}

TEST(QdqWriter, QdqModelRunsCloseToFp32) {
  const Model fp32 = TwoConvs();
  // Ranges that cover the values (sin(i) in [-1, 1]; relu1 stays below 2.5).
  auto r = WriteQdqModel(fp32, Ranges({{"x", {-1, 1}}, {"r1", {0, 2.5}}}), QdqOptions{true});
  ASSERT_TRUE(r.ok());
  SessionOptions so;
  so.optimization_level = 0;
  auto a = CreateSessionFromModel(fp32, so);
  auto b = CreateSessionFromModel(r->model, so);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
  std::vector<float> x(18);
  for (int i = 0; i < 18; ++i) x[i] = std::sin(static_cast<float>(i));
  std::vector<NamedValue> feeds = {{"x", Value(Tensor::FromVector<float>(DataType::kFloat, {1, 2, 3, 3}, x))}};
  auto ya = (*a)->Run(feeds);
  auto yb = (*b)->Run(feeds);
  ASSERT_TRUE(ya.ok() && yb.ok());
  const Tensor& ta = (*ya)[0].second.tensor();
  const Tensor& tb = (*yb)[0].second.tensor();
  ASSERT_EQ(ta.size(), tb.size());
  for (int64_t i = 0; i < ta.size(); ++i) EXPECT_NEAR(ta.data<float>()[i], tb.data<float>()[i], 0.05) << i;
}

// x -> conv -> relu (r) -> MaxPool (p) -> GlobalAveragePool (g) -> Flatten (f) -> Gemm -> y
TEST(QdqWriter, PoolingAndMovementOpsSitBetweenPairsWithTheInputsParameters) {
  testing::ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {1, 2, 4, 4}).Output("y", DataType::kFloat, {1, 3});
  b.Initializer("w", Tensor::FromVector<float>(DataType::kFloat, {2, 2, 1, 1}, {1, 0.5f, -0.5f, 1}));
  b.Initializer("wf", Tensor::FromVector<float>(DataType::kFloat, {3, 2}, {1, 2, 3, 4, 5, 6}));
  b.Node("Conv", {"x", "w"}, {"c"}).set_name("conv");
  b.Node("Relu", {"c"}, {"r"}).set_name("relu");
  auto& mp = b.Node("MaxPool", {"r"}, {"p"});
  mp.set_name("pool");
  testing::IntsAttr(mp, "kernel_shape", {2, 2});
  testing::IntsAttr(mp, "strides", {2, 2});
  b.Node("GlobalAveragePool", {"p"}, {"g"}).set_name("gap");
  b.Node("Flatten", {"g"}, {"f"}).set_name("flatten");
  testing::ModelBuilder::IntAttr(b.Node("Gemm", {"f", "wf"}, {"y"}), "transB", 1);
  const std::string bytes = b.Bytes();
  const Model fp32 = std::move(LoadModelFromBytes(bytes.data(), bytes.size(), "")).value();
  auto r = WriteQdqModel(fp32, Ranges({{"x", {-1, 1}}, {"r", {0, 2}}, {"p", {0, 1.5}}, {"g", {0, 1}}, {"f", {0, 0.7}}}),
                         QdqOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Model& m = r->model;
  EXPECT_EQ(r->quantized_nodes, 4);  // conv, pool, gap, gemm
  auto scale_of = [&](const std::string& t) -> float {
    for (const Node& n : m.graph.nodes)
      if (n.op_type == "QuantizeLinear" && n.inputs[0] == t) return Init(m, n.inputs[1])->data<float>()[0];
    return -1;
  };
  EXPECT_FLOAT_EQ(scale_of("r"), 2.0f / 255);
  EXPECT_FLOAT_EQ(scale_of("p"), 2.0f / 255);  // MaxPool: the input's parameters
  EXPECT_FLOAT_EQ(scale_of("g"), 1.0f / 255);  // GlobalAveragePool: DQ -> op -> Q, its own range
  EXPECT_FLOAT_EQ(scale_of("f"), 1.0f / 255);  // Flatten: the input's parameters
  EXPECT_EQ(FindNode(m, "Flatten", "f")->inputs[0], Producer(m, FindNode(m, "Flatten", "f")->inputs[0])->outputs[0]);
  EXPECT_EQ(Producer(m, FindNode(m, "Flatten", "f")->inputs[0])->op_type, "DequantizeLinear");
}

// x[2,4] -> MatMul(w [4,3]) -> Add(b) -> y
Model MatMulModel() {
  testing::ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {2, 4}).Output("y", DataType::kFloat, {2, 3});
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[i] = std::cos(static_cast<float>(i)) * 0.5f;
  b.Initializer("w", Tensor::FromVector<float>(DataType::kFloat, {4, 3}, w));
  b.Initializer("b", Tensor::FromVector<float>(DataType::kFloat, {3}, {0.1f, 0.2f, -0.3f}));
  b.Node("MatMul", {"x", "w"}, {"m"}).set_name("mm");
  b.Node("Add", {"m", "b"}, {"y"}).set_name("bias");
  const std::string bytes = b.Bytes();
  return std::move(LoadModelFromBytes(bytes.data(), bytes.size(), "")).value();
}

TEST(QdqWriter, MatMulWeightPerChannelIsAxis1) {
  auto r = WriteQdqModel(MatMulModel(), Ranges({{"x", {-1, 1}}}), QdqOptions{true});
  ASSERT_TRUE(r.ok());
  const Node* mm = FindNode(r->model, "MatMul", "m");
  const Node* dqw = Producer(r->model, mm->inputs[1]);
  ASSERT_EQ(dqw->op_type, "DequantizeLinear");
  EXPECT_EQ(dqw->FindAttribute("axis")->i, 1);
  EXPECT_EQ(Init(r->model, dqw->inputs[1])->shape(), (Shape{3}));
  // The bias Add after a MatMul stays float and reads the MatMul directly.
  EXPECT_EQ(FindNode(r->model, "Add", "y")->inputs[0], "m");
}

TEST(QdqWriter, ReplacedWeightsListedAsGraphInputsAreDropped) {
  Model fp32 = MatMulModel();
  GraphValue w;  // IR < 4 style: the initializer is also a graph input
  w.name = "w";
  fp32.graph.inputs.push_back(w);
  auto r = WriteQdqModel(fp32, Ranges({{"x", {-1, 1}}}), QdqOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->model.graph.inputs.size(), 1u);
  EXPECT_EQ(r->model.graph.inputs[0].name, "x");
  auto d = WriteDynamicQuantModel(fp32, DynamicQuantOptions{});
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->model.graph.inputs.size(), 1u);
  EXPECT_EQ(d->model.graph.inputs[0].name, "x");
}

TEST(QdqWriter, MatMulOfTwoActivationsOnlyOnRequest) {
  testing::ModelBuilder b(13);
  b.Input("q", DataType::kFloat, {2, 3}).Input("k", DataType::kFloat, {3, 2}).Output("s", DataType::kFloat, {2, 2});
  b.Node("MatMul", {"q", "k"}, {"s"}).set_name("scores");
  const std::string bytes = b.Bytes();
  const Model fp32 = std::move(LoadModelFromBytes(bytes.data(), bytes.size(), "")).value();
  const auto ranges = Ranges({{"q", {-1, 1}}, {"k", {-2, 2}}});
  QdqOptions o;
  EXPECT_TRUE(QuantizableLayers(fp32, o).empty());
  auto plain = WriteQdqModel(fp32, ranges, o);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->qdq_tensors, 0);
  EXPECT_EQ(plain->model.graph.nodes.size(), 1u);  // attention stays FP32 by default
  o.quantize_activation_matmul = true;
  EXPECT_EQ(QuantizableLayers(fp32, o), std::vector<std::string>{"scores"});
  auto both = WriteQdqModel(fp32, ranges, o);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->qdq_tensors, 2);
  const Node* mm = FindNode(both->model, "MatMul", "s");
  EXPECT_EQ(Producer(both->model, mm->inputs[0])->op_type, "DequantizeLinear");
  EXPECT_EQ(Producer(both->model, mm->inputs[1])->op_type, "DequantizeLinear");
}

TEST(DynamicQuant, MatMulBecomesOrtDynamicPatternAndRuns) {
  const Model fp32 = MatMulModel();
  auto r = WriteDynamicQuantModel(fp32, DynamicQuantOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->quantized_nodes, 1);
  std::vector<std::string> ops;
  for (const Node& n : r->model.graph.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"DynamicQuantizeLinear", "Mul", "MatMulInteger", "Cast", "Mul", "Add"}));
  const Node* mmi = r->model.graph.nodes.data() + 2;
  EXPECT_EQ(Init(r->model, mmi->inputs[1])->dtype(), DataType::kInt8);
  EXPECT_EQ(r->model.graph.nodes[4].outputs[0], "m");  // the MatMul's output name is kept
  for (int level : {0, 2}) {
    SessionOptions so;
    so.optimization_level = level;
    auto a = CreateSessionFromModel(fp32, so);
    auto b = CreateSessionFromModel(r->model, so);
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
    std::vector<NamedValue> feeds = {
        {"x", Value(Tensor::FromVector<float>(DataType::kFloat, {2, 4}, {0.1f, -0.5f, 0.9f, 0.3f, -1, 0.7f, 0.2f, 0.0f}))}};
    auto ya = (*a)->Run(feeds);
    auto yb = (*b)->Run(feeds);
    ASSERT_TRUE(ya.ok() && yb.ok()) << yb.status().ToString();
    const Tensor& ta = (*ya)[0].second.tensor();
    const Tensor& tb = (*yb)[0].second.tensor();
    for (int64_t i = 0; i < ta.size(); ++i) EXPECT_NEAR(ta.data<float>()[i], tb.data<float>()[i], 0.03) << level << ":" << i;
  }
}

}  // namespace
}  // namespace inferloop
