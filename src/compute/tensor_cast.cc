#include "compute/tensor_cast.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/c_locale_number.h"
#include "base/float_types.h"
#include "base/status_macros.h"

namespace inferloop {
namespace {

// Float -> integer: truncate toward zero and return the two's complement bits, which the caller
// narrows (wraps) to the target width. NaN, infinities and values outside int64 (uint64 for
// non-negative values) give INT64_MIN's pattern, like x86's conversion instructions.
uint64_t FloatingToBits(double d) {
  const double t = std::trunc(d);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<uint64_t>(static_cast<int64_t>(t));
  if (t >= 9223372036854775808.0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
  return uint64_t{1} << 63;
}

// The integer bits of `v` (any of the source value types), two's complement.
template <typename V>
uint64_t IntegerBits(V v) {
  if constexpr (std::is_floating_point_v<V>) return FloatingToBits(static_cast<double>(v));
  else return static_cast<uint64_t>(v);
}

template <typename V>
double AsDouble(V v) {
  return static_cast<double>(v);
}

// Shortest decimal digits that read back to the same value, laid out like printf's %g with a
// precision of 9 (float) / 17 (double) significant digits: positional unless the decimal
// exponent is below -4 or at least that precision ("1000000", "0.0001", "1e-07", "1e+20").
std::string FormatFloating(double v, bool single) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  std::to_chars_result r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::scientific)
                                  : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // "-d.ddde+XX"
  const size_t epos = sci.find('e');
  if (epos == std::string::npos) return sci;
  const int exp10 = std::atoi(sci.c_str() + epos + 1);
  const int precision = single ? 9 : 17;
  if (exp10 < -4 || exp10 >= precision) return sci;
  std::string out;
  size_t k = 0;
  if (sci[0] == '-') {
    out += '-';
    k = 1;
  }
  std::string digits;
  for (size_t i = k; i < epos; ++i)
    if (sci[i] != '.') digits += sci[i];
  if (exp10 < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp10 - 1), '0');
    out += digits;
  } else {
    const size_t int_len = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_len) {
      out += digits;
      out.append(int_len - digits.size(), '0');
    } else {
      out.append(digits, 0, int_len);
      out += '.';
      out.append(digits, int_len, std::string::npos);
    }
  }
  return out;
}

// How the source's values are presented to the writers.
enum class SrcKind { kFloat, kDouble, kSigned, kUnsigned, kBool };

// Writes elements [begin, end) of `dst` from get(i), a value of type V.
template <typename V, typename Get>
Status WriteRange(Tensor& dst, int64_t begin, int64_t end, Get get, const CastOptions& o, SrcKind kind) {
  const DataType to = dst.dtype();
  auto fill = [&](auto* p, auto conv) {
    for (int64_t i = begin; i < end; ++i) p[i] = conv(get(i));
  };
  switch (to) {
    case DataType::kFloat: fill(dst.data<float>(), [](V v) { return static_cast<float>(v); }); break;
    case DataType::kDouble: fill(dst.data<double>(), [](V v) { return static_cast<double>(v); }); break;
    case DataType::kInt8: fill(dst.data<int8_t>(), [](V v) { return static_cast<int8_t>(IntegerBits(v)); }); break;
    case DataType::kInt16: fill(dst.data<int16_t>(), [](V v) { return static_cast<int16_t>(IntegerBits(v)); }); break;
    case DataType::kInt32: fill(dst.data<int32_t>(), [](V v) { return static_cast<int32_t>(IntegerBits(v)); }); break;
    case DataType::kInt64: fill(dst.data<int64_t>(), [](V v) { return static_cast<int64_t>(IntegerBits(v)); }); break;
    case DataType::kUInt8: fill(dst.data<uint8_t>(), [](V v) { return static_cast<uint8_t>(IntegerBits(v)); }); break;
    case DataType::kUInt16: fill(dst.data<uint16_t>(), [](V v) { return static_cast<uint16_t>(IntegerBits(v)); }); break;
    case DataType::kUInt32: fill(dst.data<uint32_t>(), [](V v) { return static_cast<uint32_t>(IntegerBits(v)); }); break;
    case DataType::kUInt64: fill(dst.data<uint64_t>(), [](V v) { return IntegerBits(v); }); break;
    case DataType::kBool: fill(dst.data<uint8_t>(), [](V v) { return static_cast<uint8_t>(v != 0 ? 1 : 0); }); break;
    case DataType::kInt4:
      fill(dst.data<int8_t>(), [](V v) { return static_cast<int8_t>(static_cast<int>((IntegerBits(v) & 0xf) ^ 0x8) - 8); });
      break;
    case DataType::kUInt4: fill(dst.data<uint8_t>(), [](V v) { return static_cast<uint8_t>(IntegerBits(v) & 0xf); }); break;
    case DataType::kInt2:
      fill(dst.data<int8_t>(), [](V v) { return static_cast<int8_t>(static_cast<int>((IntegerBits(v) & 0x3) ^ 0x2) - 2); });
      break;
    case DataType::kUInt2: fill(dst.data<uint8_t>(), [](V v) { return static_cast<uint8_t>(IntegerBits(v) & 0x3); }); break;
    case DataType::kFloat16:
      if constexpr (std::is_same_v<V, float>) fill(dst.data<uint16_t>(), [](V v) { return FloatToHalf(v); });
      else fill(dst.data<uint16_t>(), [](V v) { return DoubleToHalf(AsDouble(v)); });
      break;
    case DataType::kBFloat16:
      if constexpr (std::is_same_v<V, float>) fill(dst.data<uint16_t>(), [](V v) { return FloatToBFloat16(v); });
      else fill(dst.data<uint16_t>(), [](V v) { return DoubleToBFloat16(AsDouble(v)); });
      break;
    case DataType::kFloat8E8M0: {
      // Like ONNX, values reach float8e8m0 through float32.
      const bool sat = o.saturate;
      const E8M0Rounding mode = o.round_mode;
      fill(dst.data<uint8_t>(), [=](V v) { return FloatToFloat8E8M0(static_cast<float>(v), sat, mode); });
      break;
    }
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kFloat4E2M1: {
      const bool sat = o.saturate;
      if constexpr (std::is_same_v<V, float>) fill(dst.data<uint8_t>(), [=](V v) { return FloatToSmallFloat(to, v, sat); });
      else fill(dst.data<uint8_t>(), [=](V v) { return DoubleToSmallFloat(to, AsDouble(v), sat); });
      break;
    }
    case DataType::kString: {
      std::string* p = dst.strings();
      for (int64_t i = begin; i < end; ++i) {
        V v = get(i);
        if (kind == SrcKind::kBool) p[i] = v != 0 ? "1" : "0";
        else if constexpr (std::is_floating_point_v<V>) p[i] = FormatFloating(v, kind == SrcKind::kFloat);
        else p[i] = std::to_string(v);
      }
      break;
    }
    default:
      return Status::Unimplemented(std::string("Cast to ") + DataTypeName(to) + " is not supported");
  }
  return Status::Ok();
}

