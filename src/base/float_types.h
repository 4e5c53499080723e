// Conversions between float and the narrow float formats ONNX uses.
// float16 / bfloat16 are stored as raw uint16 bits; float8 variants, float8e8m0 and float4e2m1
// as one uint8 per element (float4 unpacked). All rounding is round-to-nearest-even.
#pragma once

#include <cstdint>
#include <cstring>

#include "inferloop/tensor.h"

namespace inferloop {

inline uint32_t FloatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsToFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return BitsToFloat(sign);
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return (h & 0x8000u) ? -f : f;
  }
  return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // subnormal or zero in half
    // value * 2^24 rounded to nearest even integer
    float v = BitsToFloat(absx) * 16777216.0f;
    uint32_t iv = static_cast<uint32_t>(v);
    float rem = v - static_cast<float>(iv);
    if (rem > 0.5f || (rem == 0.5f && (iv & 1))) ++iv;
    return static_cast<uint16_t>(sign | iv);
  }
  uint32_t exp = ((absx >> 23) - 112) << 10;
  uint32_t mant = (absx >> 13) & 0x3ffu;
  uint32_t rest = absx & 0x1fffu;
  uint32_t h = exp | mant;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float BFloat16ToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

inline uint16_t FloatToBFloat16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

// float64 -> float16 / bfloat16 with a single rounding (no detour through float32).
uint16_t DoubleToHalf(double d);
uint16_t DoubleToBFloat16(double d);

// Small float formats (float8 variants, float8e8m0, float4e2m1), stored one per byte.
// NaN codes decode to NaN; float8e8m0 code 0 is 2^-127 and 0xff is NaN.
float SmallFloatToFloat(DataType t, uint8_t code);
// Rounds to nearest even. saturate: out-of-range values and infinities become the largest
// finite value of the sign (ONNX Cast's default); otherwise they become inf (float8e5m2) or
// NaN (the other float8 types). float4e2m1 has neither inf nor NaN and always saturates.
// Negative zero, and negatives that round to zero, become +0 in the "fnuz" formats.
// float8e8m0 targets use FloatToFloat8E8M0 with round-up.
uint8_t FloatToSmallFloat(DataType t, float f, bool saturate = true);
// Same from a double, rounded once (float8e8m0: the double is first rounded to float, as ONNX does).
uint8_t DoubleToSmallFloat(DataType t, double d, bool saturate = true);

// Rounding of float -> float8e8m0 (Cast's round_mode attribute: "up", "down", "nearest").
enum class E8M0Rounding { kUp, kDown, kNearest };
// Follows the ONNX reference (onnx.numpy_helper.to_float8e8m0): keeps the float's exponent
// field, the sign is ignored, zero (and values whose exponent field is 0, rounded down) map
// to code 0 (2^-127), NaN and infinities map to 0xff (NaN). When the rounding carries past
// the largest exponent the result is 0xfe with saturate, else 0xff.
uint8_t FloatToFloat8E8M0(float f, bool saturate = true, E8M0Rounding mode = E8M0Rounding::kUp);

bool IsSmallFloat(DataType t);

}  // namespace inferloop
