// Internal to src/compute/simd: the float32 kernels of simd_table.h, written once against a
// vector type V (base/simd/vec_scalar.h, vec_avx2.h, vec_avx512.h) and instantiated per
// instruction set.
//
// Everything here is a template on V, and nothing calls the standard library: these bodies are
// compiled with different -m flags per translation unit, and a shared non-template inline
// function would be emitted by each with the linker keeping any one of them (possibly the
// AVX-512 copy on a CPU without it).
//
// Polynomial coefficients were fitted for this project by scripts/fit_simd_polynomials.py
// (weighted least squares iterated towards the minimax error, against libm in double). Exp is in
// base/simd/vec_exp.h (the LLM kernels use it too).
#pragma once

#include <cstdint>

#include "base/simd/vec_exp.h"
#include "compute/simd/simd_table.h"

namespace inferloop {
namespace simd {
namespace impl {

// ---- transcendental functions on one vector ----

// log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 P(f) with f = m - 1.
template <class V>
inline typename V::R Log(typename V::R x) {
  using R = typename V::R;
  using M = typename V::M;
  const M tiny = V::Lt(x, V::Set(1.17549435e-38f));  // subnormal (or <= 0): scale up first
  R e, m;
  V::Frexp(V::Select(tiny, V::Mul(x, V::Set(8388608.f)), x), &e, &m);
  e = V::Select(tiny, V::Sub(e, V::Set(23.f)), e);
  const M high = V::Gt(m, V::Set(1.41421356f));
  m = V::Select(high, V::Mul(m, V::Set(0.5f)), m);
  e = V::Select(high, V::Add(e, V::Set(1.f)), e);
  const R f = V::Sub(m, V::Set(1.f));
  const R f2 = V::Mul(f, f);
  R p = V::Set(-7.974118624e-02f);
  p = V::Fma(p, f, V::Set(1.265566362e-01f));
  p = V::Fma(p, f, V::Set(-1.298929341e-01f));
  p = V::Fma(p, f, V::Set(1.420995080e-01f));
  p = V::Fma(p, f, V::Set(-1.664158073e-01f));
  p = V::Fma(p, f, V::Set(2.000120078e-01f));
  p = V::Fma(p, f, V::Set(-2.500030393e-01f));
  p = V::Fma(p, f, V::Set(3.333332994e-01f));
  R t = V::Mul(V::Mul(f2, f), p);
  t = V::Fma(e, V::Set(-2.12194440054690583e-4f), t);
  t = V::Fnma(V::Set(0.5f), f2, t);
  R y = V::Fma(e, V::Set(0.693359375f), V::Add(f, t));
  const R inf = V::Set(__builtin_inff());
  y = V::Select(V::Eq(x, inf), inf, y);
  y = V::Select(V::Eq(x, V::Set(0.f)), V::Neg(inf), y);
  return V::Select(V::Or(V::Lt(x, V::Set(0.f)), V::IsNan(x)), V::Set(__builtin_nanf("")), y);
}

// tanh(x): an odd polynomial below |x| = 0.625, else sign(x) (1 - 2 / (exp(2|x|) + 1)).
template <class V>
inline typename V::R Tanh(typename V::R x) {
  using R = typename V::R;
  const R a = V::Abs(x);
  const R x2 = V::Mul(x, x);
  R p = V::Set(-6.097143307e-03f);
  p = V::Fma(p, x2, V::Set(2.099753661e-02f));
  p = V::Fma(p, x2, V::Set(-5.385100649e-02f));
  p = V::Fma(p, x2, V::Set(1.333277067e-01f));
  p = V::Fma(p, x2, V::Set(-3.333332897e-01f));
  const R small = V::CopySign(V::Fma(V::Mul(x, x2), p, x), x);  // keeps tanh(-0) = -0
  const R e = Exp<V, false, false>(V::Mul(V::Set(2.f), V::Min(V::Set(10.f), a)));  // tanh(10) rounds to 1
  const R large = V::CopySign(V::Sub(V::Set(1.f), V::Div(V::Set(2.f), V::Add(e, V::Set(1.f)))), x);
  return V::Select(V::Lt(a, V::Set(0.625f)), small, large);
}

// 1 / (1 + exp(-x)), as e / (1 + e) with e = exp(x) for negative x (no cancellation).
template <class V>
inline typename V::R Sigmoid(typename V::R x) {
  using R = typename V::R;
  const R e = Exp<V, true, false>(V::Neg(V::Abs(x)));
  const R num = V::Select(V::Ge(x, V::Set(0.f)), V::Set(1.f), e);
  return V::Div(num, V::Add(V::Set(1.f), e));
}

// erf(x): x P(x^2) below |x| = 0.921875; else sign(x) (1 - exp(-x^2) R(|x|)) with R a
// polynomial for erfc(x) exp(x^2) on [0.921875, 3.921875] (beyond it erf rounds to +-1).
template <class V>
inline typename V::R Erf(typename V::R x) {
  using R = typename V::R;
  const R a = V::Abs(x);
  const R x2 = V::Mul(x, x);
  R p = V::Set(8.370243923e-05f);
  p = V::Fma(p, x2, V::Set(-8.142744401e-04f));
  p = V::Fma(p, x2, V::Set(5.201036605e-03f));
  p = V::Fma(p, x2, V::Set(-2.685940049e-02f));
  p = V::Fma(p, x2, V::Set(1.128369555e-01f));
  p = V::Fma(p, x2, V::Set(-3.761263374e-01f));
  p = V::Fma(p, x2, V::Set(1.128379167e+00f));
  const R small = V::Mul(x, p);
  const R c = V::Min(V::Set(3.921875f), a);  // operand order keeps NaN
  const R t = V::Sub(c, V::Set(2.421875f));
  R q = V::Set(-5.056484985e-07f);
  q = V::Fma(q, t, V::Set(2.095096978e-06f));
  q = V::Fma(q, t, V::Set(-4.790168409e-06f));
  q = V::Fma(q, t, V::Set(1.722494795e-05f));
  q = V::Fma(q, t, V::Set(-7.015974884e-05f));
  q = V::Fma(q, t, V::Set(2.485342314e-04f));
  q = V::Fma(q, t, V::Set(-8.404424789e-04f));
  q = V::Fma(q, t, V::Set(2.772663113e-03f));
  q = V::Fma(q, t, V::Set(-8.819344425e-03f));
  q = V::Fma(q, t, V::Set(2.690757383e-02f));
  q = V::Fma(q, t, V::Set(-7.839527701e-02f));
  q = V::Fma(q, t, V::Set(2.167708621e-01f));
  const R erfc = V::Mul(Exp<V, false, false>(V::Neg(V::Mul(c, c))), q);  // argument in [-15.4, 0]
  const R large = V::CopySign(V::Sub(V::Set(1.f), erfc), x);
  return V::Select(V::Lt(a, V::Set(0.921875f)), small, large);
}

// ---- loops ----

// y[i] = f(x[i]) (x may equal y), two vectors per step.
template <class V, class F>
inline void Map(const float* x, float* y, int64_t n, F f) {
  constexpr int64_t W = V::kWidth;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto a = f(V::Load(x + i));
    const auto b = f(V::Load(x + i + W));
    V::Store(y + i, a);
    V::Store(y + i + W, b);
  }
  for (; i + W <= n; i += W) V::Store(y + i, f(V::Load(x + i)));
  if (i < n) V::StoreTail(y + i, f(V::LoadTail(x + i, n - i, 0.f)), n - i);
}

// y[i] = f(a[i], b[i]).
template <class V, class F>
inline void Map2(const float* a, const float* b, float* y, int64_t n, F f) {
  constexpr int64_t W = V::kWidth;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto r0 = f(V::Load(a + i), V::Load(b + i));
    const auto r1 = f(V::Load(a + i + W), V::Load(b + i + W));
    V::Store(y + i, r0);
    V::Store(y + i + W, r1);
  }
  for (; i + W <= n; i += W) V::Store(y + i, f(V::Load(a + i), V::Load(b + i)));
  if (i < n) V::StoreTail(y + i, f(V::LoadTail(a + i, n - i, 1.f), V::LoadTail(b + i, n - i, 1.f)), n - i);
}

// Calls visit(f) with the vector function R -> R of `op` (its constants bound) and returns what
// visit returns: the one home of the unary ops' vector forms, for Unary's loops and for kernels
// that apply an op to vectors they hold (small_conv_impl.h's epilogue).
template <class V, class Visit>
inline auto VisitUnaryOp(UnaryOp op, const UnaryArgs& args, Visit&& visit) {
  using R = typename V::R;
  const R zero = V::Set(0.f), one = V::Set(1.f);
  switch (op) {
    case UnaryOp::kRelu: return visit([&](R v) { return V::Max(zero, v); });
    case UnaryOp::kLeakyRelu: {
      const R alpha = V::Set(args.alpha);
      return visit([&](R v) { return V::Select(V::Lt(v, zero), V::Mul(alpha, v), v); });
    }
    case UnaryOp::kClip: {
      const R lo = V::Set(args.alpha), hi = V::Set(args.beta);
      return visit([&](R v) { return V::Min(hi, V::Max(lo, v)); });
    }
    case UnaryOp::kSigmoid: return visit([](R v) { return Sigmoid<V>(v); });
    case UnaryOp::kTanh: return visit([](R v) { return Tanh<V>(v); });
    case UnaryOp::kExp: return visit([](R v) { return Exp<V>(v); });
    case UnaryOp::kLog: return visit([](R v) { return Log<V>(v); });
    case UnaryOp::kErf: return visit([](R v) { return Erf<V>(v); });
    case UnaryOp::kSqrt: return visit([](R v) { return V::Sqrt(v); });
    case UnaryOp::kReciprocal: return visit([&](R v) { return V::Div(one, v); });
    case UnaryOp::kNeg: return visit([](R v) { return V::Neg(v); });
    case UnaryOp::kAbs: return visit([](R v) { return V::Abs(v); });
    case UnaryOp::kSquare: return visit([](R v) { return V::Mul(v, v); });
    case UnaryOp::kHardSigmoid: {
      const R alpha = V::Set(args.alpha), beta = V::Set(args.beta);
      return visit([&](R v) { return V::Min(one, V::Max(zero, V::Fma(alpha, v, beta))); });
    }
    case UnaryOp::kHardSwish: {
      const R sixth = V::Set(1.f / 6.f), half = V::Set(0.5f);
      return visit([&](R v) { return V::Mul(v, V::Min(one, V::Max(zero, V::Fma(v, sixth, half)))); });
    }
    case UnaryOp::kGelu: {
      const R half = V::Set(0.5f), rsqrt2 = V::Set(0.707106781186547524f);
      return visit([&](R v) { return V::Mul(V::Mul(half, v), V::Add(one, Erf<V>(V::Mul(v, rsqrt2)))); });
    }
    case UnaryOp::kGeluTanh: {
      const R half = V::Set(0.5f), k = V::Set(0.797884560802865355f), c = V::Set(0.044715f);
      return visit([&](R v) {
        const R inner = V::Mul(V::Mul(k, v), V::Fma(V::Mul(c, v), v, one));
        return V::Mul(V::Mul(half, v), V::Add(one, Tanh<V>(inner)));
      });
    }
  }
  return visit([](R v) { return v; });  // not reached: every op is a case above
}

// op applied to one vector.
template <class V>
inline typename V::R UnaryOne(UnaryOp op, const UnaryArgs& args, typename V::R v) {
  return VisitUnaryOp<V>(op, args, [v](auto f) { return f(v); });
}

template <class V>
void Unary(UnaryOp op, const UnaryArgs& args, const float* x, float* y, int64_t n) {
  VisitUnaryOp<V>(op, args, [&](auto f) { Map<V>(x, y, n, f); });
}

template <class V>
void Binary(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  using R = typename V::R;
  switch (op) {
    case BinaryOp::kAdd: return Map2<V>(a, b, y, n, [](R p, R q) { return V::Add(p, q); });
    case BinaryOp::kSub: return Map2<V>(a, b, y, n, [](R p, R q) { return V::Sub(p, q); });
    case BinaryOp::kMul: return Map2<V>(a, b, y, n, [](R p, R q) { return V::Mul(p, q); });
    case BinaryOp::kDiv: return Map2<V>(a, b, y, n, [](R p, R q) { return V::Div(p, q); });
  }
}

template <class V>
void BinaryScalarA(BinaryOp op, float a, const float* b, float* y, int64_t n) {
  using R = typename V::R;
  const R s = V::Set(a);
  switch (op) {
    case BinaryOp::kAdd: return Map<V>(b, y, n, [&](R q) { return V::Add(s, q); });
    case BinaryOp::kSub: return Map<V>(b, y, n, [&](R q) { return V::Sub(s, q); });
    case BinaryOp::kMul: return Map<V>(b, y, n, [&](R q) { return V::Mul(s, q); });
    case BinaryOp::kDiv: return Map<V>(b, y, n, [&](R q) { return V::Div(s, q); });
  }
}

template <class V>
void BinaryScalarB(BinaryOp op, const float* a, float b, float* y, int64_t n) {
  using R = typename V::R;
  const R s = V::Set(b);
  switch (op) {
    case BinaryOp::kAdd: return Map<V>(a, y, n, [&](R p) { return V::Add(p, s); });
    case BinaryOp::kSub: return Map<V>(a, y, n, [&](R p) { return V::Sub(p, s); });
    case BinaryOp::kMul: return Map<V>(a, y, n, [&](R p) { return V::Mul(p, s); });
    case BinaryOp::kDiv: return Map<V>(a, y, n, [&](R p) { return V::Div(p, s); });
  }
}

template <class V>
void Affine(const float* x, float* y, int64_t n, float mean, float scale, float shift) {
  using R = typename V::R;
  const R m = V::Set(mean), s = V::Set(scale), b = V::Set(shift);
  Map<V>(x, y, n, [&](R v) { return V::Fma(V::Sub(v, m), s, b); });
}

// Sum of f(x[i]) over n floats: four vector accumulators in float within blocks of 4096
// elements, block sums added in double.
template <class V, class F>
inline double SumOf(const float* x, int64_t n, F f) {
  using R = typename V::R;
  constexpr int64_t W = V::kWidth, kBlock = 4096;
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t b1 = b0 + kBlock < n ? b0 + kBlock : n;
    R s0 = V::Set(0.f), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = b0;
    for (; i + 4 * W <= b1; i += 4 * W) {
      s0 = V::Add(s0, f(V::Load(x + i)));
      s1 = V::Add(s1, f(V::Load(x + i + W)));
      s2 = V::Add(s2, f(V::Load(x + i + 2 * W)));
      s3 = V::Add(s3, f(V::Load(x + i + 3 * W)));
    }
    for (; i + W <= b1; i += W) s0 = V::Add(s0, f(V::Load(x + i)));
    if (i < b1) s1 = V::Add(s1, V::ZeroTail(f(V::LoadTail(x + i, b1 - i, 0.f)), b1 - i));  // f(0) may be nonzero
    total += V::ReduceAdd(V::Add(V::Add(s0, s1), V::Add(s2, s3)));
  }
  return total;
}

