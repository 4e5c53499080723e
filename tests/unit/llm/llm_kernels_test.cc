// LLM dot kernels: every ISA version available on this CPU against the scalar formula on
// dequantized values (DequantizeRow, the reference code), for block counts that exercise the
// paired and the tail paths.
#include "llm/llm_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/float_types.h"
#include "llm/ggml_types.h"

namespace inferloop::llm {
namespace {

std::vector<uint8_t> RandomBlocks(GgmlType type, int64_t n, std::mt19937& g) {
  const int bytes = type == GgmlType::kQ8_0 ? 34 : 18;
  std::vector<uint8_t> w(n / 32 * bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (int64_t b = 0; b < n / 32; ++b) {
    uint8_t* blk = w.data() + b * bytes;
    const uint16_t d = FloatToHalf(scale(g));
    std::memcpy(blk, &d, 2);
    for (int i = 2; i < bytes; ++i) blk[i] = static_cast<uint8_t>(byte(g));
    if (type == GgmlType::kQ8_0) {
      for (int i = 2; i < bytes; ++i) if (blk[i] == 0x80) blk[i] = 0x81;  // -128 is not produced by quantizers
    }
  }
  return w;
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(LlmKernels, QuantizedDotsMatchDequantizedReference) {
  std::mt19937 g(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto tables = AvailableLlmKernels();
  ASSERT_FALSE(tables.empty());
  for (int64_t n : {32, 64, 96, 2048, 2080}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(g);
    Q8Rows xq;
    xq.Resize(1, n);
    xq.Quantize(0, x.data());
    const Q8Row row = xq.Row(0);
    std::vector<float> xd(n);  // the quantized activations as floats
    for (int64_t i = 0; i < n; ++i) {
      xd[i] = row.d[i / 32] * row.q[i];
      ASSERT_LE(std::fabs(xd[i] - x[i]), row.d[i / 32] * 0.6f + 1e-6f);  // half + the scale's fp16 rounding
    }
    for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      const auto w = RandomBlocks(type, n, g);
      std::vector<float> wd(n);
      ASSERT_TRUE(DequantizeRow(type, w, wd).ok());
      const double want = Dot(wd, xd);
      double mag = 0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(wd[i]) * xd[i]);
      for (const LlmKernelTable* t : tables) {
        const float got = type == GgmlType::kQ8_0 ? t->dot_q8_0(w.data(), row, n) : t->dot_q4_0(w.data(), row, n);
        EXPECT_NEAR(got, want, 1e-5 * mag + 1e-6) << t->name << " " << GgmlTypeName(type) << " n=" << n;
      }
    }
    std::vector<float> wf(n);
    std::vector<uint16_t> wh(n);
    for (int64_t i = 0; i < n; ++i) {
      wh[i] = FloatToHalf(nd(g));
      wf[i] = HalfToFloat(wh[i]);
    }
    for (const LlmKernelTable* t : tables) {
      EXPECT_NEAR(t->dot_f32(wf.data(), x.data(), n), Dot(wf, x), 1e-4 * n) << t->name;
      EXPECT_NEAR(t->dot_f16(wh.data(), x.data(), n), Dot(wf, x), 1e-4 * n) << t->name;
    }
  }
  // Odd lengths of the float kernels (masked tails).
  for (int64_t n : {1, 7, 17, 33}) {
    std::vector<float> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) { a[i] = nd(g); b[i] = nd(g); }
    for (const LlmKernelTable* t : tables) EXPECT_NEAR(t->dot_f32(a.data(), b.data(), n), Dot(a, b), 1e-4) << t->name << " n=" << n;
  }
}

// Attention's several-head steps give each head the single calls' bits: whole vectors, tails,
// every count of heads around the kernels' blocks, one row and several (rows in order).
TEST(LlmKernels, HeadsStepsEqualSingleCallsBitForBit) {
  std::mt19937 g(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {7, 8, 16, 33, 64, 72, 128}) {
    const int kRows = 5;
    const int64_t x_stride = n + 3;
    std::vector<uint16_t> w(kRows * x_stride);
    for (auto& v : w) v = FloatToHalf(nd(g));
    for (int heads : {1, 2, 3, 4, 5, 8, 9, 12, 13}) {
      std::vector<float> x(heads * n), a(heads * 7), y0(heads * n);
      for (float& v : x) v = nd(g);
      for (float& v : a) v = nd(g);
      for (float& v : y0) v = nd(g);
      for (const LlmKernelTable* t : AvailableLlmKernels()) {
        for (int rows : {1, 2, 3, kRows}) {
          const int64_t out_stride = rows + 2;
          std::vector<float> dots(heads * out_stride, -1.0f);
          t->dot_f16_rows(w.data(), x_stride, rows, x.data(), n, heads, dots.data(), out_stride);
          for (int h = 0; h < heads; ++h) {
            for (int r = 0; r < rows; ++r) {
              ASSERT_EQ(dots[h * out_stride + r], t->dot_f16(w.data() + r * x_stride, x.data() + h * n, n))
                  << t->name << " n " << n << " heads " << heads << " rows " << rows << " head " << h << " row " << r;
            }
            EXPECT_EQ(dots[h * out_stride + rows], -1.0f) << "wrote past the rows";
          }
          std::vector<float> y = y0;
          t->axpy_f16_rows(a.data(), 7, w.data(), x_stride, rows, y.data(), n, heads);
          for (int h = 0; h < heads; ++h) {
            std::vector<float> one(y0.begin() + h * n, y0.begin() + (h + 1) * n);
            for (int r = 0; r < rows; ++r) t->axpy_f16(a[7 * h + r], w.data() + r * x_stride, one.data(), n);
            for (int64_t i = 0; i < n; ++i) {
              ASSERT_EQ(y[h * n + i], one[i]) << t->name << " n " << n << " heads " << heads << " rows " << rows
                                              << " head " << h << " i " << i;
            }
          }
        }
      }
    }
  }
}

// The Q8_0 cache's value step for several heads: each head's sum that of the single call.
// A Q8_0 cache's key dots a block of rows at a time: each (row, head) bit for bit dot_q8_0's.
TEST(LlmKernels, DotQ8_0RowsEqualsSingleCallsBitForBit) {
  std::mt19937 g(24);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {32, 64, 128}) {
    const int kRows = 5;
    const int64_t stride = n / 32 * 34 + 6;  // cache rows are wider than one head's blocks
    std::vector<uint8_t> w(kRows * stride);
    for (int r = 0; r < kRows; ++r) {
      const auto blocks = RandomBlocks(GgmlType::kQ8_0, n, g);
      std::copy(blocks.begin(), blocks.end(), w.begin() + r * stride);
    }
    for (int heads : {1, 3, 8}) {
      Q8Rows xq;
      xq.Resize(heads, n);
      std::vector<float> x(n);
      std::vector<Q8Row> rows(heads);
      for (int h = 0; h < heads; ++h) {
        for (float& v : x) v = nd(g);
        xq.Quantize(h, x.data());
        rows[h] = xq.Row(h);
      }
      for (const LlmKernelTable* t : AvailableLlmKernels()) {
        for (int nrows : {1, 2, kRows}) {
          const int64_t out_stride = nrows + 1;
          std::vector<float> dots(heads * out_stride, -1.0f);
          t->dot_q8_0_rows(w.data(), stride, nrows, rows.data(), heads, n, dots.data(), out_stride);
          for (int h = 0; h < heads; ++h) {
            for (int r = 0; r < nrows; ++r) {
              ASSERT_EQ(dots[h * out_stride + r], t->dot_q8_0(w.data() + r * stride, rows[h], n))
                  << t->name << " n " << n << " heads " << heads << " rows " << nrows << " head " << h << " row " << r;
            }
            EXPECT_EQ(dots[h * out_stride + nrows], -1.0f) << "wrote past the rows";
          }
        }
      }
    }
  }
}

TEST(LlmKernels, AxpyQ8_0HeadsEqualsSingleCallsBitForBit) {
  std::mt19937 g(22);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {32, 64, 128}) {
    const auto x = RandomBlocks(GgmlType::kQ8_0, n, g);
    for (int heads : {1, 3, 8, 13}) {
      std::vector<float> a(heads), y0(heads * n);
      for (float& v : a) v = nd(g);
      for (float& v : y0) v = nd(g);
      for (const LlmKernelTable* t : AvailableLlmKernels()) {
        std::vector<float> y = y0;
        t->axpy_q8_0_heads(a.data(), x.data(), y.data(), n, heads);
        for (int h = 0; h < heads; ++h) {
          std::vector<float> one(y0.begin() + h * n, y0.begin() + (h + 1) * n);
          t->axpy_q8_0(a[h], x.data(), one.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(y[h * n + i], one[i]) << t->name << " n " << n << " heads " << heads << " head " << h << " i " << i;
          }
        }
      }
    }
  }
}

