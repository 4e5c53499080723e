// Precision modes of the oneDNN Conv/MatMul/Gemm kernels (SessionOptions::precision): bf16
// really computes in bfloat16 (close to the float64 reference, not bit-identical to fp32), fp16
// keeps constant weights as float16 (close, and the session's weight memory is lower), the
// session's resolution of auto/int8/fp32 for models with and without Q/DQ nodes, and parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compute/kernels/dnnl_kernels.h"
#include "inferloop/precision.h"
#include "unit/compute/kernels/dnnl_test_util.h"

namespace inferloop {
namespace {

using dnnl_test::MakeTensor;
using dnnl_test::OneNode;
using dnnl_test::Operand;
using dnnl_test::RandomValues;
using dnnl_test::ToDoubles;

// A session for `n` (operands in float32, or float64 for the reference) at `precision`.
Result<std::unique_ptr<Session>> MakeSession(const OneNode& n, DataType t, Precision precision,
                                             std::vector<NamedValue>* feeds) {
  testing::ModelBuilder b(n.opset);
  std::vector<std::string> in_names;
  for (const Operand& o : n.inputs) {
    in_names.push_back(o.name);
    Tensor v = MakeTensor(t, o.shape, o.values);
    if (o.constant) {
      b.Initializer(o.name, v);
    } else {
      auto* vi = b.proto().mutable_graph()->add_input();
      vi->set_name(o.name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
      feeds->emplace_back(o.name, Value(v));
    }
  }
  auto* vo = b.proto().mutable_graph()->add_output();
  vo->set_name("y");
  vo->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
  auto& node = b.Node(n.op, in_names, {"y"});
  if (n.attrs) n.attrs(node);
  SessionOptions so;
  so.optimization_level = 0;
  so.intra_op_threads = 1;
  so.precision = precision;
  const std::string bytes = b.Bytes();
  return Session::CreateFromBytes(bytes.data(), bytes.size(), so);
}

struct PrecisionRun {
  std::vector<double> y;
  size_t weight_bytes = 0;
  Precision effective = Precision::kAuto;
};

PrecisionRun RunAt(const OneNode& n, DataType t, Precision precision) {
  PrecisionRun r;
  std::vector<NamedValue> feeds;
  auto s = MakeSession(n, t, precision, &feeds);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return r;
  const int64_t before = dnnl_kernels::PrimitiveExecutions();
  auto out = (*s)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return r;
  if (t == DataType::kFloat) {
    EXPECT_GT(dnnl_kernels::PrimitiveExecutions(), before) << "did not run on oneDNN";
  }
  r.y = ToDoubles(out->at(0).second.tensor());
  r.weight_bytes = (*s)->memory_stats().weight_bytes;
  r.effective = (*s)->precision();
  return r;
}

// max |got - want| / max |want|.
double RelError(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

OneNode ConvCase() {
  OneNode n;
  n.op = "Conv";
  n.inputs = {{"x", {2, 32, 12, 12}, RandomValues(2 * 32 * 12 * 12, 1)},
              {"w", {64, 32, 3, 3}, RandomValues(64 * 32 * 9, 2), true},
              {"b", {64}, RandomValues(64, 3), true}};
  n.attrs = [](onnxpb::NodeProto& node) { testing::IntsAttr(node, "pads", {1, 1, 1, 1}); };
  return n;
}

OneNode MatMulCase() {
  OneNode n;
  n.op = "MatMul";
  n.inputs = {{"a", {2, 24, 128}, RandomValues(2 * 24 * 128, 4)}, {"b", {128, 96}, RandomValues(128 * 96, 5), true}};
  return n;
}

OneNode GemmCase() {
  OneNode n;
  n.op = "Gemm";
  n.inputs = {{"a", {16, 256}, RandomValues(16 * 256, 6)},
              {"b", {64, 256}, RandomValues(64 * 256, 7), true},
              {"c", {64}, RandomValues(64, 8), true}};
  n.attrs = [](onnxpb::NodeProto& node) { testing::ModelBuilder::IntAttr(node, "transB", 1); };
  return n;
}

// Both operands variable (an attention-style product).
OneNode MatMulVariableCase() {
  OneNode n;
  n.op = "MatMul";
  n.inputs = {{"a", {4, 16, 64}, RandomValues(4 * 16 * 64, 9)}, {"b", {4, 64, 16}, RandomValues(4 * 64 * 16, 10)}};
  return n;
}

void CheckModes(const OneNode& n, const char* what, bool constant_weights) {
  if (!dnnl_kernels::Bf16ComputeSupported()) GTEST_SKIP() << "no AVX512_BF16 here: bf16 falls back to fp16";
  const PrecisionRun ref = RunAt(n, DataType::kDouble, Precision::kFp32);
  const PrecisionRun fp32 = RunAt(n, DataType::kFloat, Precision::kFp32);
  const PrecisionRun bf16 = RunAt(n, DataType::kFloat, Precision::kBf16);
  const PrecisionRun fp16 = RunAt(n, DataType::kFloat, Precision::kFp16);
  ASSERT_FALSE(ref.y.empty());
  EXPECT_EQ(bf16.effective, Precision::kBf16);
  EXPECT_EQ(fp16.effective, Precision::kFp16);
  const double e32 = RelError(fp32.y, ref.y), e16 = RelError(bf16.y, ref.y), eh = RelError(fp16.y, ref.y);
  EXPECT_LT(e32, 1e-5) << what;
  // bfloat16 keeps 8 significant bits: relative error of a dot product around 2^-9 .. 1e-2.
  EXPECT_LT(e16, 2e-2) << what;
  EXPECT_GT(e16, 10 * e32) << what << ": bf16 as accurate as fp32, so not computed in bf16";
  EXPECT_NE(bf16.y, fp32.y) << what;
  // float16 weights (11 significant bits), float32 activations and accumulation.
  EXPECT_LT(eh, 2e-3) << what;
  if (constant_weights) {
    EXPECT_GT(eh, e32) << what << ": fp16 weights as accurate as fp32";
    EXPECT_LT(fp16.weight_bytes, fp32.weight_bytes * 6 / 10) << what;
    EXPECT_LT(bf16.weight_bytes, fp32.weight_bytes * 6 / 10) << what;
    EXPECT_GT(fp16.weight_bytes, 0u) << what;
  } else {
    EXPECT_EQ(fp16.y, fp32.y) << what << ": fp16 changes only constant weights";
  }
}

TEST(DnnlPrecision, ConvBf16AndFp16) { CheckModes(ConvCase(), "Conv", true); }
TEST(DnnlPrecision, MatMulBf16AndFp16) { CheckModes(MatMulCase(), "MatMul", true); }
TEST(DnnlPrecision, GemmBf16AndFp16) { CheckModes(GemmCase(), "Gemm", true); }
TEST(DnnlPrecision, VariableMatMulBf16) { CheckModes(MatMulVariableCase(), "MatMul(a, b)", false); }

TEST(DnnlPrecision, RepeatedRunsAgree) {
  // Packed bf16 / widened fp16 weights are reused: a second run gives the same result.
  for (Precision p : {Precision::kBf16, Precision::kFp16}) {
    std::vector<NamedValue> feeds;
    auto s = MakeSession(ConvCase(), DataType::kFloat, p, &feeds);
    ASSERT_TRUE(s.ok());
    auto a = (*s)->Run(feeds);
    auto b = (*s)->Run(feeds);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(ToDoubles(a->at(0).second.tensor()), ToDoubles(b->at(0).second.tensor())) << PrecisionName(p);
  }
}

TEST(Precision, ParseAndName) {
  for (Precision p : {Precision::kAuto, Precision::kFp32, Precision::kBf16, Precision::kFp16, Precision::kInt8}) {
    auto r = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, p);
  }
  EXPECT_EQ(*ParsePrecision(""), Precision::kAuto);
  for (const char* bad : {"FP32", "float16", "int4", " bf16"}) {
    auto r = ParsePrecision(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("expected auto, fp32, bf16, fp16 or int8"), std::string::npos);
  }
}

// x -> QuantizeLinear(scale 0.1, zero point 128) -> DequantizeLinear -> y.
std::string QdqModel() {
  testing::ModelBuilder b(17);
  auto* vi = b.proto().mutable_graph()->add_input();
  vi->set_name("x");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(DataType::kFloat));
  auto* vo = b.proto().mutable_graph()->add_output();
  vo->set_name("y");
  vo->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(DataType::kFloat));
  b.Initializer("s", Tensor::FromVector<float>(DataType::kFloat, {}, {0.1f}));
  b.Initializer("zp", Tensor::FromVector<uint8_t>(DataType::kUInt8, {}, {128}));
  b.Node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
  b.Node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
  return b.Bytes();
}

TEST(Precision, SessionResolution) {
  const std::string qdq = QdqModel();
  OneNode plain = MatMulCase();
  SessionOptions so;
  // A model without Q/DQ nodes: auto = fp32; int8 is an error pointing at the quantizer.
  for (auto [p, want] : {std::pair{Precision::kAuto, Precision::kFp32}, std::pair{Precision::kFp32, Precision::kFp32}}) {
    std::vector<NamedValue> feeds;
    auto s = MakeSession(plain, DataType::kFloat, p, &feeds);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->precision(), want);
  }
  std::vector<NamedValue> feeds;
  auto bad = MakeSession(plain, DataType::kFloat, Precision::kInt8, &feeds);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("inferloop quantize"), std::string::npos) << bad.status().message();
  // A QDQ model: auto = int8; fp32 runs the Q/DQ nodes as written, in float.
  for (auto [p, want] : {std::pair{Precision::kAuto, Precision::kInt8}, std::pair{Precision::kInt8, Precision::kInt8},
                         std::pair{Precision::kFp32, Precision::kFp32}}) {
    so.precision = p;
    auto s = Session::CreateFromBytes(qdq.data(), qdq.size(), so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ((*s)->precision(), want) << PrecisionName(p);
    // ONNX semantics: q = saturate(round_half_even(x / 0.1) + 128), y = (q - 128) * 0.1.
    auto out = (*s)->Run({{"x", Value(Tensor::FromVector<float>(DataType::kFloat, {4}, {0.26f, -0.04f, 100.f, -100.f}))}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const std::vector<double> y = ToDoubles(out->at(0).second.tensor());
    const std::vector<double> want_y = {0.3, 0.0, 12.7, -12.8};
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want_y[i], 1e-6) << i;
  }
}

}  // namespace
}  // namespace inferloop
