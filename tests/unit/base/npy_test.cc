#include "base/npy.h"

#include <gtest/gtest.h>

namespace inferloop {

TEST(Npy, RoundTripsNumericAndStrings) {
  auto t = Tensor::FromVector<int32_t>(DataType::kInt32, {2, 3}, {1, -2, 3, 4, 5, 6});
  auto bytes = SerializeNpy(t);
  ASSERT_TRUE(bytes.ok());
  auto back = ParseNpy(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->shape(), t.shape());
  EXPECT_EQ(back->data<int32_t>()[1], -2);
  Tensor s = Tensor::FromStrings({2}, {"héllo", "x"});
  auto sb = SerializeNpy(s);
  ASSERT_TRUE(sb.ok());
  auto sback = ParseNpy(*sb);
  ASSERT_TRUE(sback.ok());
  EXPECT_EQ(sback->strings()[0], "héllo");
  EXPECT_EQ(sback->strings()[1], "x");
}

TEST(Npy, RejectsTruncatedAndGarbage) {
  auto t = Tensor::FromVector<float>(DataType::kFloat, {4}, {1, 2, 3, 4});
  std::string bytes = *SerializeNpy(t);
  EXPECT_FALSE(ParseNpy(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(ParseNpy("hello world").ok());
  EXPECT_FALSE(ParseNpy(bytes.substr(0, 12)).ok());
}

TEST(Npy, ScalarShape) {
  auto t = Tensor::FromVector<double>(DataType::kDouble, {}, {2.5});
  auto back = ParseNpy(*SerializeNpy(t));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->rank(), 0);
  EXPECT_EQ(back->data<double>()[0], 2.5);
}

}  // namespace inferloop