template <class V>
double Sum(const float* x, int64_t n) {
  return SumOf<V>(x, n, [](typename V::R v) { return v; });
}

// Maximum of the non-NaN elements; -inf when there are none.
template <class V>
float Max(const float* x, int64_t n) {
  using R = typename V::R;
  constexpr int64_t W = V::kWidth;
  const R ninf = V::Set(-__builtin_inff());
  R m0 = ninf, m1 = ninf;
  int64_t i = 0;
  // V::Max(v, m) = v > m ? v : m: a NaN v leaves m unchanged, and m never becomes NaN.
  for (; i + 2 * W <= n; i += 2 * W) {
    m0 = V::Max(V::Load(x + i), m0);
    m1 = V::Max(V::Load(x + i + W), m1);
  }
  for (; i + W <= n; i += W) m0 = V::Max(V::Load(x + i), m0);
  if (i < n) m1 = V::Max(V::LoadTail(x + i, n - i, -__builtin_inff()), m1);
  return V::ReduceMax(V::Max(m0, m1));
}

// sum of exp(x[i] - mx) over a row, stored to y unless `log`. Tail lanes load -inf: exp gives
// 0 (or NaN when mx is -inf, matching the row's NaN).
// `prefetch` (may be null): n floats to pull towards the cache meanwhile.
template <class V>
inline float ExpSumRow(const float* x, float* y, int64_t n, typename V::R mx, bool log, const float* prefetch) {
  using R = typename V::R;
  constexpr int64_t W = V::kWidth;
  if (prefetch)
    for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(prefetch + i);  // one 64-byte line each
  R s0 = V::Set(0.f), s1 = s0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const R e0 = Exp<V, true, false>(V::Sub(V::Load(x + i), mx));  // x - max <= 0
    const R e1 = Exp<V, true, false>(V::Sub(V::Load(x + i + W), mx));
    if (!log) {
      V::Store(y + i, e0);
      V::Store(y + i + W, e1);
    }
    s0 = V::Add(s0, e0);
    s1 = V::Add(s1, e1);
  }
  for (; i + W <= n; i += W) {
    const R e = Exp<V, true, false>(V::Sub(V::Load(x + i), mx));
    if (!log) V::Store(y + i, e);
    s0 = V::Add(s0, e);
  }
  if (i < n) {
    const R e = Exp<V, true, false>(V::Sub(V::LoadTail(x + i, n - i, -__builtin_inff()), mx));
    if (!log) V::StoreTail(y + i, e, n - i);
    s1 = V::Add(s1, e);
  }
  return V::ReduceAdd(V::Add(s0, s1));
}

