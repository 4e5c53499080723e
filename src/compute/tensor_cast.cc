#include "compute/tensor_cast.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "base/float_types.h"

namespace inferloop {
namespace {

bool IsIntegral(DataType t) {
  switch (t) {
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
    case DataType::kBool: case DataType::kInt4: case DataType::kUInt4: case DataType::kInt2: case DataType::kUInt2:
      return true;
    default: return false;
  }
}

double ReadAsDouble(const Tensor& t, int64_t i) {
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::kFloat: return static_cast<const float*>(p)[i];
    case DataType::kDouble: return static_cast<const double*>(p)[i];
    case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: return static_cast<const int8_t*>(p)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DataType::kUInt8: case DataType::kUInt4: case DataType::kUInt2: return static_cast<const uint8_t*>(p)[i];
    case DataType::kBool: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
    case DataType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DataType::kUInt32: return static_cast<const uint32_t*>(p)[i];
    case DataType::kUInt64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DataType::kFloat16: return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DataType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(p)[i]);
    default:
      if (IsSmallFloat(t.dtype())) return SmallFloatToFloat(t.dtype(), static_cast<const uint8_t*>(p)[i]);
      return 0;
  }
}

int64_t ReadAsInt64(const Tensor& t, int64_t i) {
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::kInt64: return static_cast<const int64_t*>(p)[i];
    case DataType::kUInt64: return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    case DataType::kUInt32: return static_cast<const uint32_t*>(p)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
    default: return static_cast<int64_t>(ReadAsDouble(t, i));
  }
}

template <typename I>
I SaturatingFromDouble(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void WriteFromDouble(Tensor& t, int64_t i, double v, bool saturate) {
  void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::kFloat: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DataType::kDouble: static_cast<double*>(p)[i] = v; break;
    case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(SaturatingFromDouble<int64_t>(v)); break;
    case DataType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(SaturatingFromDouble<int64_t>(v)); break;
    case DataType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(SaturatingFromDouble<int64_t>(v)); break;
    case DataType::kInt64: static_cast<int64_t*>(p)[i] = SaturatingFromDouble<int64_t>(v); break;
    case DataType::kUInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(SaturatingFromDouble<int64_t>(v)); break;
    case DataType::kUInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(SaturatingFromDouble<int64_t>(v)); break;
    case DataType::kUInt32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(SaturatingFromDouble<int64_t>(v)); break;
    case DataType::kUInt64: static_cast<uint64_t*>(p)[i] = v < 0 ? static_cast<uint64_t>(SaturatingFromDouble<int64_t>(v)) : SaturatingFromDouble<uint64_t>(v); break;
    case DataType::kBool: static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0; break;
    case DataType::kFloat16: static_cast<uint16_t*>(p)[i] = FloatToHalf(static_cast<float>(v)); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(p)[i] = FloatToBFloat16(static_cast<float>(v)); break;
    case DataType::kInt4: {
      double r = std::nearbyint(v);
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(r < -8 ? -8 : r > 7 ? 7 : r);
      break;
    }
    case DataType::kUInt4: {
      double r = std::nearbyint(v);
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(r < 0 ? 0 : r > 15 ? 15 : r);
      break;
    }
    case DataType::kInt2: {
      double r = std::nearbyint(v);
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(r < -2 ? -2 : r > 1 ? 1 : r);
      break;
    }
    case DataType::kUInt2: {
      double r = std::nearbyint(v);
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(r < 0 ? 0 : r > 3 ? 3 : r);
      break;
    }
    default:
      if (IsSmallFloat(t.dtype())) static_cast<uint8_t*>(p)[i] = FloatToSmallFloat(t.dtype(), static_cast<float>(v), saturate);
  }
}

void WriteFromInt64(Tensor& t, int64_t i, int64_t v) {
  void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DataType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(p)[i] = v; break;
    case DataType::kUInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DataType::kUInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DataType::kUInt32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case DataType::kUInt64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case DataType::kBool: static_cast<uint8_t*>(p)[i] = v != 0; break;
    default: WriteFromDouble(t, i, static_cast<double>(v), true);
  }
}

std::string NumberToString(const Tensor& t, int64_t i) {
  if (t.dtype() == DataType::kBool) return t.data<uint8_t>()[i] ? "1" : "0";
  if (IsIntegral(t.dtype())) {
    if (t.dtype() == DataType::kUInt64) return std::to_string(t.data<uint64_t>()[i]);
    return std::to_string(ReadAsInt64(t, i));
  }
  double v = ReadAsDouble(t, i);
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  if (t.dtype() == DataType::kDouble) std::snprintf(buf, sizeof buf, "%.17g", v);
  else std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Result<Tensor> CastTensor(const Tensor& src, DataType to, bool saturate) {
  if (src.dtype() == to) return src;
  IL_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(to, src.shape()));
  const int64_t n = src.size();
  if (src.dtype() == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      const std::string& s = src.strings()[i];
      if (to == DataType::kBool) { WriteFromInt64(out, i, !(s.empty() || s == "0" || s == "false" || s == "False")); continue; }
      if (IsIntegral(to)) {
        char* end = nullptr;
        long long v = std::strtoll(s.c_str(), &end, 10);
        WriteFromInt64(out, i, v);
        continue;
      }
      double v = std::strtod(s.c_str(), nullptr);
      WriteFromDouble(out, i, v, saturate);
    }
    return out;
  }
  if (to == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) out.strings()[i] = NumberToString(src, i);
    return out;
  }
  if (IsIntegral(src.dtype()) && IsIntegral(to)) {
    for (int64_t i = 0; i < n; ++i) WriteFromInt64(out, i, ReadAsInt64(src, i));
    return out;
  }
  if (src.dtype() == DataType::kFloat && to == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = FloatToHalf(src.data<float>()[i]);
    return out;
  }
  for (int64_t i = 0; i < n; ++i) WriteFromDouble(out, i, ReadAsDouble(src, i), saturate);
  return out;
}

Result<Tensor> ToFloat32(const Tensor& src) {
  if (src.dtype() == DataType::kFloat) return src;
  return CastTensor(src, DataType::kFloat);
}

}  // namespace inferloop
