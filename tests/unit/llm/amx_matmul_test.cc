// AMX tile products of repacked Q8_0 / Q4_0 weights: against the dequantized reference
// (DequantizeRow, double sums), for row counts that leave a partial 16-row group, odd block
// counts, and token counts around the 16-row tile; and batch invariance: a token's results are
// bit-identical whether it is multiplied alone or with others.
#include "llm/amx_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/float_types.h"
#include "llm/llm_kernels.h"
#include "llm/weight_matrix.h"

namespace inferloop::llm {
namespace {

struct Weights {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

Weights RandomWeights(GgmlType type, int64_t rows, int64_t cols, std::mt19937& g) {
  Weights r;
  const int block = type == GgmlType::kQ8_0 ? 34 : 18;
  r.bytes.resize(rows * cols / 32 * block);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (size_t b = 0; b < r.bytes.size() / block; ++b) {
    uint8_t* blk = r.bytes.data() + b * block;
    const uint16_t d = FloatToHalf(scale(g));
    std::memcpy(blk, &d, 2);
    for (int i = 2; i < block; ++i) blk[i] = static_cast<uint8_t>(byte(g));
    if (type == GgmlType::kQ8_0) {
      for (int i = 2; i < block; ++i) if (blk[i] == 0x80) blk[i] = 0x81;  // -128 is not produced by quantizers
    }
  }
  r.w.name = "w";
  r.w.type = type;
  r.w.rows = rows;
  r.w.cols = cols;
  r.w.row_bytes = cols / 32 * block;
  r.w.data = r.bytes;
  return r;
}

class AmxMatMulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!AmxAvailable()) GTEST_SKIP() << "this CPU (or INFERLOOP_ISA) has no AMX-INT8";
  }
};

TEST_F(AmxMatMulTest, MatchesDequantizedReference) {
  std::mt19937 g(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t cols : {32, 96, 2048}) {
      const int64_t rows = 40;  // two full groups and a partial one
      Weights w = RandomWeights(type, rows, cols, g);
      auto packed = AmxPackedWeight::Pack(w.w);
      ASSERT_TRUE(packed.ok()) << packed.status().ToString();
      ASSERT_EQ((*packed)->groups(), 3);
      std::vector<float> wd(rows * cols);
      for (int64_t r = 0; r < rows; ++r) ReadRow(w.w, r, wd.data() + r * cols);
      for (int64_t T : {1, 5, 16, 17, 37}) {
        std::vector<float> x(T * cols);
        for (float& v : x) v = nd(g);
        Q8Rows xq;
        xq.Resize(T, cols);
        for (int64_t t = 0; t < T; ++t) xq.Quantize(t, x.data() + t * cols);
        const int64_t stride = rows + 3;  // a wider output row: nothing past `rows` is written
        std::vector<float> y(T * stride, -7.0f);
        AmxMatMul(**packed, xq, T, y.data(), stride, 0, (*packed)->groups());
        for (int64_t t = 0; t < T; ++t) {
          const Q8Row xr = xq.Row(t);
          for (int64_t r = 0; r < rows; ++r) {
            double want = 0, mag = 0;
            for (int64_t i = 0; i < cols; ++i) {
              const double p = static_cast<double>(wd[r * cols + i]) * xr.d[i / 32] * xr.q[i];
              want += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(y[t * stride + r], want, 1e-5 * mag + 1e-6)
                << GgmlTypeName(type) << " cols=" << cols << " T=" << T << " t=" << t << " r=" << r;
          }
          for (int64_t r = rows; r < stride; ++r) ASSERT_EQ(y[t * stride + r], -7.0f);
        }
      }
    }
  }
}

TEST_F(AmxMatMulTest, TokenResultsDoNotDependOnTheBatch) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const int64_t rows = 48, cols = 256, T = 21;
    Weights w = RandomWeights(type, rows, cols, g);
    auto packed = AmxPackedWeight::Pack(w.w);
    ASSERT_TRUE(packed.ok());
    std::vector<float> x(T * cols);
    for (float& v : x) v = nd(g);
    Q8Rows all;
    all.Resize(T, cols);
    for (int64_t t = 0; t < T; ++t) all.Quantize(t, x.data() + t * cols);
    std::vector<float> y(T * rows);
    AmxMatMul(**packed, all, T, y.data(), rows, 0, (*packed)->groups());
    // Each token alone, and groups split differently: bit-identical results.
    for (int64_t t = 0; t < T; ++t) {
      Q8Rows one;
      one.Resize(1, cols);
      one.Quantize(0, x.data() + t * cols);
      std::vector<float> y1(rows);
      AmxMatMul(**packed, one, 1, y1.data(), rows, 0, 1);
      AmxMatMul(**packed, one, 1, y1.data(), rows, 1, 3);
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y1[r], y[t * rows + r]) << GgmlTypeName(type) << " t=" << t << " r=" << r;
    }
  }
}

TEST_F(AmxMatMulTest, RejectsOtherTypes) {
  std::vector<uint8_t> bytes(64 * 4 * 4);
  WeightMatrix w;
  w.name = "f32";
  w.type = GgmlType::kF32;
  w.rows = 4;
  w.cols = 64;
  w.row_bytes = 256;
  w.data = bytes;
  auto packed = AmxPackedWeight::Pack(w);
  ASSERT_FALSE(packed.ok());
  EXPECT_NE(packed.status().message().find("'f32' is F32"), std::string::npos) << packed.status().ToString();
  EXPECT_FALSE(PackForGemm(w));
  EXPECT_EQ(w.packed, nullptr);
}

}  // namespace
}  // namespace inferloop::llm
