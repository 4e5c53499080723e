#include "base/float_types.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace inferloop {
namespace {

// A binary floating-point format narrower than double: 1 sign bit, exponent, mantissa.
struct Format {
  int nbits;           // total width
  int mant_bits;
  int bias;
  uint32_t max_biased;  // exponent field and mantissa of the largest finite value
  uint32_t max_mant;
  bool has_inf;         // IEEE-like: all-ones exponent is inf/NaN (float16, bfloat16, e5m2)
  bool uz;              // "fnuz": no negative zero, the code 1000..0 is the only NaN
  bool no_nan;          // float4e2m1: no NaN and no inf
  uint32_t nan_code;    // positive quiet NaN (uz: the NaN code)
  uint32_t inf_code;    // positive infinity (has_inf only)
};

constexpr Format kHalf{16, 10, 15, 30, 0x3ff, true, false, false, 0x7e00, 0x7c00};
constexpr Format kBFloat16{16, 7, 127, 254, 0x7f, true, false, false, 0x7fc0, 0x7f80};
constexpr Format kE4M3FN{8, 3, 7, 15, 6, false, false, false, 0x7f, 0};
constexpr Format kE4M3FNUZ{8, 3, 8, 15, 7, false, true, false, 0x80, 0};
constexpr Format kE5M2{8, 2, 15, 30, 3, true, false, false, 0x7e, 0x7c};
constexpr Format kE5M2FNUZ{8, 2, 16, 31, 3, false, true, false, 0x80, 0};
constexpr Format kE2M1{4, 1, 1, 3, 1, false, false, true, 0, 0};

const Format* FormatOf(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: return &kE4M3FN;
    case DataType::kFloat8E4M3FNUZ: return &kE4M3FNUZ;
    case DataType::kFloat8E5M2: return &kE5M2;
    case DataType::kFloat8E5M2FNUZ: return &kE5M2FNUZ;
    case DataType::kFloat4E2M1: return &kE2M1;
    default: return nullptr;
  }
}

// Rounds `x` to the nearest value of format `f` (ties to even) and returns its code.
// saturate (or a format without inf/NaN): overflow gives the largest finite value.
uint32_t Encode(const Format& f, double x, bool saturate) {
  const uint32_t sign_bit = 1u << (f.nbits - 1);
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  const bool neg = bits >> 63;
  const uint32_t s = neg ? sign_bit : 0;
  const int exp_field = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  const uint32_t max_code = (f.max_biased << f.mant_bits) | f.max_mant;

  auto overflow = [&]() -> uint32_t {
    if (saturate || f.no_nan) return max_code | s;
    if (f.has_inf) return f.inf_code | s;
    return f.uz ? f.nan_code : (f.nan_code | s);
  };

  if (exp_field == 0x7ff) {
    if (frac == 0) return overflow();  // infinity
    // NaN. float4e2m1 has no NaN: follow ml_dtypes (what ONNX's reference uses), which
    // yields the code 0b1000 for a positive NaN and 0b0000 for a negative one.
    if (f.no_nan) return neg ? 0 : sign_bit;
    return f.uz ? f.nan_code : (f.nan_code | s);
  }
  const uint32_t zero = f.uz ? 0 : s;
  // Double subnormals and zeros are far below half the smallest value of every narrow format.
  if (exp_field == 0) return zero;

  const int emin = 1 - f.bias;              // unbiased exponent of the smallest normal
  const int e = exp_field - 1023;           // unbiased exponent of x
  const uint64_t sig = frac | (uint64_t{1} << 52);  // |x| = sig * 2^(e - 52)
  const int eq = e < emin ? emin : e;       // exponent of the quantum's leading bit
  const int shift = 52 - f.mant_bits + (eq - e);
  uint64_t r;                               // |x| rounded, in units of 2^(eq - mant_bits)
  if (shift >= 64) {
    r = 0;  // below a quarter of the smallest subnormal
  } else {
    r = sig >> shift;
    const uint64_t rem = sig & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
  }
  if (r == 0) return zero;
  int eb = eq;
  if (r >> (f.mant_bits + 1)) {  // carried into the next binade
    r >>= 1;
    ++eb;
  }
  uint32_t code;
  if (r < (uint64_t{1} << f.mant_bits)) {
    code = static_cast<uint32_t>(r);  // subnormal (eb == emin)
  } else {
    const int64_t biased = static_cast<int64_t>(eb) + f.bias;
    const uint32_t mant = static_cast<uint32_t>(r - (uint64_t{1} << f.mant_bits));
    if (biased > static_cast<int64_t>(f.max_biased) ||
        (biased == static_cast<int64_t>(f.max_biased) && mant > f.max_mant))
      return overflow();
    code = (static_cast<uint32_t>(biased) << f.mant_bits) | mant;
  }
  return code | s;
}

