// Internal to src/compute/simd: the AVX2 + FMA vector type for simd_impl.h (8 floats; lane
// masks are all-ones / all-zeros float lanes). Include only from translation units compiled
// with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace inferloop {
namespace simd {
namespace avx2 {

struct Vec {
  using R = __m256;
  using M = __m256;
  static constexpr int kWidth = 8;

  static __m256i TailMask(int64_t n) {  // n in [0, 8)
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R Load(const float* p) { return _mm256_loadu_ps(p); }
  static R LoadTail(const float* p, int64_t n, float fill) {
    const __m256i m = TailMask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void Store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void StoreTail(float* p, R v, int64_t n) { _mm256_maskstore_ps(p, TailMask(n), v); }
  static R ZeroTail(R v, int64_t n) { return _mm256_and_ps(v, _mm256_castsi256_ps(TailMask(n))); }  // lanes >= n -> 0
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
    auto ld = [&](int r) { return _mm256_loadu_ps(reinterpret_cast<const float*>(in + r * is)); };
    const __m256 t0 = _mm256_unpacklo_ps(ld(0), ld(1)), t1 = _mm256_unpackhi_ps(ld(0), ld(1));
    const __m256 t2 = _mm256_unpacklo_ps(ld(2), ld(3)), t3 = _mm256_unpackhi_ps(ld(2), ld(3));
    const __m256 t4 = _mm256_unpacklo_ps(ld(4), ld(5)), t5 = _mm256_unpackhi_ps(ld(4), ld(5));
    const __m256 t6 = _mm256_unpacklo_ps(ld(6), ld(7)), t7 = _mm256_unpackhi_ps(ld(6), ld(7));
    // s_k holds column k (rows 0-3 / 4-7 in t0-3 / t4-7) in its low half and column k + 4 in its high half.
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
    auto st = [&](int c, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(out + c * os), v); };
    st(0, _mm256_permute2f128_ps(s0, s4, 0x20));
    st(1, _mm256_permute2f128_ps(s1, s5, 0x20));
    st(2, _mm256_permute2f128_ps(s2, s6, 0x20));
    st(3, _mm256_permute2f128_ps(s3, s7, 0x20));
    st(4, _mm256_permute2f128_ps(s0, s4, 0x31));
    st(5, _mm256_permute2f128_ps(s1, s5, 0x31));
    st(6, _mm256_permute2f128_ps(s2, s6, 0x31));
    st(7, _mm256_permute2f128_ps(s3, s7, 0x31));
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

}  // namespace avx2
}  // namespace simd
}  // namespace inferloop
