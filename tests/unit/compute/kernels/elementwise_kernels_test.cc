// Focused tests for the elementwise kernels: integer edge cases (division by zero, INT_MIN / -1,
// modulo signs, shifts past the width), attribute validation, dtype/shape errors, legacy
// broadcasting, NaN propagation and rounding.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "inferloop/session.h"
#include "unit/compute/kernels/session_for_test.h"
#include "unit/compute/tensor_makers.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;
using testing::StrAttr;

using testing::F32;
using testing::I32;
using testing::I64;
using testing::U8;
using testing::Bool;

void FloatAttr(onnxpb::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::FLOAT);
  a->set_f(v);
}

// A one-node model whose inputs have unknown shape, so any shape can be fed.
std::string Model(int64_t opset, const std::string& op, const std::vector<std::pair<std::string, DataType>>& ins,
                  DataType out, const std::function<void(onnxpb::NodeProto&)>& attrs = nullptr) {
  return testing::OneNodeModel(opset, op, ins, {{"out", out}}, attrs);
}

Result<std::unique_ptr<Session>> TryMake(const std::string& bytes) {
  return Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{});
}
using testing::Make;

template <typename T>
std::vector<T> RunOut(Session& s, const std::vector<NamedValue>& ins, Shape* shape = nullptr) {
  auto r = s.Run(ins);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  const Tensor& y = (*r)[0].second.tensor();
  if (shape) *shape = y.shape();
  return std::vector<T>(y.data<T>(), y.data<T>() + y.size());
}

TEST(ElementwiseKernels, IntegerDivTruncatesAndNeverTraps) {
  auto s = Make(Model(14, "Div", {{"a", DataType::kInt32}, {"b", DataType::kInt32}}, DataType::kInt32));
  ASSERT_TRUE(s);
  auto y = RunOut<int32_t>(*s, {{"a", I32({5}, {-7, 7, 5, INT_MIN, 9})}, {"b", I32({5}, {2, -2, 0, -1, 3})}});
  // Truncation toward zero; x / 0 -> 0 and INT_MIN / -1 -> INT_MIN (numpy's results).
  EXPECT_EQ(y, (std::vector<int32_t>{-3, -3, 0, INT_MIN, 3}));
}

TEST(ElementwiseKernels, IntegerModSignFollowsDivisorUnlessFmod) {
  auto s = Make(Model(13, "Mod", {{"a", DataType::kInt64}, {"b", DataType::kInt64}}, DataType::kInt64));
  ASSERT_TRUE(s);
  std::vector<NamedValue> ins = {{"a", I64({5}, {-7, 7, -7, 5, LLONG_MIN})}, {"b", I64({5}, {3, -3, -3, 0, -1})}};
  EXPECT_EQ(RunOut<int64_t>(*s, ins), (std::vector<int64_t>{2, -2, -1, 0, 0}));
  auto f = Make(Model(13, "Mod", {{"a", DataType::kInt64}, {"b", DataType::kInt64}}, DataType::kInt64,
                      [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "fmod", 1); }));
  ASSERT_TRUE(f);
  EXPECT_EQ(RunOut<int64_t>(*f, ins), (std::vector<int64_t>{-1, 1, -1, 0, 0}));
}

TEST(ElementwiseKernels, AttributeValidationAtCreation) {
  auto gelu = TryMake(Model(20, "Gelu", {{"x", DataType::kFloat}}, DataType::kFloat,
                            [](onnxpb::NodeProto& n) { StrAttr(n, "approximate", "fast"); }));
  ASSERT_FALSE(gelu.ok());
  EXPECT_NE(gelu.status().message().find("approximate"), std::string::npos) << gelu.status().ToString();
  auto shift = TryMake(Model(11, "BitShift", {{"a", DataType::kUInt8}, {"b", DataType::kUInt8}}, DataType::kUInt8,
                             [](onnxpb::NodeProto& n) { StrAttr(n, "direction", "UP"); }));
  EXPECT_FALSE(shift.ok());
  auto mod = TryMake(Model(13, "Mod", {{"a", DataType::kInt32}, {"b", DataType::kInt32}}, DataType::kInt32,
                           [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "fmod", 2); }));
  EXPECT_FALSE(mod.ok());
  auto celu = TryMake(Model(12, "Celu", {{"x", DataType::kFloat}}, DataType::kFloat,
                            [](onnxpb::NodeProto& n) { FloatAttr(n, "alpha", 0.0f); }));
  EXPECT_FALSE(celu.ok());
}

