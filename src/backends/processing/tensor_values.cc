#include "backends/processing/tensor_values.h"

#include "base/float_types.h"

namespace inferloop::backends {

Result<std::vector<double>> NumericValues(const Tensor& t) {
  const int64_t n = t.size();
  std::vector<double> v(static_cast<size_t>(n));
  auto copy = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(p[i]);
  };
  switch (t.dtype()) {
    case DataType::kFloat: copy(t.data<float>()); break;
    case DataType::kDouble: copy(t.data<double>()); break;
    case DataType::kInt8: copy(t.data<int8_t>()); break;
    case DataType::kUInt8: copy(t.data<uint8_t>()); break;
    case DataType::kInt16: copy(t.data<int16_t>()); break;
    case DataType::kUInt16: copy(t.data<uint16_t>()); break;
    case DataType::kInt32: copy(t.data<int32_t>()); break;
    case DataType::kUInt32: copy(t.data<uint32_t>()); break;
    case DataType::kInt64: copy(t.data<int64_t>()); break;
    case DataType::kUInt64: copy(t.data<uint64_t>()); break;
    case DataType::kBool: copy(t.data<bool>()); break;
    case DataType::kFloat16:
      for (int64_t i = 0; i < n; ++i) v[i] = HalfToFloat(t.data<uint16_t>()[i]);
      break;
    case DataType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) v[i] = BFloat16ToFloat(t.data<uint16_t>()[i]);
      break;
    default:
      return Status::InvalidArgument(std::string(DataTypeName(t.dtype())) + " is not a numeric tensor type");
  }
  return v;
}

}  // namespace inferloop::backends
