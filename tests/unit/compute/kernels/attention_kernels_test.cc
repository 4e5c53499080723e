// Focused tests for the attention (Attention, RotaryEmbedding) and rnn (RNN, GRU, LSTM) kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "base/float_types.h"
#include "inferloop/session.h"
#include "unit/compute/tensor_makers.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;
using testing::StrAttr;

using testing::F32;
Tensor Seq(Shape shape, float scale = 0.1f) {
  std::vector<float> v(static_cast<size_t>(ShapeElementCount(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 0.7f) * scale * 10;
  return F32(std::move(shape), v);
}


Result<std::unique_ptr<Session>> Create(ModelBuilder& b) {
  const std::string bytes = b.Bytes();
  return Session::CreateFromBytes(bytes.data(), bytes.size());
}

// Q [1,1,2,2] K/V [1,1,3,2], optional bool mask [2,3].
ModelBuilder AttentionModel(bool with_mask, DataType dt = DataType::kFloat) {
  ModelBuilder b(23);
  const std::vector<int64_t> any4 = {-1, -1, -1, -1};
  b.Input("Q", dt, any4, {"q0", "q1", "q2", "q3"}).Input("K", dt, any4, {"k0", "k1", "k2", "k3"});
  b.Input("V", dt, any4, {"v0", "v1", "v2", "v3"});
  std::vector<std::string> ins = {"Q", "K", "V"};
  if (with_mask) {
    b.Input("M", DataType::kBool, {-1, -1}, {"m0", "m1"});
    ins.push_back("M");
  }
  b.Output("Y", dt, {-1, -1, -1, -1});
  b.Node("Attention", ins, {"Y"});
  return b;
}

TEST(AttnKernels, FullyMaskedRowIsZeroNotNaN) {
  ModelBuilder b = AttentionModel(true);
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Tensor mask = Tensor::FromVector<uint8_t>(DataType::kBool, {2, 3}, {1, 0, 1, 0, 0, 0});
  auto r = (*s)->Run({{"Q", Seq({1, 1, 2, 2})}, {"K", Seq({1, 1, 3, 2})}, {"V", Seq({1, 1, 3, 2})}, {"M", mask}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_TRUE(std::isfinite(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  EXPECT_EQ(y.data<float>()[3], 0.0f);
}

TEST(AttnKernels, MaskLongerThanKeysIsAnError) {
  ModelBuilder b = AttentionModel(true);
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Tensor mask = Tensor::FromVector<uint8_t>(DataType::kBool, {2, 4}, std::vector<uint8_t>(8, 1));
  auto r = (*s)->Run({{"Q", Seq({1, 1, 2, 2})}, {"K", Seq({1, 1, 3, 2})}, {"V", Seq({1, 1, 3, 2})}, {"M", mask}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("attn_mask"), std::string::npos) << r.status().ToString();
}

TEST(AttnKernels, HeadsMustDivide) {
  ModelBuilder b = AttentionModel(false);
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"Q", Seq({1, 3, 2, 2})}, {"K", Seq({1, 2, 3, 2})}, {"V", Seq({1, 2, 3, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("multiple of kv_num_heads"), std::string::npos) << r.status().ToString();
}

TEST(AttnKernels, ThreeDInputNeedsHeadAttributes) {
  ModelBuilder b(23);
  b.Input("Q", DataType::kFloat, {1, 2, 4}).Input("K", DataType::kFloat, {1, 3, 4}).Input("V", DataType::kFloat, {1, 3, 4});
  b.Output("Y", DataType::kFloat, {-1, -1, -1});
  b.Node("Attention", {"Q", "K", "V"}, {"Y"});
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"Q", Seq({1, 2, 4})}, {"K", Seq({1, 3, 4})}, {"V", Seq({1, 3, 4})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("q_num_heads"), std::string::npos) << r.status().ToString();
}

TEST(AttnKernels, BadModeRejectedAtCreation) {
  ModelBuilder b = AttentionModel(false);
  ModelBuilder::IntAttr(*b.proto().mutable_graph()->mutable_node(0), "qk_matmul_output_mode", 7);
  EXPECT_FALSE(Create(b).ok());
}

TEST(AttnKernels, BFloat16MatchesFloat) {
  auto to_bf16 = [](const Tensor& t) {
    std::vector<uint16_t> v(t.size());
    for (int64_t i = 0; i < t.size(); ++i) v[i] = FloatToBFloat16(t.data<float>()[i]);
    return Tensor::FromVector<uint16_t>(DataType::kBFloat16, t.shape(), v);
  };
  Tensor q = Seq({1, 2, 3, 4}), k = Seq({1, 1, 5, 4}, 0.2f), v = Seq({1, 1, 5, 3}, 0.3f);
  // Round the float inputs through bfloat16 so both runs see the same values.
  auto round = [&](const Tensor& t) {
    std::vector<float> f(t.size());
    for (int64_t i = 0; i < t.size(); ++i) f[i] = BFloat16ToFloat(FloatToBFloat16(t.data<float>()[i]));
    return F32(t.shape(), f);
  };
  q = round(q), k = round(k), v = round(v);
  ModelBuilder bf = AttentionModel(false);
  ModelBuilder bb = AttentionModel(false, DataType::kBFloat16);
  auto sf = Create(bf);
  auto sb = Create(bb);
  ASSERT_TRUE(sf.ok() && sb.ok());
  auto rf = (*sf)->Run({{"Q", q}, {"K", k}, {"V", v}});
  auto rb = (*sb)->Run({{"Q", to_bf16(q)}, {"K", to_bf16(k)}, {"V", to_bf16(v)}});
  ASSERT_TRUE(rf.ok() && rb.ok()) << rb.status().ToString();
  const Tensor& yf = (*rf)[0].second.tensor();
  const Tensor& yb = (*rb)[0].second.tensor();
  ASSERT_EQ(yb.dtype(), DataType::kBFloat16);
  ASSERT_EQ(yb.shape(), yf.shape());
  for (int64_t i = 0; i < yf.size(); ++i)
    EXPECT_EQ(yb.data<uint16_t>()[i], FloatToBFloat16(yf.data<float>()[i])) << i;
}

TEST(AttnKernels, RotaryPositionOutOfRange) {
  ModelBuilder b(23);
  b.Input("X", DataType::kFloat, {1, 1, 2, 4}).Input("C", DataType::kFloat, {3, 2}).Input("S", DataType::kFloat, {3, 2});
  b.Input("P", DataType::kInt64, {1, 2});
  b.Output("Y", DataType::kFloat, {1, 1, 2, 4});
  b.Node("RotaryEmbedding", {"X", "C", "S", "P"}, {"Y"});
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"X", Seq({1, 1, 2, 4})}, {"C", Seq({3, 2})}, {"S", Seq({3, 2})},
                      {"P", Tensor::FromVector<int64_t>(DataType::kInt64, {1, 2}, {0, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("position_ids value 3"), std::string::npos) << r.status().ToString();
}

TEST(AttnKernels, RotaryOddDimRejected) {
  ModelBuilder b(23);
  b.Input("X", DataType::kFloat, {1, 1, 2, 4}).Input("C", DataType::kFloat, {1, 2, 2}).Input("S", DataType::kFloat, {1, 2, 2});
  b.Output("Y", DataType::kFloat, {1, 1, 2, 4});
  auto& n = b.Node("RotaryEmbedding", {"X", "C", "S"}, {"Y"});
  ModelBuilder::IntAttr(n, "rotary_embedding_dim", 3);
  EXPECT_FALSE(Create(b).ok());
}

// GRU, seq 3, batch 2, input 2, hidden 2, sequence_lens {3, 1}.
ModelBuilder GruModel(const std::string& direction) {
  ModelBuilder b(22);
  b.Input("X", DataType::kFloat, {3, 2, 2}).Input("W", DataType::kFloat, {1, 6, 2}).Input("R", DataType::kFloat, {1, 6, 2});
  b.Input("L", DataType::kInt32, {2});
  b.Output("Y", DataType::kFloat, {-1, -1, -1, -1}).Output("Yh", DataType::kFloat, {-1, -1, -1});
  auto& n = b.Node("GRU", {"X", "W", "R", "", "L"}, {"Y", "Yh"});
  ModelBuilder::IntAttr(n, "hidden_size", 2);
  StrAttr(n, "direction", direction);
  return b;
}

TEST(RnnKernels, SequenceLensZeroPadAndLastState) {
  for (const char* dir : {"forward", "reverse"}) {
    ModelBuilder b = GruModel(dir);
    auto s = Create(b);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto r = (*s)->Run({{"X", Seq({3, 2, 2})}, {"W", Seq({1, 6, 2})}, {"R", Seq({1, 6, 2})},
                        {"L", Tensor::FromVector<int32_t>(DataType::kInt32, {2}, {3, 1})}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Tensor& y = (*r)[0].second.tensor();
    const Tensor& yh = (*r)[1].second.tensor();
    ASSERT_EQ(y.shape(), (Shape{3, 1, 2, 2}));
    const float* yd = y.data<float>();
    // Batch 1 has length 1: steps 1 and 2 are zero; Y_h is its step-0 output.
    for (int t = 1; t < 3; ++t)
      for (int k = 0; k < 2; ++k) EXPECT_EQ(yd[(t * 2 + 1) * 2 + k], 0.0f);
    for (int k = 0; k < 2; ++k) EXPECT_EQ(yh.data<float>()[2 + k], yd[2 + k]);
    // Batch 0: Y_h is step 2 (forward) or step 0 (reverse).
    const int last = std::string(dir) == "forward" ? 2 : 0;
    for (int k = 0; k < 2; ++k) EXPECT_EQ(yh.data<float>()[k], yd[(last * 2) * 2 + k]);
  }
}

TEST(RnnKernels, SequenceLensOutOfRange) {
  ModelBuilder b = GruModel("forward");
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"X", Seq({3, 2, 2})}, {"W", Seq({1, 6, 2})}, {"R", Seq({1, 6, 2})},
                      {"L", Tensor::FromVector<int32_t>(DataType::kInt32, {2}, {4, 1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sequence_lens[0] = 4"), std::string::npos) << r.status().ToString();
}

TEST(RnnKernels, BadAttributesRejected) {
  {
    ModelBuilder b = GruModel("sideways");
    EXPECT_FALSE(Create(b).ok());
  }
  {
    ModelBuilder b = GruModel("forward");
    auto* a = b.proto().mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name("activations");
    a->set_type(onnxpb::AttributeProto::STRINGS);
    a->add_strings("Sigmoid");
    a->add_strings("Bogus");
    EXPECT_FALSE(Create(b).ok());
  }
}

TEST(RnnKernels, WrongWeightShape) {
  // hidden_size 3 needs W [1, 9, 2]; the inputs are built for hidden_size 2.
  ModelBuilder b = GruModel("forward");
  auto* hs = b.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0);
  ASSERT_EQ(hs->name(), "hidden_size");
  hs->set_i(3);
  auto s = Create(b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"X", Seq({3, 2, 2})}, {"W", Seq({1, 6, 2})}, {"R", Seq({1, 6, 2})},
                      {"L", Tensor::FromVector<int32_t>(DataType::kInt32, {2}, {3, 1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("W expected shape"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace inferloop
