// The float32 SIMD primitives (src/compute/simd/float_kernels.h) on every instruction set this
// CPU has: transcendental functions against libm in double (error in ulp over the whole float
// range, special values), exact ops bit for bit against plain loops, tails of every length,
// in-place calls, broadcasting, softmax, layer normalization and row sums against references.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "compute/activation.h"
#include "compute/simd/cpu_isa.h"
#include "unit/compute/simd/isa_param_test.h"
#include "compute/simd/float_kernels.h"

namespace inferloop {
namespace simd {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Distance in representable floats (0 when both NaN or equal; huge when only one is NaN).
int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Every 37th float bit pattern (about 116 million values over both signs, so ~1.1 million
// samples of every exponent range) plus the interesting specials.
std::vector<float> SweepFloats() {
  std::vector<float> v;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 3701) v.push_back(FromBits(static_cast<uint32_t>(u)));
  for (float f : {0.f, -0.f, 1.f, -1.f, kInf, -kInf, kNaN, std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::max(), 88.72283f, 88.72284f,
                  -87.33654f, -103.97208f, -103.97209f, 0.625f, -0.625f, 0.921875f, 3.921875f, 9.0f, 1e-30f})
    v.push_back(f);
  return v;
}

class SimdTest : public IsaParamTest {};

// Max ulp error of `op` against `ref` (computed in double, rounded to float) over the sweep.
int64_t MaxUlp(UnaryOp op, double (*ref)(double), float* worst_x) {
  const std::vector<float> x = SweepFloats();
  std::vector<float> y(x.size());
  Unary(nullptr, op, x.data(), y.data(), static_cast<int64_t>(x.size()));
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = static_cast<float>(ref(static_cast<double>(x[i])));
    const int64_t d = UlpDistance(y[i], want);
    if (d > worst) {
      worst = d;
      *worst_x = x[i];
    }
  }
  return worst;
}

double RefSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST_P(SimdTest, TranscendentalsAreWithinAFewUlpOverTheWholeRange) {
  struct Case {
    UnaryOp op;
    const char* name;
    double (*ref)(double);
    int64_t max_ulp;
  };
  const Case cases[] = {
      {UnaryOp::kExp, "exp", [](double v) { return std::exp(v); }, 2},
      {UnaryOp::kLog, "log", [](double v) { return std::log(v); }, 2},
      {UnaryOp::kTanh, "tanh", [](double v) { return std::tanh(v); }, 3},
      {UnaryOp::kSigmoid, "sigmoid", RefSigmoid, 3},
      {UnaryOp::kErf, "erf", [](double v) { return std::erf(v); }, 3},
  };
  for (const Case& c : cases) {
    float worst_x = 0;
    const int64_t ulp = MaxUlp(c.op, c.ref, &worst_x);
    EXPECT_LE(ulp, c.max_ulp) << c.name << " worst at x = " << worst_x;
  }
}

TEST_P(SimdTest, TranscendentalsHandleSpecialValues) {
  auto one = [](UnaryOp op, float x) {
    float y[3] = {x, x, x};  // also through the vector tail
    Unary(nullptr, op, y, y, 3);
    return y[2];
  };
  EXPECT_EQ(one(UnaryOp::kExp, kInf), kInf);
  EXPECT_EQ(one(UnaryOp::kExp, -kInf), 0.f);
  EXPECT_EQ(one(UnaryOp::kExp, 0.f), 1.f);
  EXPECT_EQ(one(UnaryOp::kExp, 100.f), kInf);
  EXPECT_EQ(one(UnaryOp::kExp, -200.f), 0.f);
  EXPECT_TRUE(std::isnan(one(UnaryOp::kExp, kNaN)));
  EXPECT_EQ(one(UnaryOp::kLog, 0.f), -kInf);
  EXPECT_EQ(one(UnaryOp::kLog, -0.f), -kInf);
  EXPECT_EQ(one(UnaryOp::kLog, kInf), kInf);
  EXPECT_EQ(one(UnaryOp::kLog, 1.f), 0.f);
  EXPECT_TRUE(std::isnan(one(UnaryOp::kLog, -1.f)));
  EXPECT_TRUE(std::isnan(one(UnaryOp::kLog, -kInf)));
  EXPECT_TRUE(std::isnan(one(UnaryOp::kLog, kNaN)));
  EXPECT_EQ(one(UnaryOp::kTanh, kInf), 1.f);
  EXPECT_EQ(one(UnaryOp::kTanh, -kInf), -1.f);
  EXPECT_TRUE(std::signbit(one(UnaryOp::kTanh, -0.f)));
  EXPECT_TRUE(std::isnan(one(UnaryOp::kTanh, kNaN)));
  EXPECT_EQ(one(UnaryOp::kSigmoid, kInf), 1.f);
  EXPECT_EQ(one(UnaryOp::kSigmoid, -kInf), 0.f);
  EXPECT_EQ(one(UnaryOp::kSigmoid, 0.f), 0.5f);
  EXPECT_TRUE(std::isnan(one(UnaryOp::kSigmoid, kNaN)));
  EXPECT_EQ(one(UnaryOp::kErf, kInf), 1.f);
  EXPECT_EQ(one(UnaryOp::kErf, -kInf), -1.f);
  EXPECT_TRUE(std::signbit(one(UnaryOp::kErf, -0.f)));
  EXPECT_TRUE(std::isnan(one(UnaryOp::kErf, kNaN)));
  EXPECT_TRUE(std::isnan(one(UnaryOp::kGelu, kNaN)));
}

// Reference activations in double (the ONNX formulas).
double RefGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double RefGeluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST_P(SimdTest, GeluFormsMatchTheirDefinitions) {
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 0.00371f) x.push_back(v);
  std::vector<float> y(x.size()), yt(x.size());
  Unary(nullptr, UnaryOp::kGelu, x.data(), y.data(), static_cast<int64_t>(x.size()));
  Unary(nullptr, UnaryOp::kGeluTanh, x.data(), yt.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    // Near -inf both are 0 - (tiny): absolute error is what a float formula can promise there.
    EXPECT_NEAR(y[i], RefGelu(x[i]), 1e-6 * std::fabs(RefGelu(x[i])) + 2e-7 * std::fabs(x[i])) << x[i];
    EXPECT_NEAR(yt[i], RefGeluTanh(x[i]), 1e-6 * std::fabs(RefGeluTanh(x[i])) + 2e-7 * std::fabs(x[i])) << x[i];
  }
}