TEST(ElementwiseKernels, RejectsBadShapesAndDtypes) {
  auto s = Make(Model(14, "Add", {{"a", DataType::kFloat}, {"b", DataType::kFloat}}, DataType::kFloat));
  ASSERT_TRUE(s);
  auto r = s->Run({{"a", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", F32({2}, {1, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  auto c = Make(Model(13, "Clip", {{"x", DataType::kFloat}, {"lo", DataType::kFloat}}, DataType::kFloat));
  ASSERT_TRUE(c);
  r = c->Run({{"x", F32({2}, {1, 2})}, {"lo", F32({2}, {0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("scalar"), std::string::npos) << r.status().ToString();

  auto w = Make(Model(16, "Where", {{"c", DataType::kFloat}, {"x", DataType::kFloat}, {"y", DataType::kFloat}},
                      DataType::kFloat));
  ASSERT_TRUE(w);
  r = w->Run({{"c", F32({1}, {1})}, {"x", F32({1}, {1})}, {"y", F32({1}, {2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bool"), std::string::npos) << r.status().ToString();
}

TEST(ElementwiseKernels, LegacyBroadcastWithAxis) {
  // Opset 6 Add with broadcast=1, axis=1: B of shape [3] lines up with A's dim 1.
  auto s = Make(Model(6, "Add", {{"a", DataType::kFloat}, {"b", DataType::kFloat}}, DataType::kFloat,
                      [](onnxpb::NodeProto& n) {
                        ModelBuilder::IntAttr(n, "broadcast", 1);
                        ModelBuilder::IntAttr(n, "axis", 1);
                      }));
  ASSERT_TRUE(s);
  Shape shape;
  auto y = RunOut<float>(*s, {{"a", F32({2, 3, 2}, std::vector<float>(12, 0.0f))}, {"b", F32({3}, {1, 2, 3})}}, &shape);
  EXPECT_EQ(shape, (Shape{2, 3, 2}));
  EXPECT_EQ(y, (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(ElementwiseKernels, MaxMinPropagateNaNAndRoundIsHalfToEven) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto s = Make(Model(13, "Max", {{"a", DataType::kFloat}, {"b", DataType::kFloat}, {"c", DataType::kFloat}},
                      DataType::kFloat));
  ASSERT_TRUE(s);
  auto y = RunOut<float>(*s, {{"a", F32({3}, {1, nan, 3})}, {"b", F32({1}, {2})}, {"c", F32({3}, {0, 0, nan})}});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));

  auto r = Make(Model(11, "Round", {{"x", DataType::kFloat}}, DataType::kFloat));
  ASSERT_TRUE(r);
  EXPECT_EQ(RunOut<float>(*r, {{"x", F32({5}, {0.5f, 1.5f, 2.5f, -2.5f, 2.6f})}}),
            (std::vector<float>{0.0f, 2.0f, 2.0f, -2.0f, 3.0f}));
}

TEST(ElementwiseKernels, BitShiftPastWidthGivesZero) {
  auto s = Make(Model(11, "BitShift", {{"a", DataType::kUInt8}, {"b", DataType::kUInt8}}, DataType::kUInt8,
                      [](onnxpb::NodeProto& n) { StrAttr(n, "direction", "LEFT"); }));
  ASSERT_TRUE(s);
  EXPECT_EQ(RunOut<uint8_t>(*s, {{"a", U8({4}, {1, 1, 3, 255})}, {"b", U8({4}, {7, 8, 200, 1})}}),
            (std::vector<uint8_t>{128, 0, 0, 254}));
}

TEST(ElementwiseKernels, PowMixedTypes) {
  auto s = Make(Model(15, "Pow", {{"a", DataType::kInt64}, {"b", DataType::kInt64}}, DataType::kInt64));
  ASSERT_TRUE(s);
  // Negative exponents truncate 1/x^n toward zero.
  EXPECT_EQ(RunOut<int64_t>(*s, {{"a", I64({5}, {2, -3, 2, 1, -1})}, {"b", I64({5}, {10, 3, -1, -5, -3})}}),
            (std::vector<int64_t>{1024, -27, 0, 1, -1}));
  auto f = Make(Model(15, "Pow", {{"a", DataType::kInt32}, {"b", DataType::kFloat}}, DataType::kInt32));
  ASSERT_TRUE(f);
  // Integer base, float exponent: computed in double, converted with saturation (NaN -> 0).
  EXPECT_EQ(RunOut<int32_t>(*f, {{"a", I32({3}, {4, -4, 10})}, {"b", F32({3}, {0.5f, 0.5f, 20.0f})}}),
            (std::vector<int32_t>{2, 0, INT_MAX}));
}

TEST(ElementwiseKernels, WhereBroadcastsBoolAndFloat16Add) {
  auto w = Make(Model(16, "Where", {{"c", DataType::kBool}, {"x", DataType::kInt64}, {"y", DataType::kInt64}},
                      DataType::kInt64));
  ASSERT_TRUE(w);
  Shape shape;
  auto y = RunOut<int64_t>(*w, {{"c", Bool({2, 1}, {1, 0})}, {"x", I64({3}, {1, 2, 3})}, {"y", I64({1}, {9})}}, &shape);
  EXPECT_EQ(shape, (Shape{2, 3}));
  EXPECT_EQ(y, (std::vector<int64_t>{1, 2, 3, 9, 9, 9}));

  auto a = Make(Model(14, "Add", {{"a", DataType::kFloat16}, {"b", DataType::kFloat16}}, DataType::kFloat16));
  ASSERT_TRUE(a);
  Tensor h1 = Tensor::FromVector<uint16_t>(DataType::kFloat16, {2}, {FloatToHalf(1.5f), FloatToHalf(-2.0f)});
  Tensor h2 = Tensor::FromVector<uint16_t>(DataType::kFloat16, {1}, {FloatToHalf(0.25f)});
  auto h = RunOut<uint16_t>(*a, {{"a", h1}, {"b", h2}});
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(HalfToFloat(h[0]), 1.75f);
  EXPECT_EQ(HalfToFloat(h[1]), -1.75f);
}

}  // namespace
}  // namespace inferloop
