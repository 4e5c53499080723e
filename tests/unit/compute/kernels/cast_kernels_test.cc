// Focused tests for Cast/CastLike, the shared conversions (tensor_cast, float_types),
// QuantizeLinear/DequantizeLinear and the string kernels: rounding and wrapping edge cases,
// text formats, and attribute / shape validation errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "compute/tensor_cast.h"
#include "inferloop/session.h"
#include "unit/compute/tensor_makers.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;
using testing::IntsAttr;
using testing::OneNodeModel;
using testing::StrAttr;

using testing::F32;
using testing::Str;



Result<std::unique_ptr<Session>> Create(const std::string& bytes) {
  return Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{});
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

TEST(FloatTypes, RoundingAndSpecialValues) {
  // double -> float16 rounds once: just above the tie must round up (float32 would lose it).
  EXPECT_EQ(DoubleToHalf(1.0 + 1.0 / 2048 + 1e-12), 0x3c01);
  EXPECT_EQ(DoubleToHalf(1.0 + 1.0 / 2048), 0x3c00);
  EXPECT_EQ(DoubleToHalf(65520.0), 0x7c00);
  // float8e4m3fn: 464 is the tie between 448 and (NaN) 480 and stays finite; beyond saturates or is NaN.
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E4M3FN, 464.0f, false), 0x7e);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E4M3FN, 465.0f, false), 0x7f);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E4M3FN, -INFINITY, true), 0xfe);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E5M2, INFINITY, false), 0x7c);
  // fnuz: no negative zero; NaN is 0x80 and decodes with the sign set.
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E4M3FNUZ, -0.0f), 0x00);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E5M2FNUZ, NAN), 0x80);
  EXPECT_TRUE(std::isnan(SmallFloatToFloat(DataType::kFloat8E4M3FNUZ, 0x80)));
  // float4e2m1 saturates, ties to even (5 -> 4, 0.25 -> 0).
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat4E2M1, 1e6f, false), 0x7);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat4E2M1, 5.0f), 0x6);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat4E2M1, 0.25f), 0x0);
  // float8e8m0: powers of two; the rounding mode picks the neighbour.
  EXPECT_EQ(FloatToFloat8E8M0(1.1f, true, E8M0Rounding::kUp), 128);
  EXPECT_EQ(FloatToFloat8E8M0(1.1f, true, E8M0Rounding::kDown), 127);
  EXPECT_EQ(FloatToFloat8E8M0(1.4f, true, E8M0Rounding::kNearest), 127);
  EXPECT_EQ(FloatToFloat8E8M0(1.5f, true, E8M0Rounding::kNearest), 128);
  EXPECT_EQ(FloatToFloat8E8M0(0.0f), 0);
  EXPECT_EQ(FloatToFloat8E8M0(3e38f, true), 0xfe);
  EXPECT_EQ(FloatToFloat8E8M0(3e38f, false), 0xff);
  EXPECT_EQ(SmallFloatToFloat(DataType::kFloat8E8M0, 127), 1.0f);
}

TEST(TensorCast, IntegersWrapAndFloatsTruncate) {
  auto r = CastTensor(Tensor::FromVector<int16_t>(DataType::kInt16, {2}, {200, -129}), DataType::kInt8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int8_t>(*r), (std::vector<int8_t>{-56, 127}));
  r = CastTensor(F32({5}, {-9, 8, 15, 2.7f, -2.7f}), DataType::kInt4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int8_t>(*r), (std::vector<int8_t>{7, -8, -1, 2, -2}));
  r = CastTensor(F32({3}, {-1, 3, 300.5f}), DataType::kUInt8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>(*r), (std::vector<uint8_t>{255, 3, 44}));
  r = CastTensor(F32({3}, {0.0f, -0.0f, NAN}), DataType::kBool);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>(*r), (std::vector<uint8_t>{0, 0, 1}));
  r = CastTensor(Tensor::FromVector<uint64_t>(DataType::kUInt64, {1}, {18446744073709551615ull}), DataType::kFloat);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data<float>()[0], 18446744073709551616.0f);
}

