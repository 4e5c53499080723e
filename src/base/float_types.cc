#include "base/float_types.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace inferloop {
namespace {

struct Format {
  int exp_bits, mant_bits, bias;
  bool has_inf;   // e5m2 only
  bool uz;        // "fnuz": no negative zero, 0x80 is NaN
  bool no_nan;    // float4e2m1
};

Format FormatOf(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: return {4, 3, 7, false, false, false};
    case DataType::kFloat8E4M3FNUZ: return {4, 3, 8, false, true, false};
    case DataType::kFloat8E5M2: return {5, 2, 15, true, false, false};
    case DataType::kFloat8E5M2FNUZ: return {5, 2, 16, false, true, false};
    case DataType::kFloat4E2M1: return {2, 1, 1, false, false, true};
    default: return {0, 0, 0, false, false, false};
  }
}

// Decodes a code of format `f`; NaN for NaN codes.
float Decode(const Format& f, uint32_t code) {
  const int nbits = 1 + f.exp_bits + f.mant_bits;
  const uint32_t sign_bit = 1u << (nbits - 1);
  const uint32_t exp_mask = (1u << f.exp_bits) - 1, mant_mask = (1u << f.mant_bits) - 1;
  if (f.uz && code == sign_bit) return std::numeric_limits<float>::quiet_NaN();
  bool neg = code & sign_bit;
  uint32_t e = (code >> f.mant_bits) & exp_mask, m = code & mant_mask;
  float v;
  if (f.has_inf && e == exp_mask) {
    v = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (!f.has_inf && !f.uz && !f.no_nan && e == exp_mask && m == mant_mask) {
    v = std::numeric_limits<float>::quiet_NaN();  // e4m3fn: S.1111.111
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), 1 - f.bias - f.mant_bits);
  } else {
    v = std::ldexp(static_cast<float>(m | (1u << f.mant_bits)), static_cast<int>(e) - f.bias - f.mant_bits);
  }
  return neg ? -v : v;
}

struct Table {
  // Positive finite values by code (codes 0..n-1 are monotonic), and the largest finite code.
  std::array<float, 128> values{};
  int count = 0;
};

Table BuildTable(const Format& f) {
  Table t;
  const int nbits = 1 + f.exp_bits + f.mant_bits;
  const uint32_t half = 1u << (nbits - 1);
  for (uint32_t c = 0; c < half; ++c) {
    float v = Decode(f, c);
    if (!std::isfinite(v)) break;
    t.values[t.count++] = v;
  }
  return t;
}

uint8_t Encode(DataType type, float x, bool saturate) {
  const Format f = FormatOf(type);
  static const Table tables[] = {BuildTable(FormatOf(DataType::kFloat8E4M3FN)),
                                 BuildTable(FormatOf(DataType::kFloat8E4M3FNUZ)),
                                 BuildTable(FormatOf(DataType::kFloat8E5M2)),
                                 BuildTable(FormatOf(DataType::kFloat8E5M2FNUZ)),
                                 BuildTable(FormatOf(DataType::kFloat4E2M1))};
  const Table& t = type == DataType::kFloat4E2M1 ? tables[4] : tables[static_cast<int>(type) - 17];
  const int nbits = 1 + f.exp_bits + f.mant_bits;
  const uint8_t sign_bit = static_cast<uint8_t>(1u << (nbits - 1));
  const uint8_t max_code = static_cast<uint8_t>(t.count - 1);
  uint8_t nan_code = f.uz ? 0x80 : (f.has_inf ? 0x7f : 0x7f);
  if (f.no_nan) nan_code = 0x7;  // float4e2m1 has no NaN; ONNX maps NaN to 0b0111
  const uint8_t inf_code = 0x7c;
  bool neg = std::signbit(x);
  uint8_t s = neg ? sign_bit : 0;
  if (std::isnan(x)) return f.uz || f.no_nan ? nan_code : static_cast<uint8_t>(nan_code | s);
  float a = std::fabs(x);
  auto overflow = [&]() -> uint8_t {
    if (saturate || f.no_nan) return static_cast<uint8_t>(max_code | s);
    if (f.has_inf) return static_cast<uint8_t>(inf_code | s);
    return f.uz ? nan_code : static_cast<uint8_t>(nan_code | s);
  };
  if (std::isinf(a)) {
    if (f.no_nan) return static_cast<uint8_t>(max_code | s);
    if (f.uz) return nan_code;
    return overflow();
  }
  const float maxv = t.values[max_code];
  const float top_ulp = maxv - t.values[max_code - 1];
  if (a >= maxv) {
    // Values below the midpoint to the (unrepresentable) next step round down to max.
    if (a < maxv + top_ulp * 0.5f || (a == maxv + top_ulp * 0.5f && (max_code & 1) == 0)) return static_cast<uint8_t>(max_code | s);
    return overflow();
  }
  // Binary search for the first value >= a.
  const float* begin = t.values.data();
  const float* it = std::lower_bound(begin, begin + t.count, a);
  int hi = static_cast<int>(it - begin);
  uint8_t code;
  if (*it == a || hi == 0) {
    code = static_cast<uint8_t>(hi);
  } else {
    int lo = hi - 1;
    float dlo = a - t.values[lo], dhi = t.values[hi] - a;
    if (dlo < dhi) code = static_cast<uint8_t>(lo);
    else if (dhi < dlo) code = static_cast<uint8_t>(hi);
    else code = static_cast<uint8_t>((lo & 1) == 0 ? lo : hi);
  }
  if (code == 0 && f.uz) return 0;  // no negative zero
  return static_cast<uint8_t>(code | s);
}

}  // namespace

bool IsSmallFloat(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kFloat4E2M1: case DataType::kFloat8E8M0:
      return true;
    default: return false;
  }
}

float SmallFloatToFloat(DataType t, uint8_t code) {
  if (t == DataType::kFloat8E8M0) {
    if (code == 0xff) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(code) - 127);
  }
  return Decode(FormatOf(t), code);
}

uint8_t FloatToSmallFloat(DataType t, float f, bool saturate) {
  if (t == DataType::kFloat8E8M0) {
    // Round up to the next power of two (ONNX's default round_mode "up").
    if (std::isnan(f) || f <= 0.0f) return f == 0.0f ? 0 : 0xff;
    if (std::isinf(f)) return saturate ? 0xfe : 0xff;
    int e;
    float m = std::frexp(f, &e);  // f = m * 2^e, m in [0.5, 1)
    int exp = (m == 0.5f) ? e - 1 : e;
    int code = exp + 127;
    if (code < 0) code = 0;
    if (code > 254) return saturate ? 0xfe : 0xff;
    return static_cast<uint8_t>(code);
  }
  return Encode(t, f, saturate);
}

}  // namespace inferloop