// ---- string -> number ----

struct ParsedNumber {
  enum Kind { kSigned, kUnsigned, kDouble } kind = kDouble;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    char x = a[k], y = b[k];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

bool ParseNumber(std::string_view text, ParsedNumber& out) {
  std::string_view s = Trim(text);
  if (s.empty()) return false;
  bool neg = false;
  std::string_view body = s;
  if (body.front() == '+' || body.front() == '-') {
    neg = body.front() == '-';
    body.remove_prefix(1);
  }
  if (EqualsNoCase(body, "nan")) {
    out.kind = ParsedNumber::kDouble;
    out.d = neg ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (EqualsNoCase(body, "inf") || EqualsNoCase(body, "infinity")) {
    out.kind = ParsedNumber::kDouble;
    out.d = neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (body.empty() || body.front() == '+' || body.front() == '-') return false;
  const char* first = body.data();
  const char* last = body.data() + body.size();
  // Integer text, read exactly.
  if (neg) {
    int64_t v;
    auto r = std::from_chars(s.data(), last, v);  // s starts at the '-'
    if (r.ec == std::errc() && r.ptr == last && v != 0) {  // "-0" is read as a double: -0.0
      out.kind = ParsedNumber::kSigned;
      out.i = v;
      return true;
    }
  } else {
    uint64_t v;
    auto r = std::from_chars(first, last, v);
    if (r.ec == std::errc() && r.ptr == last) {
      out.kind = ParsedNumber::kUnsigned;
      out.u = v;
      return true;
    }
  }
  // Decimal or scientific text.
  double d;
  auto r = std::from_chars(first, last, d, std::chars_format::general);
  if (r.ptr != last || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) return false;
  if (r.ec == std::errc::result_out_of_range) {
    std::string copy(body);
    d = StrtodC(copy.c_str(), nullptr);  // +-HUGE_VAL or a (sub)normal underflow
  }
  out.kind = ParsedNumber::kDouble;
  out.d = neg ? -d : d;
  return true;
}

Status CastFromString(const Tensor& src, Tensor& dst, const CastOptions& o) {
  const int64_t n = src.size();
  const std::string* in = src.strings();
  for (int64_t i = 0; i < n; ++i) {
    const std::string& s = in[i];
    if (dst.dtype() == DataType::kBool) {
      std::string_view t = Trim(s);
      if (EqualsNoCase(t, "true")) { dst.data<uint8_t>()[i] = 1; continue; }
      if (EqualsNoCase(t, "false")) { dst.data<uint8_t>()[i] = 0; continue; }
    }
    ParsedNumber p;
    if (!ParseNumber(s, p))
      return Status::InvalidArgument("Cast: cannot convert string '" + s.substr(0, 64) + "' to " + DataTypeName(dst.dtype()));
    Status st;
    switch (p.kind) {
      case ParsedNumber::kSigned: st = WriteRange<int64_t>(dst, i, i + 1, [&](int64_t) { return p.i; }, o, SrcKind::kSigned); break;
      case ParsedNumber::kUnsigned: st = WriteRange<uint64_t>(dst, i, i + 1, [&](int64_t) { return p.u; }, o, SrcKind::kUnsigned); break;
      case ParsedNumber::kDouble: st = WriteRange<double>(dst, i, i + 1, [&](int64_t) { return p.d; }, o, SrcKind::kDouble); break;
    }
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

template <typename T>
Status FromIntegers(const Tensor& src, Tensor& dst, const CastOptions& o) {
  const T* p = src.data<T>();
  if constexpr (std::is_signed_v<T>)
    return WriteRange<int64_t>(dst, 0, src.size(), [p](int64_t i) { return static_cast<int64_t>(p[i]); }, o, SrcKind::kSigned);
  else
    return WriteRange<uint64_t>(dst, 0, src.size(), [p](int64_t i) { return static_cast<uint64_t>(p[i]); }, o, SrcKind::kUnsigned);
}

}  // namespace

Status CastInto(const Tensor& src, Tensor& dst, const CastOptions& o) {
  if (src.size() != dst.size())
    return Status::InvalidArgument("Cast: destination has " + std::to_string(dst.size()) + " elements, source " +
                                   std::to_string(src.size()));
  const DataType from = src.dtype(), to = dst.dtype();
  const int64_t n = src.size();
  if (from == to) {
    if (from == DataType::kString) {
      for (int64_t i = 0; i < n; ++i) dst.strings()[i] = src.strings()[i];
    } else if (n > 0) {
      std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    }
    return Status::Ok();
  }
  if (from == DataType::kString) return CastFromString(src, dst, o);
  switch (from) {
    case DataType::kFloat: {
      const float* p = src.data<float>();
      return WriteRange<float>(dst, 0, n, [p](int64_t i) { return p[i]; }, o, SrcKind::kFloat);
    }
    case DataType::kDouble: {
      const double* p = src.data<double>();
      return WriteRange<double>(dst, 0, n, [p](int64_t i) { return p[i]; }, o, SrcKind::kDouble);
    }
    case DataType::kFloat16: {
      const uint16_t* p = src.data<uint16_t>();
      return WriteRange<float>(dst, 0, n, [p](int64_t i) { return HalfToFloat(p[i]); }, o, SrcKind::kFloat);
    }
    case DataType::kBFloat16: {
      const uint16_t* p = src.data<uint16_t>();
      return WriteRange<float>(dst, 0, n, [p](int64_t i) { return BFloat16ToFloat(p[i]); }, o, SrcKind::kFloat);
    }
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kFloat4E2M1: case DataType::kFloat8E8M0: {
      const uint8_t* p = src.data<uint8_t>();
      return WriteRange<float>(dst, 0, n, [p, from](int64_t i) { return SmallFloatToFloat(from, p[i]); }, o, SrcKind::kFloat);
    }
    case DataType::kBool: {
      const uint8_t* p = src.data<uint8_t>();
      return WriteRange<uint64_t>(dst, 0, n, [p](int64_t i) { return static_cast<uint64_t>(p[i] != 0); }, o, SrcKind::kBool);
    }
    case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: return FromIntegers<int8_t>(src, dst, o);
    case DataType::kInt16: return FromIntegers<int16_t>(src, dst, o);
    case DataType::kInt32: return FromIntegers<int32_t>(src, dst, o);
    case DataType::kInt64: return FromIntegers<int64_t>(src, dst, o);
    case DataType::kUInt8: case DataType::kUInt4: case DataType::kUInt2: return FromIntegers<uint8_t>(src, dst, o);
    case DataType::kUInt16: return FromIntegers<uint16_t>(src, dst, o);
    case DataType::kUInt32: return FromIntegers<uint32_t>(src, dst, o);
    case DataType::kUInt64: return FromIntegers<uint64_t>(src, dst, o);
    default:
      return Status::Unimplemented(std::string("Cast from ") + DataTypeName(from) + " is not supported");
  }
}

Result<Tensor> CastTensor(const Tensor& src, DataType to, const CastOptions& options) {
  if (src.dtype() == to) return src;
  IL_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(to, src.shape()));
  IL_RETURN_IF_ERROR(CastInto(src, out, options));
  return out;
}

Result<Tensor> CastTensor(const Tensor& src, DataType to, bool saturate) {
  CastOptions o;
  o.saturate = saturate;
  return CastTensor(src, to, o);
}

Result<Tensor> ToFloat32(const Tensor& src) {
  if (src.dtype() == DataType::kFloat) return src;
  return CastTensor(src, DataType::kFloat);
}

}  // namespace inferloop