// Attention's softmax weights: within a few ulp of the double-precision softmax before the
// rounding to half precision, so exactly that rounding or one of its neighbours; they sum to 1.
TEST(LlmKernels, SoftmaxWeightsAreTheHalfRoundedSoftmax) {
  std::mt19937 g(23);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int64_t n : {1, 2, 7, 16, 17, 100, 515}) {
    std::vector<float> scores(n);
    for (float& v : scores) v = nd(g);
    const float mx = *std::max_element(scores.begin(), scores.end());
    std::vector<double> want(n);
    double total = 0;
    for (int64_t j = 0; j < n; ++j) total += want[j] = std::exp(static_cast<double>(scores[j]) - mx);
    for (const LlmKernelTable* t : AvailableLlmKernels()) {
      std::vector<float> w = scores;
      t->softmax_weights_f16(w.data(), n, mx);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const float exact = static_cast<float>(want[j] / total);
        const uint16_t h = FloatToHalf(exact);
        // The half nearest the float result, or a neighbour when the float is within a few ulp
        // of a rounding boundary.
        const float lo = HalfToFloat(static_cast<uint16_t>(h - (h > 0 ? 1 : 0))), hi = HalfToFloat(static_cast<uint16_t>(h + 1));
        ASSERT_EQ(HalfToFloat(FloatToHalf(w[j])), w[j]) << t->name << " n " << n << " j " << j << ": not a half value";
        ASSERT_GE(w[j], lo) << t->name << " n " << n << " j " << j;
        ASSERT_LE(w[j], hi) << t->name << " n " << n << " j " << j;
        if (std::fabs(exact - HalfToFloat(h)) < 0.25f * (hi - HalfToFloat(h))) {
          EXPECT_EQ(w[j], HalfToFloat(h)) << t->name << " n " << n << " j " << j;  // clear of a boundary
        }
        sum += w[j];
      }
      EXPECT_NEAR(sum, 1.0, 1e-3 * std::max<double>(1, std::sqrt(static_cast<double>(n)))) << t->name << " n " << n;
    }
  }
}