TEST(TensorCast, StringsRoundTrip) {
  auto r = CastTensor(Str({7}, {"1e-5", "INF", "-inf", "NaN", "+3.5", " 2E2 ", "-0"}), DataType::kFloat);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const float* f = r->data<float>();
  EXPECT_EQ(f[0], 1e-5f);
  EXPECT_TRUE(std::isinf(f[1]) && f[1] > 0);
  EXPECT_TRUE(std::isinf(f[2]) && f[2] < 0);
  EXPECT_TRUE(std::isnan(f[3]));
  EXPECT_EQ(f[4], 3.5f);
  EXPECT_EQ(f[5], 200.0f);
  EXPECT_TRUE(std::signbit(f[6]));
  r = CastTensor(Str({3}, {"100.5", "-7", "9223372036854775807"}), DataType::kInt64);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int64_t>(*r), (std::vector<int64_t>{100, -7, INT64_MAX}));
  r = CastTensor(Str({3}, {"true", "False", "0.0"}), DataType::kBool);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>(*r), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_FALSE(CastTensor(Str({1}, {"Hello"}), DataType::kFloat).ok());
  EXPECT_FALSE(CastTensor(Str({1}, {""}), DataType::kInt32).ok());

  r = CastTensor(F32({11}, {0.1f, 314.15926f, 1e-7f, NAN, INFINITY, -INFINITY, 1e6f, 1e-4f, 1e20f, -123.25f, 0.0f}),
                 DataType::kString);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::vector<std::string>(r->strings(), r->strings() + 11),
            (std::vector<std::string>{"0.1", "314.15927", "1e-07", "NaN", "INF", "-INF", "1000000", "0.0001", "1e+20",
                                      "-123.25", "0"}));
  r = CastTensor(Tensor::FromVector<double>(DataType::kDouble, {1}, {0.1}), DataType::kString);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->strings()[0], "0.1");
}

TEST(CastKernel, AttributesAreValidated) {
  // Cast-1 names the type in a string.
  auto s = Create(OneNodeModel(1, "Cast", {{"x", DataType::kFloat}}, {{"y", DataType::kInt32}},
                        [](onnxpb::NodeProto& n) { StrAttr(n, "to", "INT32"); }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({2}, {1.9f, -1.9f})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<int32_t>((*r)[0].second.tensor()), (std::vector<int32_t>{1, -1}));

  auto bad = Create(OneNodeModel(13, "Cast", {{"x", DataType::kFloat}}, {{"y", DataType::kInt32}},
                          [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "to", 99); }));
  EXPECT_FALSE(bad.ok());
  bad = Create(OneNodeModel(13, "Cast", {{"x", DataType::kFloat}}, {{"y", DataType::kInt32}}));
  EXPECT_FALSE(bad.ok());
  bad = Create(OneNodeModel(25, "Cast", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat8E8M0}}, [](onnxpb::NodeProto& n) {
    ModelBuilder::IntAttr(n, "to", static_cast<int>(DataType::kFloat8E8M0));
    StrAttr(n, "round_mode", "sideways");
  }));
  EXPECT_FALSE(bad.ok());
}

std::string QuantModel(int64_t opset, const std::string& op, DataType x, DataType scale, DataType zp, DataType y,
                       const std::function<void(onnxpb::NodeProto&)>& attrs = nullptr) {
  return OneNodeModel(opset, op, {{"x", x}, {"s", scale}, {"z", zp}}, {{"y", y}}, attrs);
}

