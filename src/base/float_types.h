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

// Small float formats (float8 variants, float8e8m0, float4e2m1), stored one per byte.
float SmallFloatToFloat(DataType t, uint8_t code);
// saturate: out-of-range values become the largest finite value (ONNX Cast's default);
// otherwise they become inf where the format has one, else NaN.
uint8_t FloatToSmallFloat(DataType t, float f, bool saturate = true);
bool IsSmallFloat(DataType t);

}  // namespace inferloop
