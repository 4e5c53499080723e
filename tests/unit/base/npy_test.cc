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


// numpy's fixed-length bytes ('S'): what np.save writes for np.array([b'\xff\xd8a', b'x\x00y'],
// dtype='S4'); numpy reads the values back without their trailing NULs, and so does ParseNpy
// (inner NULs stay). `inferloop perf --input-data` sends such files as BYTES (encoded images).
TEST(Npy, ReadsNumpyBytesStrings) {
  std::string header = "{'descr': '|S4', 'fortran_order': False, 'shape': (2,), }";
  header.append(118 - 1 - header.size(), ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) + header +
                     std::string("\xff\xd8\x61\x00\x78\x00\x79\x00", 8);
  ASSERT_EQ(file.size(), 136u);
  auto t = ParseNpy(file);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->shape(), Shape({2}));
  EXPECT_EQ(t->strings()[0], std::string("\xff\xd8\x61", 3));
  EXPECT_EQ(t->strings()[1], std::string("x\0y", 3));
}

}  // namespace inferloop