// Softmax / LogSoftmax of `rows` rows of n floats. A NaN anywhere in a row, or infinities that
// make x - max NaN, give a row of NaN, as the reference computation does. Short rows go in
// groups, one pass at a time over the group, so the per-row reductions overlap; while a group's
// exponentials run, the next group's rows are prefetched (else the max pass waits on memory).
template <class V>
void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  using R = typename V::R;
  if (n <= 0) return;
  constexpr int64_t kMaxGroup = 16;
  int64_t group = 4096 / n;  // about 16 KiB of input per group
  group = group < 1 ? 1 : (group > kMaxGroup ? kMaxGroup : group);
  float mx[kMaxGroup], sum[kMaxGroup];
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t g = rows - r0 < group ? rows - r0 : group;
    const float* xg = x + r0 * n;
    float* yg = y + r0 * n;
    for (int64_t k = 0; k < g; ++k) mx[k] = Max<V>(xg + k * n, n);
    for (int64_t k = 0; k < g; ++k) {
      const bool more = r0 + g + k < rows;
      sum[k] = ExpSumRow<V>(xg + k * n, yg + k * n, n, V::Set(mx[k]), log, more ? xg + (g + k) * n : nullptr);
    }
    for (int64_t k = 0; k < g; ++k) {
      const R m = V::Set(mx[k]);
      if (log) {
        const R log_sum = Log<V>(V::Set(sum[k]));  // (x - max) - log(sum): no cancellation against max
        Map<V>(xg + k * n, yg + k * n, n, [&](R v) { return V::Sub(V::Sub(v, m), log_sum); });
      } else {
        const R inv = V::Set(1.f / sum[k]);
        Map<V>(yg + k * n, yg + k * n, n, [&](R v) { return V::Mul(v, inv); });
      }
    }
  }
}

