// Internal to the per-ISA translation units: the AVX-512 float vector type (16 floats, lane masks
// in k registers) that compute/simd/simd_impl.h and llm/llm_kernels_impl.h write their loops
// against. Include only from translation units compiled with the AVX-512 flags
// (-mavx512f/bw/vl/dq, -mavx2, -mfma). In an anonymous namespace, as vec_avx2.h says why.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "base/simd/transpose8x8_avx.h"

namespace inferloop {
namespace simd {
namespace avx512 {
namespace {

struct Vec {
  using R = __m512;
  using M = __mmask16;
  static constexpr int kWidth = 16;

  static M TailMask(int64_t n) { return static_cast<M>((1u << n) - 1u); }  // n in [0, 16)
  static R Load(const float* p) { return _mm512_loadu_ps(p); }
  // The even- and odd-indexed of the 2 * kWidth floats at p.
  static void LoadEvenOdd(const float* p, R* even, R* odd) {
    const __m512 a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *even = _mm512_permutex2var_ps(a, ie, b);
    *odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(ie, _mm512_set1_epi32(1)), b);
  }
  static R LoadTail(const float* p, int64_t n, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), TailMask(n), p); }
  static void Store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void StoreTail(float* p, R v, int64_t n) { _mm512_mask_storeu_ps(p, TailMask(n), v); }
  static R ZeroTail(R v, int64_t n) { return _mm512_maskz_mov_ps(TailMask(n), v); }  // lanes >= n -> 0
  static R LoadHalf(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static void StoreHalf(uint16_t* p, R v) {  // rounded to nearest even
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static R LoadI8(const uint8_t* p) {  // 16 int8 values as floats
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static R Set(float v) { return _mm512_set1_ps(v); }
  static float First(R v) { return _mm512_cvtss_f32(v); }

  static R Add(R a, R b) { return _mm512_add_ps(a, b); }
  static R Sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R Mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R Div(R a, R b) { return _mm512_div_ps(a, b); }
  static R Fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }    // a * b + c
  static R Fnma(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b
  // x86 semantics: a > b ? a : b and a < b ? a : b (so the second operand wins on NaN).
  static R Max(R a, R b) { return _mm512_max_ps(a, b); }
  static R Min(R a, R b) { return _mm512_min_ps(a, b); }
  static R Sqrt(R a) { return _mm512_sqrt_ps(a); }
  static R Abs(R a) { return _mm512_abs_ps(a); }
  static R Neg(R a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.0f)); }
  // |mag| with the sign of `sign`.
  static R CopySign(R mag, R sign) {
    const R s = _mm512_set1_ps(-0.0f);
    return _mm512_or_ps(_mm512_andnot_ps(s, mag), _mm512_and_ps(s, sign));
  }

  static M Lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M Ge(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M Gt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M Eq(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static M IsNan(R a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static M Or(M a, M b) { return static_cast<M>(a | b); }
  static R Select(M m, R if_true, R if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }

  // p * 2^n for integral n (any magnitude; over/underflow round like IEEE multiplication).
  static R ScaleByPow2(R p, R n) { return _mm512_scalef_ps(p, n); }
  // For normal positive x: x = m * 2^e with m in [1, 2).
  static void Frexp(R x, R* e, R* m) {
    *e = _mm512_getexp_ps(x);
    *m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  }

  static constexpr bool kHasTranspose8x8 = true;
  // out[c * os + r] = in[r * is + c] for an 8 x 8 block of 32-bit elements (bits moved as is).
  static void Transpose8x8(const uint32_t* in, int64_t is, uint32_t* out, int64_t os) {
    Transpose8x8Avx(in, is, out, os);
  }

  static float ReduceAdd(R v) { return _mm512_reduce_add_ps(v); }
  static float ReduceMax(R v) { return _mm512_reduce_max_ps(v); }
};

}  // namespace
}  // namespace avx512
}  // namespace simd
}  // namespace inferloop