// Random values with some NaN, +-inf, +-0 and subnormals mixed in.
std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 4.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = d(rng);
    switch (rng() % 61) {
      case 0: v[i] = kNaN; break;
      case 1: v[i] = kInf; break;
      case 2: v[i] = -kInf; break;
      case 3: v[i] = -0.f; break;
      case 4: v[i] = 0.f; break;
      case 5: v[i] = 1e-40f; break;
      default: break;
    }
  }
  return v;
}

bool SameFloat(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0; }

TEST_P(SimdTest, PiecewiseOpsMatchTheReferenceExactlyForEveryLength) {
  struct Case {
    UnaryOp op;
    UnaryArgs args;
    std::function<float(float)> ref;
    bool exact;
  };
  const Case cases[] = {
      {UnaryOp::kRelu, {}, [](float x) { return x < 0.f ? 0.f : x; }, true},
      {UnaryOp::kLeakyRelu, {0.1f, 0.f}, [](float x) { return x < 0.f ? 0.1f * x : x; }, true},
      {UnaryOp::kClip, {-1.5f, 2.f}, [](float x) { return std::isnan(x) ? x : x < -1.5f ? -1.5f : x > 2.f ? 2.f : x; }, true},
      {UnaryOp::kNeg, {}, [](float x) { return -x; }, true},
      {UnaryOp::kAbs, {}, [](float x) { return std::fabs(x); }, true},
      {UnaryOp::kSqrt, {}, [](float x) { return std::sqrt(x); }, true},
      {UnaryOp::kReciprocal, {}, [](float x) { return 1.f / x; }, true},
      {UnaryOp::kSquare, {}, [](float x) { return x * x; }, true},
      {UnaryOp::kHardSigmoid, {0.2f, 0.5f}, [](float x) {
         const float v = 0.2f * x + 0.5f;
         return std::isnan(v) ? v : v < 0.f ? 0.f : v > 1.f ? 1.f : v;
       }, false},
      {UnaryOp::kHardSwish, {}, [](float x) {
         const float t = x / 6.f + 0.5f;
         return x * (std::isnan(t) ? t : t < 0.f ? 0.f : t > 1.f ? 1.f : t);
       }, false},
  };
  for (int64_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1031}) {
    const std::vector<float> x = RandomFloats(static_cast<size_t>(n), static_cast<uint32_t>(n));
    for (const Case& c : cases) {
      std::vector<float> y(n + 1, 12345.f), inplace = x;
      Unary(nullptr, c.op, x.data(), y.data(), n, c.args);
      Unary(nullptr, c.op, inplace.data(), inplace.data(), n, c.args);
      EXPECT_EQ(y[n], 12345.f) << "wrote past the end, n = " << n;
      for (int64_t i = 0; i < n; ++i) {
        const float want = c.ref(x[i]);
        if (c.exact || !std::isfinite(want)) {
          EXPECT_TRUE(SameFloat(y[i], want)) << static_cast<int>(c.op) << " x=" << x[i] << " got " << y[i] << " want " << want;
        } else {  // a fused multiply-add may round once less than the reference
          EXPECT_NEAR(y[i], want, 2e-7f * (std::fabs(x[i]) + 1.f)) << static_cast<int>(c.op) << " x=" << x[i];
        }
        EXPECT_TRUE(SameFloat(inplace[i], y[i]));
      }
    }
  }
}

float RefBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0.f;
}

constexpr BinaryOp kBinaryOps[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv};

TEST_P(SimdTest, BinaryOpsAreExact) {
  for (int64_t n : {0, 1, 5, 16, 19, 64, 77, 1000}) {
    const std::vector<float> a = RandomFloats(n, 1), b = RandomFloats(n, 2);
    for (BinaryOp op : kBinaryOps) {
      std::vector<float> y(n), ya(n), yb(n);
      Binary(nullptr, op, a.data(), b.data(), y.data(), n);
      BinaryScalarA(nullptr, op, 1.75f, b.data(), ya.data(), n);
      BinaryScalarB(nullptr, op, a.data(), -3.25f, yb.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_TRUE(SameFloat(y[i], RefBinary(op, a[i], b[i])));
        EXPECT_TRUE(SameFloat(ya[i], RefBinary(op, 1.75f, b[i])));
        EXPECT_TRUE(SameFloat(yb[i], RefBinary(op, a[i], -3.25f)));
      }
    }
  }
}

// Broadcast reference by explicit index arithmetic.
std::vector<float> RefBroadcast(BinaryOp op, const std::vector<float>& a, const std::vector<int64_t>& as,
                                const std::vector<float>& b, const std::vector<int64_t>& bs,
                                const std::vector<int64_t>& ys) {
  int64_t total = 1;
  for (int64_t d : ys) total *= d;
  std::vector<float> y(total);
  const int r = static_cast<int>(ys.size());
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int d = r - 1; d >= 0; --d) {
      const int64_t idx = rem % ys[d];
      rem /= ys[d];
      const int da = d - (r - static_cast<int>(as.size())), db = d - (r - static_cast<int>(bs.size()));
      if (da >= 0) {
        if (as[da] != 1) ia += idx * sa;
        sa *= as[da];
      }
      if (db >= 0) {
        if (bs[db] != 1) ib += idx * sb;
        sb *= bs[db];
      }
    }
    y[i] = RefBinary(op, a[ia], b[ib]);
  }
  return y;
}

TEST_P(SimdTest, BroadcastBinaryMatchesIndexArithmetic) {
  struct Case {
    std::vector<int64_t> a, b, y;
  };
  const Case cases[] = {
      {{2, 8, 5, 7}, {8, 1, 1}, {2, 8, 5, 7}},      // per-channel
      {{3, 4, 37}, {37}, {3, 4, 37}},               // last-dim
      {{37}, {3, 4, 37}, {3, 4, 37}},               // last-dim, a broadcast
      {{1}, {6, 5}, {6, 5}},                        // scalar a
      {{6, 5}, {}, {6, 5}},                         // rank-0 b
      {{3, 1, 5}, {1, 4, 1}, {3, 4, 5}},            // both broadcast
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},   // same shape
      {{1, 1}, {1}, {1, 1}},                        // all ones
      {{4, 1, 3, 1, 2}, {5, 1, 1, 2}, {4, 5, 3, 1, 2}},
      {{2, 3}, {0, 1, 3}, {0, 2, 3}},               // empty
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.a) + " op " + ::testing::PrintToString(c.b));
    int64_t na = 1, nb = 1, ny = 1;
    for (int64_t d : c.a) na *= d;
    for (int64_t d : c.b) nb *= d;
    for (int64_t d : c.y) ny *= d;
    const std::vector<float> a = RandomFloats(na, 3), b = RandomFloats(nb, 4);
    for (BinaryOp op : kBinaryOps) {
      std::vector<float> y(ny);
      ASSERT_TRUE(BinaryBroadcast(nullptr, op, a.data(), c.a.data(), static_cast<int>(c.a.size()), b.data(),
                                  c.b.data(), static_cast<int>(c.b.size()), y.data(), c.y.data(),
                                  static_cast<int>(c.y.size())));
      const std::vector<float> want = RefBroadcast(op, a, c.a, b, c.b, c.y);
      for (int64_t i = 0; i < ny; ++i) ASSERT_TRUE(SameFloat(y[i], want[i])) << "element " << i;
    }
  }
  const std::vector<int64_t> rank9(9, 1);
  float one = 1.f, out = 0.f;
  EXPECT_FALSE(BinaryBroadcast(nullptr, BinaryOp::kAdd, &one, rank9.data(), 9, &one, rank9.data(), 9, &out, rank9.data(), 9));
}

