// Sample tensors of every v2 datatype and tensor comparison for the frontends tests.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "inferloop/tensor.h"

namespace inferloop::frontends::testing {

// Every dtype the v2 protocol carries.
inline const std::vector<DataType>& AllV2DataTypes() {
  static const std::vector<DataType> kTypes = {
      DataType::kBool,  DataType::kUInt8, DataType::kUInt16,  DataType::kUInt32,   DataType::kUInt64,
      DataType::kInt8,  DataType::kInt16, DataType::kInt32,   DataType::kInt64,    DataType::kFloat16,
      DataType::kBFloat16, DataType::kFloat, DataType::kDouble, DataType::kString};
  return kTypes;
}

// A [2,3] tensor of `dtype` with distinct values, extremes included where they matter.
inline Tensor SampleTensor(DataType dtype) {
  Shape shape{2, 3};
  if (dtype == DataType::kString) {
    return Tensor::FromStrings(shape, {"", "a", "hello world", "\xc3\xa9t\xc3\xa9", "x\"y\\z", "6"});
  }
  Tensor t = Tensor::Create(dtype, shape).value();
  for (int64_t i = 0; i < 6; ++i) {
    switch (dtype) {
      case DataType::kBool: t.data<uint8_t>()[i] = i % 2; break;
      case DataType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(i == 5 ? 255 : i); break;
      case DataType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(i == 5 ? 65535 : i * 1000); break;
      case DataType::kUInt32: t.data<uint32_t>()[i] = i == 5 ? 4294967295u : static_cast<uint32_t>(i * 100000); break;
      case DataType::kUInt64: t.data<uint64_t>()[i] = i == 5 ? ~uint64_t{0} : static_cast<uint64_t>(i) << 40; break;
      case DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(i == 5 ? -128 : i == 4 ? 127 : -i); break;
      case DataType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(i == 5 ? -32768 : i * -300); break;
      case DataType::kInt32: t.data<int32_t>()[i] = i == 5 ? INT32_MIN : static_cast<int32_t>(i * 70000); break;
      case DataType::kInt64: t.data<int64_t>()[i] = i == 5 ? INT64_MIN : i == 4 ? INT64_MAX : -i; break;
      case DataType::kFloat16: t.data<uint16_t>()[i] = FloatToHalf(0.5f * static_cast<float>(i) - 1.25f); break;
      case DataType::kBFloat16: t.data<uint16_t>()[i] = FloatToBFloat16(3.0f * static_cast<float>(i) - 2.5f); break;
      case DataType::kFloat: t.data<float>()[i] = i == 5 ? 1e-30f : 0.1f * static_cast<float>(i) - 0.3f; break;
      case DataType::kDouble: t.data<double>()[i] = i == 5 ? 1e300 : 0.1 * static_cast<double>(i) - 0.3; break;
      default: break;
    }
  }
  return t;
}

inline void ExpectTensorEq(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(ShapeToString(a.shape()), ShapeToString(b.shape()));
  if (a.dtype() == DataType::kString) {
    for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.strings()[i], b.strings()[i]) << "element " << i;
  } else {
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.nbytes())) << DataTypeName(a.dtype());
  }
}

}  // namespace inferloop::frontends::testing
