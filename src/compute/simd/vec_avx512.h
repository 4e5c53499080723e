// Internal to src/compute/simd: the AVX-512 vector type for simd_impl.h (16 floats, lane masks
// in k registers). Include only from translation units compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace inferloop {
namespace simd {
namespace avx512 {

struct Vec {
  using R = __m512;
  using M = __mmask16;
  static constexpr int kWidth = 16;

  static M TailMask(int64_t n) { return static_cast<M>((1u << n) - 1u); }  // n in [0, 16)
  static R Load(const float* p) { return _mm512_loadu_ps(p); }
  static R LoadTail(const float* p, int64_t n, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), TailMask(n), p); }
  static void Store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void StoreTail(float* p, R v, int64_t n) { _mm512_mask_storeu_ps(p, TailMask(n), v); }
  static R ZeroTail(R v, int64_t n) { return _mm512_maskz_mov_ps(TailMask(n), v); }  // lanes >= n -> 0
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

  static float ReduceAdd(R v) { return _mm512_reduce_add_ps(v); }
  static float ReduceMax(R v) { return _mm512_reduce_max_ps(v); }
};

}  // namespace avx512
}  // namespace simd
}  // namespace inferloop