// Attention's scaled scores and their maximum: the products as the scalar loop rounds them, the
// largest of them with NaN scores passed over, at lengths around the vector widths.
TEST(LlmKernels, ScaleMaxScalesAndFindsTheLargestScore) {
  std::mt19937 g(31);
  std::normal_distribution<float> nd(0.0f, 10.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 5, 8, 15, 16, 31, 32, 33, 100, 1027}) {
    for (int variant = 0; variant < 4; ++variant) {
      std::vector<float> scores(n);
      for (float& v : scores) v = nd(g);
      if (variant == 1) scores[n / 2] = nan;
      if (variant == 2) scores[n - 1] = inf;
      if (variant == 3) std::fill(scores.begin(), scores.end(), nan);
      std::vector<float> want = scores;
      float want_max = -inf;
      for (float& v : want) {
        v *= 0.125f;
        if (!std::isnan(v)) want_max = std::max(want_max, v);
      }
      for (const LlmKernelTable* t : AvailableLlmKernels()) {
        std::vector<float> got = scores;
        EXPECT_EQ(t->scale_max(got.data(), n, 0.125f), want_max) << t->name << " n " << n << " variant " << variant;
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_TRUE(got[j] == want[j] || (std::isnan(got[j]) && std::isnan(want[j])))
              << t->name << " n " << n << " j " << j << ": " << got[j] << " vs " << want[j];
        }
      }
    }
  }
}