TEST(QuantizeKernels, RoundsSaturatesAndValidatesShapes) {
  auto s = Create(QuantModel(21, "QuantizeLinear", DataType::kFloat, DataType::kFloat, DataType::kInt8, DataType::kInt8));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto zp = Tensor::FromVector<int8_t>(DataType::kInt8, {}, {1});
  // Ties to even, then the zero point, then saturation.
  auto r = (*s)->Run({{"x", F32({5}, {2.5f, 3.5f, -2.5f, 1000, -1000})}, {"s", F32({}, {1})}, {"z", zp}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<int8_t>((*r)[0].second.tensor()), (std::vector<int8_t>{3, 5, -1, 127, -128}));
  // Per-axis scale of the wrong length.
  r = (*s)->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})},
                 {"s", F32({2}, {1, 2})},
                 {"z", Tensor::FromVector<int8_t>(DataType::kInt8, {2}, {0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // Zero point shape differing from the scale's.
  r = (*s)->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})},
                 {"s", F32({3}, {1, 2, 3})},
                 {"z", Tensor::FromVector<int8_t>(DataType::kInt8, {2}, {0, 0})}});
  ASSERT_FALSE(r.ok());

  // Blocked: axis 1, block 2 on a [2, 3] input needs a [2, 2] scale.
  auto b = Create(OneNodeModel(21, "DequantizeLinear", {{"x", DataType::kInt8}, {"s", DataType::kFloat}}, {{"y", DataType::kFloat}},
                        [](onnxpb::NodeProto& n) {
                          ModelBuilder::IntAttr(n, "axis", 1);
                          ModelBuilder::IntAttr(n, "block_size", 2);
                        }));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto x = Tensor::FromVector<int8_t>(DataType::kInt8, {2, 3}, {1, 1, 1, 1, 1, 1});
  r = (*b)->Run({{"x", x}, {"s", F32({2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<float>((*r)[0].second.tensor()), (std::vector<float>{1, 1, 2, 3, 3, 4}));
  r = (*b)->Run({{"x", x}, {"s", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  // Out-of-range axis.
  auto a = Create(OneNodeModel(13, "DequantizeLinear", {{"x", DataType::kUInt8}, {"s", DataType::kFloat}}, {{"y", DataType::kFloat}},
                        [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "axis", 5); }));
  ASSERT_TRUE(a.ok());
  r = (*a)->Run({{"x", Tensor::FromVector<uint8_t>(DataType::kUInt8, {2}, {1, 2})}, {"s", F32({2}, {1, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("axis"), std::string::npos) << r.status().ToString();
}

TEST(StringKernels, SplitNormalizeAndRegex) {
  auto sp = Create(OneNodeModel(20, "StringSplit", {{"x", DataType::kString}}, {{"y", DataType::kString}, {"n", DataType::kInt64}},
                         [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "maxsplit", 1); }));
  ASSERT_TRUE(sp.ok()) << sp.status().ToString();
  auto r = (*sp)->Run({{"x", Str({2}, {"  a  b c ", ""})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(std::vector<std::string>(y.strings(), y.strings() + 4), (std::vector<std::string>{"a", "b c ", "", ""}));
  EXPECT_EQ(Values<int64_t>((*r)[1].second.tensor()), (std::vector<int64_t>{2, 0}));

  auto norm = Create(OneNodeModel(10, "StringNormalizer", {{"x", DataType::kString}}, {{"y", DataType::kString}},
                           [](onnxpb::NodeProto& n) {
                             StrAttr(n, "case_change_action", "UPPER");
                             auto* a = n.add_attribute();
                             a->set_name("stopwords");
                             a->set_type(onnxpb::AttributeProto::STRINGS);
                             a->add_strings("THE");
                           }));
  ASSERT_TRUE(norm.ok()) << norm.status().ToString();
  r = (*norm)->Run({{"x", Str({1, 3}, {"the", "caf\xc3\xa9", "The"})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& ny = (*r)[0].second.tensor();
  EXPECT_EQ(ny.shape(), (Shape{1, 1}));
  EXPECT_EQ(ny.strings()[0], "CAF\xc3\x89");
  r = (*norm)->Run({{"x", Str({2, 2}, {"a", "b", "c", "d"})}});
  EXPECT_FALSE(r.ok());
  auto bad = Create(OneNodeModel(10, "StringNormalizer", {{"x", DataType::kString}}, {{"y", DataType::kString}},
                          [](onnxpb::NodeProto& n) { StrAttr(n, "case_change_action", "TITLE"); }));
  EXPECT_FALSE(bad.ok());

  auto re = Create(OneNodeModel(20, "RegexFullMatch", {{"x", DataType::kString}}, {{"y", DataType::kBool}},
                         [](onnxpb::NodeProto& n) { StrAttr(n, "pattern", "(?P<w>.)\\d{2}"); }));
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  // '.' matches one code point, not one byte.
  r = (*re)->Run({{"x", Str({3}, {"\xe7\x9a\x84" "12", "ab12", "x1"})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<uint8_t>((*r)[0].second.tensor()), (std::vector<uint8_t>{1, 0, 0}));
  bad = Create(OneNodeModel(20, "RegexFullMatch", {{"x", DataType::kString}}, {{"y", DataType::kBool}},
                     [](onnxpb::NodeProto& n) { StrAttr(n, "pattern", "(a"); }));
  EXPECT_FALSE(bad.ok());
  bad = Create(OneNodeModel(20, "RegexFullMatch", {{"x", DataType::kString}}, {{"y", DataType::kBool}},
                     [](onnxpb::NodeProto& n) { StrAttr(n, "pattern", "(a)\\1"); }));
  EXPECT_FALSE(bad.ok());
  // Long input: no deep recursion.
  auto many = Create(OneNodeModel(20, "RegexFullMatch", {{"x", DataType::kString}}, {{"y", DataType::kBool}},
                           [](onnxpb::NodeProto& n) { StrAttr(n, "pattern", "(a|b)*c"); }));
  ASSERT_TRUE(many.ok());
  r = (*many)->Run({{"x", Str({1}, {std::string(200000, 'a') + "c"})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<uint8_t>()[0], 1);
}

}  // namespace
}  // namespace inferloop
