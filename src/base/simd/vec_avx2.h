// Internal to the per-ISA translation units: the AVX2 + FMA float vector type (8 floats; lane
// masks are all-ones / all-zeros float lanes) that compute/simd/simd_impl.h and
// llm/llm_kernels_impl.h write their loops against. Include only from translation units compiled
// with -mavx2 -mfma; LoadHalf and StoreHalf also need -mf16c (only the LLM kernels call them).
//
// Vec is in an anonymous namespace: each including translation unit gets its own copy, compiled
// with its own -m flags (compute's and llm's AVX2 files differ by -mf16c), and so does every
// template instantiated on it - a shared inline function with external linkage would be emitted
// by each file with the linker keeping any one of them.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "base/simd/transpose8x8_avx.h"

namespace inferloop {
namespace simd {
namespace avx2 {
namespace {

struct Vec {
  using R = __m256;
  using M = __m256;
  static constexpr int kWidth = 8;

  static __m256i TailMask(int64_t n) {  // n in [0, 8)
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R Load(const float* p) { return _mm256_loadu_ps(p); }
  // The even- and odd-indexed of the 2 * kWidth floats at p.
  static void LoadEvenOdd(const float* p, R* even, R* odd) {
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    // Within 128-bit halves: [a0 a2 b0 b2 | a4 a6 b4 b6]; then the 64-bit pairs in order 0, 2, 1, 3.
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  }
  static R LoadTail(const float* p, int64_t n, float fill) {
    const __m256i m = TailMask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void Store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void StoreTail(float* p, R v, int64_t n) { _mm256_maskstore_ps(p, TailMask(n), v); }
  static R ZeroTail(R v, int64_t n) { return _mm256_and_ps(v, _mm256_castsi256_ps(TailMask(n))); }  // lanes >= n -> 0
  static R LoadHalf(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void StoreHalf(uint16_t* p, R v) {  // rounded to nearest even
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static R LoadI8(const uint8_t* p) {  // 8 int8 values as floats
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static R Set(float v) { return _mm256_set1_ps(v); }
  static float First(R v) { return _mm256_cvtss_f32(v); }

  static R Add(R a, R b) { return _mm256_add_ps(a, b); }
  static R Sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R Mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R Div(R a, R b) { return _mm256_div_ps(a, b); }
  static R Fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R Fnma(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }
  static R Max(R a, R b) { return _mm256_max_ps(a, b); }
  static R Min(R a, R b) { return _mm256_min_ps(a, b); }
  static R Sqrt(R a) { return _mm256_sqrt_ps(a); }
  static R Abs(R a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static R Neg(R a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static R CopySign(R mag, R sign) {
    const R s = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sign));
  }

  static M Lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M Ge(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M Gt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M Eq(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static M IsNan(R a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static M Or(M a, M b) { return _mm256_or_ps(a, b); }
  static R Select(M m, R if_true, R if_false) { return _mm256_blendv_ps(if_false, if_true, m); }

  // p * 2^n for integral n in [-300, 300]: two exact power-of-two factors, so results in the
  // subnormal range round once, like one IEEE multiplication. NaN n gives NaN only if p is.
  static R ScaleByPow2(R p, R n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const R s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const R s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  static void Frexp(R x, R* e, R* m) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i ex = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
    *e = _mm256_cvtepi32_ps(ex);
    *m = _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
  }

  static constexpr bool kHasTranspose8x8 = true;
  // out[c * os + r] = in[r * is + c] for an 8 x 8 block of 32-bit elements (bits moved as is).
  static void Transpose8x8(const uint32_t* in, int64_t is, uint32_t* out, int64_t os) {
    Transpose8x8Avx(in, is, out, os);
  }

  static float ReduceAdd(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float ReduceMax(R v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace
}  // namespace avx2
}  // namespace simd
}  // namespace inferloop