// Softmax along n rows `stride` apart, one group of up to W columns at a time.
template <class V>
void SoftmaxColumns(const float* x, float* y, int64_t n, int64_t stride, int64_t cols, bool log) {
  using R = typename V::R;
  constexpr int64_t W = V::kWidth;
  if (n <= 0) return;
  const float ninf = -__builtin_inff();
  for (int64_t c = 0; c < cols; c += W) {
    const int64_t w = cols - c < W ? cols - c : W;
    auto load = [&](const float* p) { return w == W ? V::Load(p) : V::LoadTail(p, w, ninf); };
    auto store = [&](float* p, R v) {
      if (w == W) V::Store(p, v);
      else V::StoreTail(p, v, w);
    };
    R mx = V::Set(ninf);
    for (int64_t r = 0; r < n; ++r) mx = V::Max(load(x + r * stride + c), mx);
    R sum = V::Set(0.f);
    for (int64_t r = 0; r < n; ++r) {
      const R e = Exp<V, true, false>(V::Sub(load(x + r * stride + c), mx));
      if (!log) store(y + r * stride + c, e);
      sum = V::Add(sum, e);
    }
    if (log) {
      const R log_sum = Log<V>(sum);
      for (int64_t r = 0; r < n; ++r) store(y + r * stride + c, V::Sub(V::Sub(load(x + r * stride + c), mx), log_sum));
    } else {
      const R inv = V::Div(V::Set(1.f), sum);
      for (int64_t r = 0; r < n; ++r) store(y + r * stride + c, V::Mul(load(y + r * stride + c), inv));
    }
  }
}

