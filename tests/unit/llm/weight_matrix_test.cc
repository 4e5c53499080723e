// MatMul / MatMulMany over K-quant weights (Q4_K, Q6_K): against the dequantized reference
// (DequantizeRow's weights times the Q8_K-rounded activations), and a token's result independent
// of how many other rows share the product and of threading.
#include "llm/weight_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/float_types.h"
#include "base/thread_pool.h"
#include "llm/ggml_types.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

// `rows` random rows of `cols` values of a K-quant type (random quantized bytes and sub-block
// scales, realistic half-precision super-block scales).
std::vector<uint8_t> RandomKMatrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& g) {
  const int bytes = type == GgmlType::kQ4_K ? 144 : 210;
  std::vector<uint8_t> w(rows * cols / 256 * bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.005f);
  for (size_t b = 0; b < w.size() / bytes; ++b) {
    uint8_t* blk = w.data() + b * bytes;
    for (int i = 0; i < bytes; ++i) blk[i] = static_cast<uint8_t>(byte(g));
    const uint16_t d = FloatToHalf(scale(g)), dmin = FloatToHalf(scale(g));
    std::memcpy(blk + (type == GgmlType::kQ4_K ? 0 : 208), &d, 2);
    if (type == GgmlType::kQ4_K) std::memcpy(blk + 2, &dmin, 2);
  }
  return w;
}

WeightMatrix View(GgmlType type, int64_t rows, int64_t cols, const std::vector<uint8_t>& data) {
  WeightMatrix w;
  w.name = "w";
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = data.size() / rows;
  w.data = data;
  return w;
}

// The exact dot of a dequantized weight row (cols floats) with a quantized activation row, and the
// sum of the products' magnitudes (the scale of a tolerance).
struct ExactDot {
  double value = 0, magnitude = 0;
};
ExactDot DotOfQuantized(const float* w, const Q8KRow& x, int64_t cols) {
  ExactDot d;
  for (int64_t i = 0; i < cols; ++i) {
    const double p = static_cast<double>(w[i]) * x.d[i / 256] * x.q[i];
    d.value += p;
    d.magnitude += std::fabs(p);
  }
  return d;
}

TEST(WeightMatrix, KQuantMatMulMatchesReferenceAndIsBatchInvariant) {
  std::mt19937 g(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t cols = 768, T = 6;
  ThreadPool pool(2);
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    // Not a multiple of any tile or grain; rows * cols * T above MatMul's threshold for threads.
    const int64_t rows = 101;
    const auto data = RandomKMatrix(type, rows, cols, g);
    const WeightMatrix w = View(type, rows, cols, data);
    std::vector<float> X(T * cols);
    for (float& v : X) v = nd(g);
    std::vector<float> Y(T * rows), Yp(T * rows);
    MatMul(w, X.data(), T, Y.data(), nullptr);
    MatMul(w, X.data(), T, Yp.data(), &pool);
    Q8KRows xk;
    xk.Resize(T, cols);
    std::vector<float> wd(cols);
    for (int64_t t = 0; t < T; ++t) {
      xk.Quantize(t, X.data() + t * cols);
      // Alone (T = 1) gives bit for bit what the batch of T gives.
      std::vector<float> y1(rows);
      MatMul(w, X.data() + t * cols, 1, y1.data(), nullptr);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(y1[r], Y[t * rows + r]) << GgmlTypeName(type) << " t=" << t << " r=" << r;
        ASSERT_EQ(Yp[t * rows + r], Y[t * rows + r]) << GgmlTypeName(type) << " threaded, t=" << t << " r=" << r;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(DequantizeRow(type, w.Row(r), wd).ok());
      for (int64_t t = 0; t < T; ++t) {
        const ExactDot want = DotOfQuantized(wd.data(), xk.Row(t), cols);
        EXPECT_NEAR(Y[t * rows + r], want.value, 1e-5 * want.magnitude + 1e-6)
            << GgmlTypeName(type) << " t=" << t << " r=" << r;
      }
    }
  }
}