// The feed-forward gate SiLU(g) * up: within a few ulp of the double-precision formula for
// every table, at lengths with and without a vector tail, in place, and with the values where
// exp(-g) overflows or underflows (|g| up to 1e4), signed zeros, infinities and NaN.
TEST(LlmKernels, SwiGluIsSiluOfTheGateTimesUp) {
  std::mt19937 g(29);
  std::normal_distribution<float> nd(0.0f, 6.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {1, 7, 8, 17, 64, 5632 + 3}) {
    std::vector<float> gate(n), up(n);
    for (float& v : gate) v = nd(g);
    for (float& v : up) v = nd(g);
    const float special[] = {0.0f, -0.0f, 100.0f, -100.0f, 1e4f, -1e4f, 89.0f, -89.0f, inf, -inf, nan};
    for (size_t i = 0; i < std::size(special) && static_cast<int64_t>(i) < n; ++i) gate[n - 1 - i] = special[i];
    for (const LlmKernelTable* t : AvailableLlmKernels()) {
      std::vector<float> y(n), in_place = gate;
      t->swiglu(gate.data(), up.data(), y.data(), n);
      t->swiglu(in_place.data(), up.data(), in_place.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double x = gate[i];
        // exp(-g) in float overflows to inf below g = -88.72 (the gate is then -0, as with libm's
        // expf or llama.cpp's), and -inf / inf is NaN.
        double e = std::exp(-x);
        if (e > std::numeric_limits<float>::max()) e = inf;
        const double want = x / (1.0 + e) * up[i];
        ASSERT_EQ(std::memcmp(&y[i], &in_place[i], sizeof(float)), 0) << t->name << " n " << n << " i " << i;
        if (std::isnan(want) || std::isinf(want)) {
          EXPECT_EQ(std::isnan(y[i]), std::isnan(want)) << t->name << " g " << x << " got " << y[i];
          if (std::isinf(want)) {
            EXPECT_EQ(y[i], want) << t->name << " g " << x << " up " << up[i];
          }
          continue;
        }
        EXPECT_NEAR(y[i], want, 4 * std::numeric_limits<float>::epsilon() * std::fabs(want) + 1e-38)
            << t->name << " n " << n << " g " << x << " up " << up[i];
        if (want == 0) {
          EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << t->name << " g " << x << " up " << up[i];
        }
      }
    }
  }
}

// The batched kernels give what the per-row dots give, for every tile size.
TEST(LlmKernels, GemmEqualsDots) {
  std::mt19937 g(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 256, rows = 5;
  for (const LlmKernelTable* t : AvailableLlmKernels()) {
    for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      auto gemm = type == GgmlType::kQ8_0 ? t->gemm_q8_0 : t->gemm_q4_0;
      if (gemm == nullptr) continue;
      std::vector<uint8_t> w;
      uint64_t row_bytes = 0;
      for (int64_t r = 0; r < rows; ++r) {
        auto row = RandomBlocks(type, n, g);
        row_bytes = row.size();
        w.insert(w.end(), row.begin(), row.end());
      }
      for (int64_t T : {1, 2, 7, 8, 9, 17}) {
        std::vector<float> x(T * n);
        for (float& v : x) v = nd(g);
        Q8Rows xq;
        xq.Resize(T, n);
        for (int64_t i = 0; i < T; ++i) xq.Quantize(i, x.data() + i * n);
        std::vector<float> y(T * rows, -1.0f);
        gemm(w.data(), row_bytes, rows, xq, T, y.data(), rows);
        for (int64_t i = 0; i < T; ++i) {
          for (int64_t r = 0; r < rows; ++r) {
            const float want = type == GgmlType::kQ8_0 ? t->dot_q8_0(w.data() + r * row_bytes, xq.Row(i), n)
                                                       : t->dot_q4_0(w.data() + r * row_bytes, xq.Row(i), n);
            EXPECT_NEAR(y[i * rows + r], want, 1e-4f * (1 + std::fabs(want))) << t->name << " T=" << T << " r=" << r;
          }
        }
      }
    }
  }
}