// LayerNormalization of one row; `prefetch` (may be null) is the next row, pulled towards the
// cache during the second pass.
template <class V>
inline void LayerNormRow(const float* x, const float* scale, const float* bias, float* y, int64_t n, float epsilon,
                         float* mean_out, float* inv_out, const float* prefetch) {
  using R = typename V::R;
  if (n <= 0) return;
  const float mean = static_cast<float>(Sum<V>(x, n) / static_cast<double>(n));
  const R m = V::Set(mean);
  if (prefetch)
    for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(prefetch + i);
  const double var = SumOf<V>(x, n, [&](R v) {
                       const R d = V::Sub(v, m);
                       return V::Mul(d, d);
                     }) /
                     static_cast<double>(n);
  const float inv = static_cast<float>(1.0 / __builtin_sqrt(var + static_cast<double>(epsilon)));
  const R iv = V::Set(inv);
  constexpr int64_t W = V::kWidth;
  int64_t i = 0;
  if (bias != nullptr) {
    for (; i + W <= n; i += W)
      V::Store(y + i, V::Fma(V::Mul(V::Sub(V::Load(x + i), m), iv), V::Load(scale + i), V::Load(bias + i)));
    if (i < n) {
      const int64_t k = n - i;
      V::StoreTail(y + i, V::Fma(V::Mul(V::Sub(V::LoadTail(x + i, k, 0.f), m), iv), V::LoadTail(scale + i, k, 0.f),
                                 V::LoadTail(bias + i, k, 0.f)),
                   k);
    }
  } else {
    for (; i + W <= n; i += W) V::Store(y + i, V::Mul(V::Mul(V::Sub(V::Load(x + i), m), iv), V::Load(scale + i)));
    if (i < n) {
      const int64_t k = n - i;
      V::StoreTail(y + i, V::Mul(V::Mul(V::Sub(V::LoadTail(x + i, k, 0.f), m), iv), V::LoadTail(scale + i, k, 0.f)), k);
    }
  }
  if (mean_out) *mean_out = mean;
  if (inv_out) *inv_out = inv;
}

