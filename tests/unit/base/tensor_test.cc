#include "inferloop/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/float_types.h"
#include "base/uninitialized_tensor.h"

namespace inferloop {

TEST(Tensor, CreateIsZeroFilled) {
  auto t = Tensor::Create(DataType::kFloat, {2, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 6);
  EXPECT_EQ(t->nbytes(), 24u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t->data<float>()[i], 0.0f);
}

// Small tensors share one block with their bookkeeping, large ones get their own: both are
// 64-byte aligned and zeroed, every byte of them writable (ASan checks the block's bounds), and a
// string tensor is still constructed empty.
TEST(Tensor, CreateIsAlignedZeroedAndWritableAtEverySize) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{1000},
                    int64_t{(1 << 20) / 4 - 16}, int64_t{(1 << 20) / 4}, int64_t{(1 << 20) / 4 + 1}}) {
    auto t = Tensor::Create(DataType::kFloat, {n});
    ASSERT_TRUE(t.ok()) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % 64, 0u) << n;
    EXPECT_EQ(t->buffer_use_count(), 1);
    float* d = t->data<float>();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(d[i], 0.0f) << n << " " << i;
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(i);
    Tensor copy = *t;  // shares the block; it outlives the first handle
    *t = Tensor();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(copy.data<float>()[i], static_cast<float>(i));
  }
  auto s = Tensor::Create(DataType::kString, {2});
  ASSERT_TRUE(s.ok());
  s->strings()[1] = std::string(100, 'x');
  EXPECT_EQ(s->strings()[0], "");
}

TEST(Tensor, UninitializedHasCreatesLimitsAlignmentAndErrors) {
  auto t = CreateUninitializedTensor(DataType::kFloat, {2, 3});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->size(), 6);
  EXPECT_EQ(t->nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % 64, 0u);
  EXPECT_EQ(t->buffer_use_count(), 1);  // owned by the tensor alone: a bound output may reuse it
  auto big = CreateUninitializedTensor(DataType::kFloat, {int64_t{1} << 40}, size_t{1} << 30);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(big.status().message(), Tensor::Create(DataType::kFloat, {int64_t{1} << 40}, size_t{1} << 30).status().message());
  EXPECT_EQ(CreateUninitializedTensor(DataType::kFloat, {2, -1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateUninitializedTensor(DataType::kUndefined, {2}).status().code(), StatusCode::kInvalidArgument);
  auto s = CreateUninitializedTensor(DataType::kString, {3});  // strings are constructed, empty
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s->strings()[i], "");
}

TEST(Tensor, RefusesOversizedAllocationBeforeAllocating) {
  auto t = Tensor::Create(DataType::kFloat, {int64_t{1} << 40}, size_t{1} << 30);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find("[1099511627776]"), std::string::npos);
}

TEST(Tensor, RefusesOverflowingShape) {
  auto t = Tensor::Create(DataType::kFloat, {int64_t{1} << 40, int64_t{1} << 40});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
}

TEST(Tensor, RefusesNegativeDim) {
  auto t = Tensor::Create(DataType::kFloat, {2, -1});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(Tensor, ReshapeSharesBufferAndChecksCount) {
  auto t = Tensor::FromVector<float>(DataType::kFloat, {2, 2}, {1, 2, 3, 4});
  auto r = t.Reshaped({4});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->raw_data(), t.raw_data());
  EXPECT_FALSE(t.Reshaped({3}).ok());
}

TEST(FloatTypes, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) EXPECT_EQ(HalfToFloat(FloatToHalf(f)), f);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);  // tie rounds to even
}

TEST(FloatTypes, Float8E4M3FN) {
  EXPECT_EQ(SmallFloatToFloat(DataType::kFloat8E4M3FN, 0x7e), 448.0f);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E4M3FN, 448.0f), 0x7e);
  EXPECT_EQ(FloatToSmallFloat(DataType::kFloat8E4M3FN, 1000.0f, true), 0x7e);
  EXPECT_TRUE(std::isnan(SmallFloatToFloat(DataType::kFloat8E4M3FN, FloatToSmallFloat(DataType::kFloat8E4M3FN, 1000.0f, false))));
  EXPECT_EQ(SmallFloatToFloat(DataType::kFloat8E5M2, FloatToSmallFloat(DataType::kFloat8E5M2, 1.0f)), 1.0f);
  EXPECT_EQ(SmallFloatToFloat(DataType::kFloat4E2M1, FloatToSmallFloat(DataType::kFloat4E2M1, 2.9f)), 3.0f);
}

TEST(Tensor, ShapeToStringWritesDimsInBrackets) {
  EXPECT_EQ(ShapeToString(Shape{}), "[]");
  EXPECT_EQ(ShapeToString(Shape{1, 16}), "[1,16]");
  EXPECT_EQ(ShapeToString(Shape{-1, 0, 3}), "[-1,0,3]");
  EXPECT_EQ(ShapeToString(Shape{INT64_MIN, INT64_MAX}), "[-9223372036854775808,9223372036854775807]");
  EXPECT_EQ(ShapeToString(Shape{1, 2, 3, 4, 5, 6, 7, 8, 9}), "[1,2,3,4,5,6,7,8,9]");  // past the inline rank
}

}  // namespace inferloop