// Softmax reference in double along the middle axis of [outer, n, inner].
std::vector<float> RefSoftmax(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t r) { return (o * n + r) * inner + i; };
      double mx = x[at(0)];
      for (int64_t r = 1; r < n; ++r) mx = std::max<double>(mx, x[at(r)]);
      double s = 0;
      for (int64_t r = 0; r < n; ++r) s += std::exp(x[at(r)] - mx);
      for (int64_t r = 0; r < n; ++r)
        y[at(r)] = static_cast<float>(log ? x[at(r)] - mx - std::log(s) : std::exp(x[at(r)] - mx) / s);
    }
  return y;
}

TEST_P(SimdTest, SoftmaxMatchesDoubleReference) {
  ThreadPool pool(2);
  for (bool log : {false, true}) {
    for (auto [outer, n, inner] : {std::tuple<int64_t, int64_t, int64_t>{3, 1, 1}, {5, 7, 1}, {4, 128, 1}, {2, 33, 1},
                                   {2, 5, 3}, {3, 17, 70}, {1, 4, 16}, {64, 100, 1}}) {
      std::mt19937 rng(static_cast<uint32_t>(n * 31 + inner));
      std::normal_distribution<float> d(0.f, 5.f);
      std::vector<float> x(outer * n * inner);
      for (float& v : x) v = d(rng);
      std::vector<float> y(x.size());
      if (inner == 1) SoftmaxRows(&pool, x.data(), y.data(), outer, n, log);
      else SoftmaxStrided(&pool, x.data(), y.data(), outer, n, inner, log);
      const std::vector<float> want = RefSoftmax(x, outer, n, inner, log);
      for (size_t i = 0; i < x.size(); ++i)
        // LogSoftmax subtracts log(sum) with sum >= 1 accumulated in float: a few ulp of 1 absolute.
        ASSERT_NEAR(y[i], want[i], 2e-6 * std::fabs(want[i]) + (log ? 5e-7 : 1e-7))
            << "log=" << log << " n=" << n << " inner=" << inner;
    }
  }
}

TEST_P(SimdTest, SoftmaxRowsWithNaNOrInfinitiesAreNaNLikeTheReference) {
  for (bool log : {false, true}) {
    const std::vector<std::vector<float>> rows = {
        {1.f, kNaN, 2.f}, {kNaN, 1.f, 2.f}, {-kInf, -kInf, -kInf}, {1.f, kInf, 2.f}};
    for (const auto& row : rows) {
      for (int64_t rep : {1, 9}) {  // also with the special value in a full vector
        std::vector<float> x;
        for (int64_t k = 0; k < rep; ++k) x.insert(x.end(), row.begin(), row.end());
        std::vector<float> y(x.size());
        SoftmaxRows(nullptr, x.data(), y.data(), 1, static_cast<int64_t>(x.size()), log);
        for (float v : y) EXPECT_TRUE(std::isnan(v));
      }
    }
    // A row of -inf but one finite value: a one-hot softmax.
    std::vector<float> x = {-kInf, 3.f, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf};
    std::vector<float> y(x.size());
    SoftmaxRows(nullptr, x.data(), y.data(), 1, static_cast<int64_t>(x.size()), log);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], i == 1 ? (log ? 0.f : 1.f) : (log ? -kInf : 0.f));
  }
}

