// Internal to the per-ISA translation units: the portable one-lane "vector" type for
// compute/simd/simd_impl.h, used on CPUs without AVX2. Same operation semantics as the AVX types
// (x86 min/max, round to nearest even), so every instruction set runs the same algorithms. In an
// anonymous namespace, as vec_avx2.h says why.
#pragma once

#include <cstdint>
#include <cstring>

namespace inferloop {
namespace simd {
namespace scalar {
namespace {

struct Vec {
  using R = float;
  using M = bool;
  static constexpr int kWidth = 1;

  static R Load(const float* p) { return *p; }
  // The even- and odd-indexed of the 2 * kWidth floats at p.
  static void LoadEvenOdd(const float* p, R* even, R* odd) {
    *even = p[0];
    *odd = p[1];
  }
  static R LoadTail(const float*, int64_t, float fill) { return fill; }  // never called: width 1 has no tail
  static void Store(float* p, R v) { *p = v; }
  static void StoreTail(float*, R, int64_t) {}
  static R ZeroTail(R v, int64_t n) { return n > 0 ? v : 0.f; }
  static R Set(float v) { return v; }
  static float First(R v) { return v; }

  static R Add(R a, R b) { return a + b; }
  static R Sub(R a, R b) { return a - b; }
  static R Mul(R a, R b) { return a * b; }
  static R Div(R a, R b) { return a / b; }
  // Unfused: baseline x86-64 has no FMA instruction, and the algorithms do not need one.
  static R Fma(R a, R b, R c) { return a * b + c; }
  static R Fnma(R a, R b, R c) { return c - a * b; }
  static R Max(R a, R b) { return a > b ? a : b; }
  static R Min(R a, R b) { return a < b ? a : b; }
  static R Sqrt(R a) { return __builtin_sqrtf(a); }
  static uint32_t Bits(R a) {
    uint32_t u;
    std::memcpy(&u, &a, 4);
    return u;
  }
  static R FromBits(uint32_t u) {
    R a;
    std::memcpy(&a, &u, 4);
    return a;
  }
  static R Abs(R a) { return FromBits(Bits(a) & 0x7fffffffu); }
  static R Neg(R a) { return FromBits(Bits(a) ^ 0x80000000u); }
  static R CopySign(R mag, R sign) { return FromBits((Bits(mag) & 0x7fffffffu) | (Bits(sign) & 0x80000000u)); }

  static M Lt(R a, R b) { return a < b; }
  static M Ge(R a, R b) { return a >= b; }
  static M Gt(R a, R b) { return a > b; }
  static M Eq(R a, R b) { return a == b; }
  static M IsNan(R a) { return a != a; }
  static M Or(M a, M b) { return a || b; }
  static R Select(M m, R if_true, R if_false) { return m ? if_true : if_false; }

  // As avx2::Vec::ScaleByPow2 (n integral, |n| <= 300).
  static R ScaleByPow2(R p, R n) {
    if (n != n) return p * n;
    const int ni = static_cast<int>(n);
    const int n1 = ni >> 1, n2 = ni - n1;
    return p * FromBits(static_cast<uint32_t>(n1 + 127) << 23) * FromBits(static_cast<uint32_t>(n2 + 127) << 23);
  }
  static void Frexp(R x, R* e, R* m) {
    const uint32_t b = Bits(x);
    *e = static_cast<float>(static_cast<int>(b >> 23) - 127);
    *m = FromBits((b & 0x007fffffu) | 0x3f800000u);
  }

  static constexpr bool kHasTranspose8x8 = false;
  static void Transpose8x8(const uint32_t*, int64_t, uint32_t*, int64_t) {}

  static float ReduceAdd(R v) { return v; }
  static float ReduceMax(R v) { return v; }
};

}  // namespace
}  // namespace scalar
}  // namespace simd
}  // namespace inferloop