// Q, K and V of different types in one MatMulMany equal three separate MatMuls.
TEST(WeightMatrix, MixedTypesInOneMatMulMany) {
  std::mt19937 g(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t cols = 512, T = 3;
  const auto d4 = RandomKMatrix(GgmlType::kQ4_K, 16, cols, g);
  const auto d6 = RandomKMatrix(GgmlType::kQ6_K, 8, cols, g);
  std::vector<uint8_t> d8(8 * cols / 32 * 34);
  for (size_t b = 0; b < d8.size() / 34; ++b) {
    const uint16_t d = FloatToHalf(0.01f);
    std::memcpy(d8.data() + b * 34, &d, 2);
    for (int i = 2; i < 34; ++i) d8[b * 34 + i] = static_cast<uint8_t>(static_cast<int>(g() % 255) - 127);
  }
  const WeightMatrix w4 = View(GgmlType::kQ4_K, 16, cols, d4), w6 = View(GgmlType::kQ6_K, 8, cols, d6),
                     w8 = View(GgmlType::kQ8_0, 8, cols, d8);
  std::vector<float> X(T * cols);
  for (float& v : X) v = nd(g);
  std::vector<float> a(T * 16), b(T * 8), c(T * 8), a1(T * 16), b1(T * 8), c1(T * 8);
  const WeightMatrix* ws[3] = {&w4, &w6, &w8};
  float* ys[3] = {a.data(), b.data(), c.data()};
  MatMulMany(ws, X.data(), T, ys, nullptr);
  MatMul(w4, X.data(), T, a1.data(), nullptr);
  MatMul(w6, X.data(), T, b1.data(), nullptr);
  MatMul(w8, X.data(), T, c1.data(), nullptr);
  EXPECT_EQ(a, a1);
  EXPECT_EQ(b, b1);
  EXPECT_EQ(c, c1);
}

// K-quant weights repacked in 16-row groups (PackForGemm, where the active table has the group
// products), for any number of tokens, threaded or not, mixed with unpacked weights in one
// MatMulMany: close to the file layout's results (the group products sum per sub-block,
// llm_kernels.h), and a token alone bit for bit what it gets in the batch, threaded or not.
TEST(WeightMatrix, PackedKQuantsAgreeWithTheFileLayout) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t cols = 1024, rows = 37;
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    const auto data = RandomKMatrix(type, rows, cols, g);
    const WeightMatrix file = View(type, rows, cols, data);
    WeightMatrix packed = file;
    if (!PackForGemm(packed)) GTEST_SKIP() << "the active kernel table (" << ActiveLlmKernels().name << ") does not pack";
    ASSERT_NE(packed.packed, nullptr);
    std::vector<float> wd(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(DequantizeRow(type, file.Row(r), std::span<float>(wd.data() + r * cols, cols)).ok());
    }
    for (int64_t T : {1, 3, 12, 33, 64}) {
      std::vector<float> X(T * cols);
      for (float& v : X) v = nd(g);
      std::vector<float> want(T * rows), got(T * rows), got_mt(T * rows), other(T * rows);
      MatMul(file, X.data(), T, want.data(), nullptr);
      MatMul(packed, X.data(), T, got.data(), nullptr);
      const WeightMatrix* ws[2] = {&packed, &file};
      float* ys[2] = {got_mt.data(), other.data()};
      MatMulMany(ws, X.data(), T, ys, &pool);
      EXPECT_EQ(other, want) << GgmlTypeName(type) << " T=" << T << " threaded, unpacked";
      EXPECT_EQ(got_mt, got) << GgmlTypeName(type) << " T=" << T << " threaded";
      Q8KRows xk;
      xk.Resize(T, cols);
      for (int64_t t = 0; t < T; ++t) {
        xk.Quantize(t, X.data() + t * cols);
        std::vector<float> alone(rows);
        MatMul(packed, X.data() + t * cols, 1, alone.data(), nullptr);
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(alone[r], got[t * rows + r]) << GgmlTypeName(type) << " T=" << T << " t=" << t << " r=" << r;
          // Both within rounding of the exact dot of the quantized values.
          const ExactDot exact = DotOfQuantized(wd.data() + r * cols, xk.Row(t), cols);
          const double tolerance = 1e-5 * exact.magnitude + 1e-6;
          ASSERT_NEAR(got[t * rows + r], exact.value, tolerance) << GgmlTypeName(type) << " T=" << T << " r=" << r;
          ASSERT_NEAR(want[t * rows + r], exact.value, tolerance) << GgmlTypeName(type) << " T=" << T << " r=" << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace inferloop::llm