TEST_P(SimdTest, LayerNormMatchesDoubleReference) {
  ThreadPool pool(2);
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {8, 768}, {5, 33}, {2, 5000}}) {
    std::mt19937 rng(static_cast<uint32_t>(rows * n));
    std::normal_distribution<float> d(3.f, 2.f);
    std::vector<float> x(rows * n), scale(n), bias(n);
    for (float& v : x) v = d(rng);
    for (float& v : scale) v = d(rng);
    for (float& v : bias) v = d(rng);
    for (bool with_bias : {false, true}) {
      std::vector<float> y(x.size()), mean(rows), inv(rows);
      LayerNormRows(&pool, x.data(), scale.data(), with_bias ? bias.data() : nullptr, y.data(), rows, n, 1e-5f,
                    mean.data(), inv.data());
      for (int64_t r = 0; r < rows; ++r) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < n; ++j) m += x[r * n + j];
        m /= n;
        for (int64_t j = 0; j < n; ++j) v += (x[r * n + j] - m) * (x[r * n + j] - m);
        v /= n;
        const double iv = 1.0 / std::sqrt(v + 1e-5);
        EXPECT_NEAR(mean[r], m, 1e-6 * std::fabs(m) + 1e-6);
        EXPECT_NEAR(inv[r], iv, 1e-6 * iv);
        for (int64_t j = 0; j < n; ++j) {
          const double want = (x[r * n + j] - m) * iv * scale[j] + (with_bias ? bias[j] : 0.0);
          ASSERT_NEAR(y[r * n + j], want, 1e-5 * (std::fabs(want) + std::fabs(scale[j]))) << r << "," << j;
        }
      }
    }
  }
}

TEST_P(SimdTest, SumsMaxesAndAffineMatchReferences) {
  ThreadPool pool(2);
  for (int64_t n : {0, 1, 15, 16, 17, 100, 4095, 4096, 4097, 100000}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::uniform_real_distribution<float> d(-1.f, 3.f);
    std::vector<float> x(n);
    for (float& v : x) v = d(rng);
    double want = 0;
    float want_max = -kInf;
    for (float v : x) {
      want += v;
      want_max = std::max(want_max, v);
    }
    EXPECT_NEAR(Sum(x.data(), n), want, 1e-6 * (std::fabs(want) + n));
    EXPECT_EQ(Max(x.data(), n), want_max);
  }
  const std::vector<float> with_nan = {1.f, kNaN, 7.f, -2.f, kNaN, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 6.5f, 1.f, 1.f, 1.f, 1.f, 1.f};
  EXPECT_EQ(Max(with_nan.data(), static_cast<int64_t>(with_nan.size())), 7.f);

  const int64_t rows = 37, n = 301;
  std::vector<float> x(rows * n), out(rows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) - 8.f;
  SumRows(&pool, x.data(), rows, n, 1.0 / n, out.data());
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += x[r * n + j];
    EXPECT_NEAR(out[r], s / n, 1e-6);
  }

  const int64_t channels = 5;
  const std::vector<float> mean = {0.f, 1.f, -2.f, 3.f, 0.5f}, scale = {1.f, 2.f, 0.5f, -1.f, 3.f},
                           shift = {0.f, -1.f, 1.f, 2.f, 0.25f};
  std::vector<float> y(x.size());
  ChannelAffine(&pool, x.data(), y.data(), rows, n, channels, mean.data(), scale.data(), shift.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t c = r % channels;
      EXPECT_FLOAT_EQ(y[r * n + j], (x[r * n + j] - mean[c]) * scale[c] + shift[c]);
    }
}