// Random Q4_K / Q6_K super-blocks: random quantized bytes and sub-block scales (any 6-bit / int8
// values), half-precision super-block scales of a realistic size.
std::vector<uint8_t> RandomKBlocks(GgmlType type, int64_t n, std::mt19937& g) {
  const int bytes = type == GgmlType::kQ4_K ? 144 : 210;
  std::vector<uint8_t> w(n / 256 * bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.005f);
  for (int64_t b = 0; b < n / 256; ++b) {
    uint8_t* blk = w.data() + b * bytes;
    for (int i = 0; i < bytes; ++i) blk[i] = static_cast<uint8_t>(byte(g));
    const uint16_t d = FloatToHalf(scale(g)), dmin = FloatToHalf(scale(g));
    if (type == GgmlType::kQ4_K) {
      std::memcpy(blk, &d, 2);
      std::memcpy(blk + 2, &dmin, 2);
    } else {
      std::memcpy(blk + 208, &d, 2);
    }
  }
  return w;
}

float KDot(const LlmKernelTable& t, GgmlType type, const uint8_t* w, const Q8KRow& x, int64_t n) {
  return type == GgmlType::kQ4_K ? t.dot_q4_k(w, x, n) : t.dot_q6_k(w, x, n);
}

TEST(LlmKernels, Q8KQuantizationFollowsLlamaCpp) {
  // The value of largest magnitude is -127: iscale = -127 / -127 = 1, so q = round(x), ties to even.
  std::vector<float> x(512, 0.0f);
  x[0] = 2.5f;
  x[1] = 3.5f;
  x[2] = -0.5f;
  x[3] = -127.0f;
  x[4] = 127.0f;  // same magnitude, later: the first one sets the sign
  x[20] = 1.49f;
  // The second block is all zero.
  Q8KRows q;
  q.Resize(1, 512);
  q.Quantize(0, x.data());
  const Q8KRow r = q.Row(0);
  EXPECT_EQ(r.d[0], 1.0f);
  EXPECT_EQ(r.q[0], 2);
  EXPECT_EQ(r.q[1], 4);
  EXPECT_EQ(r.q[2], 0);
  EXPECT_EQ(r.q[3], -127);
  EXPECT_EQ(r.q[4], 127);
  EXPECT_EQ(r.q[20], 1);
  EXPECT_EQ(r.bsum[0], 2 + 4 + 0 - 127 + 127);
  EXPECT_EQ(r.bsum[1], 1);
  EXPECT_EQ(r.d[1], 0.0f);
  for (int i = 256; i < 512; ++i) ASSERT_EQ(r.q[i], 0);
  for (int j = 16; j < 32; ++j) EXPECT_EQ(r.bsum[j], 0);
  // A positive maximum gives a negative scale: d = 1 / (-127 / m).
  std::vector<float> y(256, 0.25f);
  y[9] = 3.0f;
  q.Resize(1, 256);
  q.Quantize(0, y.data());
  EXPECT_EQ(q.Row(0).d[0], 1.0f / (-127.0f / 3.0f));
  EXPECT_EQ(q.Row(0).q[9], -127);
  EXPECT_EQ(q.Row(0).q[0], static_cast<int>(std::nearbyint(-127.0f / 3.0f * 0.25f)));
}

