// exp on one vector of a base/simd Vec type (vec_scalar.h, vec_avx2.h, vec_avx512.h): the float
// kernels' (compute/simd/simd_impl.h) and the LLM kernels' (llm/llm_kernels_impl.h) one exp.
// A template on V only, for the reason simd_impl.h gives: each per-ISA translation unit gets its
// own instantiation. Coefficients fitted by scripts/fit_simd_polynomials.py.
#pragma once

namespace inferloop {
namespace simd {

// exp(x): x = n ln2 + r, |r| <= ln2/2 (ln2 split in two for an exact n*ln2_hi), exp(r) by a
// degree-6 polynomial, scaled by 2^n. Within 2 ulp over the float range; underflows through
// the subnormals to +0; overflows to +inf; NaN stays NaN.
// kLow / kHigh: clamp the argument below / above first (callers that know it is in
// [-110, 90], or NaN, skip that).
template <class V, bool kLow = true, bool kHigh = true>
inline typename V::R Exp(typename V::R x) {
  using R = typename V::R;
  if constexpr (kLow) x = V::Max(V::Set(-110.f), x);  // operand order keeps NaN
  if constexpr (kHigh) x = V::Min(V::Set(90.f), x);
  // n = round(x / ln2): adding 1.5 * 2^23 leaves no fraction bits (|x / ln2| < 2^22 here).
  const R magic = V::Set(12582912.f);
  const R n = V::Sub(V::Fma(x, V::Set(1.44269504088896341f), magic), magic);
  R r = V::Fnma(n, V::Set(0.693359375f), x);
  r = V::Fnma(n, V::Set(-2.12194440054690583e-4f), r);
  R q = V::Set(1.390128318e-03f);
  q = V::Fma(q, r, V::Set(8.363145160e-03f));
  q = V::Fma(q, r, V::Set(4.166685345e-02f));
  q = V::Fma(q, r, V::Set(1.666657729e-01f));
  q = V::Fma(q, r, V::Set(4.999999955e-01f));
  const R p = V::Add(V::Fma(q, V::Mul(r, r), r), V::Set(1.f));
  return V::ScaleByPow2(p, n);
}

}  // namespace simd
}  // namespace inferloop