// Exact value of a code of format `f`; NaN for NaN codes.
float Decode(const Format& f, uint32_t code) {
  const uint32_t sign_bit = 1u << (f.nbits - 1);
  const int exp_bits = f.nbits - 1 - f.mant_bits;
  const uint32_t exp_mask = (1u << exp_bits) - 1, mant_mask = (1u << f.mant_bits) - 1;
  if (f.uz && code == sign_bit) return -std::numeric_limits<float>::quiet_NaN();  // sign set, like ml_dtypes
  const bool neg = code & sign_bit;
  const uint32_t e = (code >> f.mant_bits) & exp_mask, m = code & mant_mask;
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

using DecodeTable = std::array<float, 256>;

DecodeTable BuildTable(DataType t) {
  DecodeTable table{};
  if (t == DataType::kFloat8E8M0) {
    for (int c = 0; c < 256; ++c)
      table[c] = c == 0xff ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, c - 127);
    return table;
  }
  const Format& f = *FormatOf(t);
  const int count = 1 << f.nbits;
  for (int c = 0; c < 256; ++c) table[c] = c < count ? Decode(f, static_cast<uint32_t>(c)) : 0.0f;
  return table;
}

const DecodeTable* TableOf(DataType t) {
  static const DecodeTable e4m3fn = BuildTable(DataType::kFloat8E4M3FN);
  static const DecodeTable e4m3fnuz = BuildTable(DataType::kFloat8E4M3FNUZ);
  static const DecodeTable e5m2 = BuildTable(DataType::kFloat8E5M2);
  static const DecodeTable e5m2fnuz = BuildTable(DataType::kFloat8E5M2FNUZ);
  static const DecodeTable e2m1 = BuildTable(DataType::kFloat4E2M1);
  static const DecodeTable e8m0 = BuildTable(DataType::kFloat8E8M0);
  switch (t) {
    case DataType::kFloat8E4M3FN: return &e4m3fn;
    case DataType::kFloat8E4M3FNUZ: return &e4m3fnuz;
    case DataType::kFloat8E5M2: return &e5m2;
    case DataType::kFloat8E5M2FNUZ: return &e5m2fnuz;
    case DataType::kFloat4E2M1: return &e2m1;
    case DataType::kFloat8E8M0: return &e8m0;
    default: return nullptr;
  }
}

}  // namespace

uint16_t DoubleToHalf(double d) { return static_cast<uint16_t>(Encode(kHalf, d, false)); }
uint16_t DoubleToBFloat16(double d) { return static_cast<uint16_t>(Encode(kBFloat16, d, false)); }

bool IsSmallFloat(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kFloat4E2M1: case DataType::kFloat8E8M0:
      return true;
    default: return false;
  }
}

float SmallFloatToFloat(DataType t, uint8_t code) {
  const DecodeTable* table = TableOf(t);
  if (!table) return std::numeric_limits<float>::quiet_NaN();
  if (t == DataType::kFloat4E2M1) code &= 0xf;
  return (*table)[code];
}

uint8_t FloatToFloat8E8M0(float f, bool saturate, E8M0Rounding mode) {
  const uint32_t bits = FloatBits(f);
  uint32_t exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff) return 0xff;  // NaN and infinities
  bool round_up = false;
  switch (mode) {
    case E8M0Rounding::kUp:
      round_up = (bits & 0x7fffffu) != 0;
      break;
    case E8M0Rounding::kNearest: {
      // Nearest power of two, ties (1.5 * 2^e) away from zero; the reference only ties
      // upwards for normal inputs.
      const bool g = bits & 0x400000u, r = bits & 0x200000u, s = (bits & 0x1fffffu) != 0;
      round_up = g && (r || s || exponent > 0);
      break;
    }
    case E8M0Rounding::kDown: break;
  }
  if (round_up && saturate && exponent == 0xfe) round_up = false;
  if (round_up) ++exponent;  // 0xfe + 1 = 0xff: NaN when not saturating
  return static_cast<uint8_t>(exponent);
}

uint8_t FloatToSmallFloat(DataType t, float f, bool saturate) {
  if (t == DataType::kFloat8E8M0) return FloatToFloat8E8M0(f, saturate, E8M0Rounding::kUp);
  const Format* fmt = FormatOf(t);
  return fmt ? static_cast<uint8_t>(Encode(*fmt, static_cast<double>(f), saturate)) : 0;
}

uint8_t DoubleToSmallFloat(DataType t, double d, bool saturate) {
  if (t == DataType::kFloat8E8M0) return FloatToFloat8E8M0(static_cast<float>(d), saturate, E8M0Rounding::kUp);
  const Format* fmt = FormatOf(t);
  return fmt ? static_cast<uint8_t>(Encode(*fmt, d, saturate)) : 0;
}

}  // namespace inferloop