// HalvingMax against the chain it promises, bit for bit: every row length up to 40 (each vector
// width's tails), 2-D and 3-D windows, 3 output rows, values drawn from a few so that ties are
// common, -0 and +0, NaN first in a window and elsewhere.
TEST_P(SimdTest, HalvingMaxFollowsTheScalarChain) {
  std::mt19937 rng(7);
  const std::vector<float> pool_values = {-1.f, 0.f, -0.f, 2.f, 2.f, kNaN, -kInf, kInf, 3.5f};
  std::uniform_int_distribution<size_t> pick(0, pool_values.size() - 1);
  int nan_results = 0, negative_zero_results = 0;
  const int64_t out_rows = 3;
  for (bool three_d : {false, true}) {
    for (int64_t n = 0; n <= 40; ++n) {
      const int64_t row_stride = 2 * n + 1;  // + 1: an unused odd column
      const int64_t depth_stride = 2 * out_rows * row_stride + 5;
      std::vector<float> in((three_d ? 2 : 1) * depth_stride);
      for (float& v : in) v = pool_values[pick(rng)];
      std::vector<float> out(out_rows * n + 1, 123.f);
      HalvingMax(in.data(), row_stride, depth_stride, three_d, out.data(), out_rows, n);
      for (int64_t r = 0; r < out_rows; ++r) {
        const float* a = in.data() + 2 * r * row_stride;
        const float* rows[4] = {a, a + row_stride, a + depth_stride, a + depth_stride + row_stride};
        for (int64_t j = 0; j < n; ++j) {
          float v = rows[0][2 * j];
          for (int k = 0; k < (three_d ? 4 : 2); ++k) {
            if (k > 0 && rows[k][2 * j] > v) v = rows[k][2 * j];
            if (rows[k][2 * j + 1] > v) v = rows[k][2 * j + 1];
          }
          const float got = out[r * n + j];
          if (std::isnan(v)) {
            ASSERT_TRUE(std::isnan(got)) << "3-D " << three_d << " n=" << n << " r=" << r << " j=" << j;
            ++nan_results;
          } else {
            uint32_t got_bits, want_bits;
            std::memcpy(&got_bits, &got, 4);
            std::memcpy(&want_bits, &v, 4);
            ASSERT_EQ(got_bits, want_bits) << "3-D " << three_d << " n=" << n << " r=" << r << " j=" << j << " got "
                                           << got << " want " << v;
            negative_zero_results += v == 0.f && std::signbit(v);
          }
        }
      }
      EXPECT_EQ(out[out_rows * n], 123.f) << "wrote past the output, n=" << n;
    }
  }
  EXPECT_GT(nan_results, 0);
  EXPECT_GT(negative_zero_results, 0);
}

TEST_P(SimdTest, ThreadedAndSingleThreadedResultsAgree) {
  ThreadPool pool(2);
  const int64_t n = 300007;
  const std::vector<float> x = RandomFloats(n, 9);
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kTanh, UnaryOp::kErf}) {
    std::vector<float> a(n), b(n);
    Unary(nullptr, op, x.data(), a.data(), n);
    Unary(&pool, op, x.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(SameFloat(a[i], b[i]));
  }
}

TEST_P(SimdTest, FusedActivationEpiloguesMatchTheirFormulas) {
  struct Case {
    const char* name;
    std::vector<float> params;
    std::function<double(double)> ref;
  };
  const Case cases[] = {
      {"Relu", {}, [](double x) { return x < 0 ? 0.0 : x; }},
      {"LeakyRelu", {0.1f}, [](double x) { return x < 0 ? static_cast<double>(0.1f * static_cast<float>(x)) : x; }},
      {"Clip", {-1.f, 2.5f}, [](double x) { return std::min(2.5, std::max(-1.0, x)); }},
      {"Sigmoid", {}, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", {}, [](double x) { return std::tanh(x); }},
      {"HardSigmoid", {0.2f, 0.5f}, [](double x) { return std::min(1.0, std::max(0.0, 0.2 * x + 0.5)); }},
      {"HardSwish", {}, [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); }},
      {"Elu", {1.5f}, [](double x) { return x >= 0 ? x : 1.5 * std::expm1(x); }},
      {"Gelu", {}, RefGelu},
      {"GeluTanh", {}, RefGeluTanh},
  };
  std::vector<float> x;
  for (float v = -9.f; v <= 9.f; v += 0.0137f) x.push_back(v);
  for (const Case& c : cases) {
    auto act = ParseActivation(c.name, c.params);
    ASSERT_TRUE(act.ok()) << c.name;
    std::vector<float> y = x;
    ApplyActivation(*act, y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], c.ref(x[i]), 1e-6 * std::fabs(c.ref(x[i])) + 3e-7 * (1 + std::fabs(x[i]))) << c.name << " x=" << x[i];
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SimdTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         IsaParamName);

TEST(SimdIsa, SelectionIsClampedToTheCpu) {
  const Isa detected = DetectedIsa();
  EXPECT_EQ(SetActiveIsa(Isa::kScalar), Isa::kScalar);
  EXPECT_EQ(ActiveIsa(), Isa::kScalar);
  EXPECT_EQ(SetActiveIsa(Isa::kAvx512), detected);
  EXPECT_EQ(ActiveIsa(), detected);
}

}  // namespace
}  // namespace simd
}  // namespace inferloop