template <class V>
void LayerNormRows(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t n,
                   float epsilon, float* mean, float* inv_std) {
  for (int64_t r = 0; r < rows; ++r)
    LayerNormRow<V>(x + r * n, scale, bias, y + r * n, n, epsilon, mean ? mean + r : nullptr,
                    inv_std ? inv_std + r : nullptr, r + 1 < rows ? x + (r + 1) * n : nullptr);
}

// out[c * os + r] = in[r * is + c] for r < rows, c < cols (32-bit elements, bits moved as is).
template <class V>
void Transpose32(const uint32_t* in, int64_t is, uint32_t* out, int64_t os, int64_t rows, int64_t cols) {
  int64_t r0 = 0;
  if constexpr (V::kHasTranspose8x8) {
    for (; r0 + 8 <= rows; r0 += 8) {
      int64_t c0 = 0;
      for (; c0 + 8 <= cols; c0 += 8) V::Transpose8x8(in + r0 * is + c0, is, out + c0 * os + r0, os);
      for (int64_t r = r0; r < r0 + 8; ++r)
        for (int64_t c = c0; c < cols; ++c) out[c * os + r] = in[r * is + c];
    }
  }
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * os + r] = in[r * is + c];
}

// One output row of float_kernels.h HalvingMax: V::Max(e, v) is e > v ? e : v, the scalar chain's
// step.
template <class V>
void HalvingMaxRow(const float* const* rows, int n_rows, float* out, int64_t n) {
  using R = typename V::R;
  constexpr int64_t W = V::kWidth;
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    R e, o;
    V::LoadEvenOdd(rows[0] + 2 * j, &e, &o);
    R v = V::Max(o, e);
    for (int k = 1; k < n_rows; ++k) {
      V::LoadEvenOdd(rows[k] + 2 * j, &e, &o);
      v = V::Max(o, V::Max(e, v));
    }
    V::Store(out + j, v);
  }
  for (; j < n; ++j) {
    float v = rows[0][2 * j];
    for (int k = 0; k < n_rows; ++k) {
      const float e = rows[k][2 * j], o = rows[k][2 * j + 1];
      if (k > 0 && e > v) v = e;
      if (o > v) v = o;
    }
    out[j] = v;
  }
}

template <class V>
void HalvingMax(const float* in, int64_t row_stride, int64_t depth_stride, bool three_d, float* out, int64_t out_rows,
                int64_t n) {
  for (int64_t r = 0; r < out_rows; ++r) {
    const float* a = in + 2 * r * row_stride;
    const float* rows[4] = {a, a + row_stride, a + depth_stride, a + depth_stride + row_stride};
    HalvingMaxRow<V>(rows, three_d ? 4 : 2, out + r * n, n);
  }
}

template <class V>
constexpr KernelTable MakeTable() {
  return KernelTable{&Unary<V>,  &Binary<V>,     &BinaryScalarA<V>,  &BinaryScalarB<V>, &Affine<V>,
                     &Sum<V>,    &Max<V>,        &SoftmaxRows<V>,     &SoftmaxColumns<V>, &LayerNormRows<V>,
                     &Transpose32<V>, &HalvingMax<V>};
}

}  // namespace impl
}  // namespace simd
}  // namespace inferloop
