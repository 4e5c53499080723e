// Group products of Q8_0 / Q4_0 weights repacked in 16-row groups (llm_kernels.h gemm_g16_*), in
// every table this CPU can run that has them: against the exact formula the header promises (the
// block's int32 dot computed here from the file's bytes, then fma block after block: bit for bit),
// against the scalar table's dot (close), with row counts that leave a partial group (and one
// partial half-group for AVX2), token counts that leave partial register tiles, and groups taken
// from the middle of a matrix (how threads split the work). With AMX, the tile kernels must give
// the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/float_types.h"
#include "llm/amx_matmul.h"
#include "llm/llm_kernels.h"
#include "llm/weight_matrix.h"

namespace inferloop::llm {
namespace {

// rows x cols random weights in the file's layout: random bytes (Q8_0 including -128), scales of a
// realistic size.
std::vector<uint8_t> RandomMatrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& g) {
  const int block = type == GgmlType::kQ8_0 ? 34 : 18;
  std::vector<uint8_t> bytes(rows * cols / 32 * block);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (size_t b = 0; b < bytes.size() / block; ++b) {
    uint8_t* blk = bytes.data() + b * block;
    const uint16_t d = FloatToHalf(scale(g));
    std::memcpy(blk, &d, 2);
    for (int i = 2; i < block; ++i) blk[i] = static_cast<uint8_t>(byte(g));
  }
  return bytes;
}

WeightMatrix View(GgmlType type, int64_t rows, int64_t cols, const std::vector<uint8_t>& bytes) {
  WeightMatrix w;
  w.name = "w";
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = cols / 32 * (type == GgmlType::kQ8_0 ? 34 : 18);
  w.data = bytes;
  return w;
}

// The exact int32 dot of block b of row r with the activation block.
int32_t BlockDot(const WeightMatrix& w, int64_t r, int64_t b, const int8_t* xq) {
  const uint8_t* blk = w.Row(r).data() + b * (w.type == GgmlType::kQ8_0 ? 34 : 18) + 2;
  int32_t s = 0;
  if (w.type == GgmlType::kQ8_0) {
    for (int i = 0; i < 32; ++i) s += static_cast<int8_t>(blk[i]) * xq[i];
  } else {
    for (int i = 0; i < 16; ++i) s += ((blk[i] & 0x0F) - 8) * xq[i] + ((blk[i] >> 4) - 8) * xq[i + 16];
  }
  return s;
}

// What the header promises for (row r, token x): fma of each block's exact dot, in block order.
float Promised(const WeightMatrix& w, int64_t r, const Q8Row& x) {
  float acc = 0;
  for (int64_t b = 0; b < w.cols / 32; ++b) {
    float dw;
    {
      uint16_t h;
      std::memcpy(&h, w.Row(r).data() + b * (w.type == GgmlType::kQ8_0 ? 34 : 18), 2);
      dw = HalfToFloat(h);
    }
    acc = std::fma(static_cast<float>(BlockDot(w, r, b, x.q + b * 32)), dw * x.d[b], acc);
  }
  return acc;
}

using G16Fn = void (*)(const uint8_t*, int64_t, int64_t, const Q8Rows&, int64_t, float*, int64_t);

G16Fn Kernel(const LlmKernelTable& t, GgmlType type) {
  return type == GgmlType::kQ8_0 ? t.gemm_g16_q8_0 : t.gemm_g16_q4_0;
}

TEST(GemmG16, EqualsThePromisedFormulaAndTheScalarDot) {
  std::mt19937 g(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const LlmKernelTable& scalar = *ScalarLlmKernels();
  int checked = 0;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t cols : {64, 96, 352, 4096}) {
      for (int64_t rows : {5, 16, 43}) {
        const std::vector<uint8_t> bytes = RandomMatrix(type, rows, cols, g);
        const WeightMatrix w = View(type, rows, cols, bytes);
        auto packed = AmxPackedWeight::Pack(w);
        ASSERT_TRUE(packed.ok()) << packed.status().ToString();
        for (int64_t T : {1, 3, 8, 17, 64}) {
          if (cols == 4096 && T > 17 && rows != 43) continue;  // keeps the test short; 43 rows cover it
          std::vector<float> x(T * cols);
          for (float& v : x) v = nd(g);
          Q8Rows xq;
          xq.Resize(T, cols);
          for (int64_t t = 0; t < T; ++t) xq.Quantize(t, x.data() + t * cols);
          std::vector<float> want(T * rows);
          for (int64_t t = 0; t < T; ++t) {
            for (int64_t r = 0; r < rows; ++r) want[t * rows + r] = Promised(w, r, xq.Row(t));
          }
          const int64_t stride = rows + 3;  // nothing past `rows` may be written
          std::vector<const LlmKernelTable*> tables = AvailableLlmKernels();
          for (const LlmKernelTable* k : tables) {
            G16Fn fn = Kernel(*k, type);
            if (fn == nullptr) continue;
            std::vector<float> y(T * stride, -7.0f);
            fn((*packed)->group(0), (*packed)->groups(), rows, xq, T, y.data(), stride);
            for (int64_t t = 0; t < T; ++t) {
              for (int64_t r = 0; r < rows; ++r) {
                const float got = y[t * stride + r];
                ASSERT_EQ(got, want[t * rows + r]) << k->name << " " << GgmlTypeName(type) << " cols=" << cols
                                                   << " rows=" << rows << " T=" << T << " t=" << t << " r=" << r;
                const float dot = type == GgmlType::kQ8_0 ? scalar.dot_q8_0(w.Row(r).data(), xq.Row(t), cols)
                                                          : scalar.dot_q4_0(w.Row(r).data(), xq.Row(t), cols);
                ASSERT_NEAR(got, dot, 1e-4f * (1 + std::fabs(dot))) << k->name << " t=" << t << " r=" << r;
              }
              for (int64_t r = rows; r < stride; ++r) ASSERT_EQ(y[t * stride + r], -7.0f) << k->name;
            }
            ++checked;
          }
          if (AmxAvailable()) {
            std::vector<float> y(T * rows);
            AmxMatMul(**packed, xq, T, y.data(), rows, 0, (*packed)->groups());
            for (int64_t i = 0; i < T * rows; ++i) ASSERT_EQ(y[i], want[i]) << "amx i=" << i;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no table on this CPU has group products (AVX2 or AVX-512 VNNI)";
}

// Groups [1, 3) of a 40-row matrix (the last one partial) alone: the same values as the whole.
TEST(GemmG16, GroupsFromTheMiddle) {
  std::mt19937 g(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 40, cols = 256, T = 13;
  int checked = 0;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const std::vector<uint8_t> bytes = RandomMatrix(type, rows, cols, g);
    auto packed = AmxPackedWeight::Pack(View(type, rows, cols, bytes));
    ASSERT_TRUE(packed.ok());
    std::vector<float> x(T * cols);
    for (float& v : x) v = nd(g);
    Q8Rows xq;
    xq.Resize(T, cols);
    for (int64_t t = 0; t < T; ++t) xq.Quantize(t, x.data() + t * cols);
    for (const LlmKernelTable* k : AvailableLlmKernels()) {
      G16Fn fn = Kernel(*k, type);
      if (fn == nullptr) continue;
      std::vector<float> all(T * rows), part(T * rows, -7.0f);
      fn((*packed)->group(0), 3, rows, xq, T, all.data(), rows);
      fn((*packed)->group(1), 2, rows - 16, xq, T, part.data() + 16, rows);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(part[t * rows + r], r < 16 ? -7.0f : all[t * rows + r]) << k->name << " t=" << t << " r=" << r;
        }
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no table on this CPU has group products (AVX2 or AVX-512 VNNI)";
}

}  // namespace
}  // namespace inferloop::llm