TEST(LlmKernels, Q8KQuantizationOfNonFiniteValuesIsDefined) {
  std::vector<float> x(256, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  x[7] = std::numeric_limits<float>::quiet_NaN();
  Q8KRows q;
  q.Resize(1, 256);
  q.Quantize(0, x.data());  // no undefined conversion (UBSan); values bounded
  for (int i = 0; i < 256; ++i) {
    ASSERT_GE(q.Row(0).q[i], -127);
    ASSERT_LE(q.Row(0).q[i], 127);
  }
}

TEST(LlmKernels, KQuantDotsMatchDequantizedReference) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto tables = AvailableLlmKernels();
  for (int64_t n : {256, 512, 768, 2048, 5632}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(g);
    if (n >= 512) std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero activation block
    Q8KRows xk;
    xk.Resize(1, n);
    xk.Quantize(0, x.data());
    const Q8KRow row = xk.Row(0);
    std::vector<float> xd(n);
    for (int64_t i = 0; i < n; ++i) {
      xd[i] = row.d[i / 256] * row.q[i];
      ASSERT_LE(std::fabs(xd[i] - x[i]), std::fabs(row.d[i / 256]) * 0.5001f + 1e-6f) << i;
    }
    for (int64_t j = 0; j < n / 16; ++j) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += row.q[j * 16 + i];
      ASSERT_EQ(row.bsum[j], s);
    }
    for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
      const auto w = RandomKBlocks(type, n, g);
      std::vector<float> wd(n);
      ASSERT_TRUE(DequantizeRow(type, w, wd).ok());
      const double want = Dot(wd, xd);
      double mag = 0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(wd[i]) * xd[i]);
      for (const LlmKernelTable* t : tables) {
        ASSERT_NE(t->dot_q4_k, nullptr) << t->name;
        ASSERT_NE(t->dot_q6_k, nullptr) << t->name;
        EXPECT_NEAR(KDot(*t, type, w.data(), row, n), want, 1e-5 * mag + 1e-6) << t->name << " " << GgmlTypeName(type) << " n=" << n;
        // Every table adds the same terms in the same order (llama.cpp's): equal bit for bit.
        EXPECT_EQ(KDot(*t, type, w.data(), row, n), KDot(*ScalarLlmKernels(), type, w.data(), row, n))
            << t->name << " " << GgmlTypeName(type) << " n=" << n;
      }
    }
  }
}

TEST(LlmKernels, KQuantGemmEqualsDots) {
  std::mt19937 g(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 512, rows = 5;
  int checked = 0;
  for (const LlmKernelTable* t : AvailableLlmKernels()) {
    for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
      auto gemm = type == GgmlType::kQ4_K ? t->gemm_q4_k : t->gemm_q6_k;
      if (gemm == nullptr) continue;
      std::vector<uint8_t> w;
      uint64_t row_bytes = 0;
      for (int64_t r = 0; r < rows; ++r) {
        auto row = RandomKBlocks(type, n, g);
        row_bytes = row.size();
        w.insert(w.end(), row.begin(), row.end());
      }
      for (int64_t T : {1, 2, 3, 4, 5, 8, 9, 17}) {
        std::vector<float> x(T * n);
        for (float& v : x) v = nd(g);
        Q8KRows xk;
        xk.Resize(T, n);
        for (int64_t i = 0; i < T; ++i) xk.Quantize(i, x.data() + i * n);
        std::vector<float> y(T * rows, -1.0f);
        gemm(w.data(), row_bytes, rows, xk, T, y.data(), rows);
        for (int64_t i = 0; i < T; ++i) {
          for (int64_t r = 0; r < rows; ++r) {
            // The same arithmetic per activation row whatever the tile: equal, not just close.
            EXPECT_EQ(y[i * rows + r], KDot(*t, type, w.data() + r * row_bytes, xk.Row(i), n))
                << t->name << " " << GgmlTypeName(type) << " T=" << T << " r=" << r;
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no table on this CPU has a batched K-quant kernel";
}

TEST(LlmKernels, QuantizeZeroBlock) {
  std::vector<float> x(64, 0.0f);
  x[40] = -3.0f;
  Q8Rows q;
  q.Resize(1, 64);
  q.Quantize(0, x.data());
  const Q8Row r = q.Row(0);
  EXPECT_EQ(r.d[0], 0.0f);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(r.q[i], 0);
  EXPECT_EQ(r.q[40], -127);
  EXPECT_EQ(r.d[1], HalfToFloat(FloatToHalf(3.0f / 127)));  // kept at half precision, as llama.cpp does
  EXPECT_FLOAT_EQ(r.sum[1], -127 * r.d[1]);
}

// Every table's quantize_q8 gives the scalar table's bytes, scales and sums, bit for bit: normal
// values at several scales, a zero block, a block with one large value, ties (x * 127 / amax
// exactly k + 0.5), values near the float maximum, and a negative zero.
TEST(LlmKernels, QuantizeQ8MatchesScalarBitForBit) {
  std::mt19937 g(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 32 * 12;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = nd(g) * std::pow(10.0f, static_cast<float>(i / 32 % 5) - 2);
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f);
  x[100] = 1e4f;
  for (int i = 0; i < 31; ++i) x[160 + i] = static_cast<float>(i - 16) + 0.5f;  // with amax 127: exact ties
  x[191] = 127.0f;
  x[200] = 3e38f;
  x[230] = -3e38f;
  x[260] = -0.0f;
  std::vector<int8_t> q0(n), q1(n);
  std::vector<float> d0(n / 32), d1(n / 32), s0(n / 32), s1(n / 32);
  ScalarLlmKernels()->quantize_q8(x.data(), n, q0.data(), d0.data(), s0.data());
  for (const LlmKernelTable* t : AvailableLlmKernels()) {
    t->quantize_q8(x.data(), n, q1.data(), d1.data(), s1.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(q1[i], q0[i]) << t->name << " i=" << i;
    for (int64_t b = 0; b < n / 32; ++b) {
      ASSERT_EQ(std::memcmp(&d1[b], &d0[b], 4), 0) << t->name << " b=" << b << " " << d1[b] << " " << d0[b];
      ASSERT_EQ(std::memcmp(&s1[b], &s0[b], 4), 0) << t->name << " b=" << b << " " << s1[b] << " " << s0[b];
    }
  }
}

// Every table's quantize_q8_k gives the scalar table's bytes, scales and 16-value sums, bit for
// bit, per super-block of 256: normal values at several scales, an all-zero block, exact ties
// (x * 127 / amax = k + 0.5), the largest magnitude twice with opposite signs (the first sets
// the sign), negative zeros, NaN and infinities among normal values, and an all-NaN block.
TEST(LlmKernels, QuantizeQ8KMatchesScalarBitForBit) {
  std::mt19937 g(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 256 * 9;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = nd(g) * std::pow(10.0f, static_cast<float>(i / 256 % 5) - 2);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);                                      // block 1: zeros
  for (int i = 0; i < 255; ++i) x[512 + i] = static_cast<float>(i % 200 - 100) + 0.5f;  // block 2: ties
  x[512 + 255] = -127.0f;
  x[768 + 40] = -900.0f;  // block 3: -900 first, +900 later
  x[768 + 200] = 900.0f;
  x[1024 + 3] = -0.0f;  // block 4: negative zeros and a NaN
  x[1024 + 77] = std::numeric_limits<float>::quiet_NaN();
  x[1280 + 5] = std::numeric_limits<float>::infinity();  // block 5: an infinity and a NaN
  x[1280 + 6] = std::numeric_limits<float>::quiet_NaN();
  std::fill(x.begin() + 1536, x.begin() + 1792, std::numeric_limits<float>::quiet_NaN());  // block 6
  x[1792 + 255] = -3e38f;                                                                   // block 7: last
  std::vector<int8_t> q0(n), q1(n);
  std::vector<float> d0(n / 256), d1(n / 256);
  std::vector<int16_t> s0(n / 16), s1(n / 16);
  ScalarLlmKernels()->quantize_q8_k(x.data(), n, q0.data(), d0.data(), s0.data());
  EXPECT_EQ(q0[768 + 40], -127);  // m = -900 (the first): iscale = -127 / m = 127 / 900
  EXPECT_EQ(q0[768 + 200], 127);
  for (const LlmKernelTable* t : AvailableLlmKernels()) {
    std::fill(q1.begin(), q1.end(), int8_t{99});
    std::fill(s1.begin(), s1.end(), int16_t{9999});
    t->quantize_q8_k(x.data(), n, q1.data(), d1.data(), s1.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(q1[i], q0[i]) << t->name << " i=" << i;
    for (int64_t b = 0; b < n / 256; ++b)
      ASSERT_EQ(std::memcmp(&d1[b], &d0[b], 4), 0) << t->name << " b=" << b << " " << d1[b] << " " << d0[b];
    for (int64_t j = 0; j < n / 16; ++j) ASSERT_EQ(s1[j], s0[j]) << t->name << " j=" << j;
  }
}

}  // namespace
}  // namespace inferloop::llm
