// Group products of Q8_0 / Q4_0 weights repacked in 16-row groups (llm_kernels.h gemm_g16_*), in
// every table this CPU can run that has them: against the exact formula the header promises (the
// block's int32 dot computed here from the file's bytes, then fma block after block: bit for bit),
// against the scalar table's dot (close), with row counts that leave a partial group (and one
// partial half-group for AVX2), token counts that leave partial register tiles, and groups taken
// from the middle of a matrix (how threads split the work). With AMX, the tile kernels must give
// the same bits.
//
// The Q4_K / Q6_K group products (gemm_g16_q4_k / gemm_g16_q6_k) promise sums per sub-block
// (llm_kernels.h), computed here from the file's bytes and checked bit for bit, and against a
// double-precision sum over the dequantized weights (close), with extreme sub-block scales and
// mins, and rows / tokens / columns as above.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/float_types.h"
#include "llm/ggml_types.h"
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

// rows x cols random K-quant weights in the file's layout. `extreme`: every sub-block scale and
// min at its largest (Q4_K 63; Q6_K -128 or 127) and the largest 6-bit values; otherwise random
// bytes (random 6-bit scales and mins) with super-block scales of a realistic size.
std::vector<uint8_t> RandomKMatrix(GgmlType type, int64_t rows, int64_t cols, bool extreme, std::mt19937& g) {
  const int bytes = type == GgmlType::kQ4_K ? 144 : 210;
  std::vector<uint8_t> w(rows * cols / 256 * bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  for (size_t b = 0; b < w.size() / bytes; ++b) {
    uint8_t* blk = w.data() + b * bytes;
    for (int i = 0; i < bytes; ++i) blk[i] = static_cast<uint8_t>(byte(g));
    if (extreme) {
      if (type == GgmlType::kQ4_K) {
        std::memset(blk + 4, 0xFF, 12);  // scales and mins 63
        for (int i = 16; i < 144; ++i) blk[i] |= (b % 2 == 0) ? 0xFF : 0x00;
      } else {
        for (int i = 0; i < 192; ++i) blk[i] |= (b % 2 == 0) ? 0xFF : 0x00;
        for (int i = 192; i < 208; ++i) blk[i] = (i + b) % 2 == 0 ? 0x80 : 0x7F;
      }
    }
    const uint16_t d = FloatToHalf(scale(g)), dmin = FloatToHalf(scale(g));
    std::memcpy(blk + (type == GgmlType::kQ4_K ? 0 : 208), &d, 2);
    if (type == GgmlType::kQ4_K) std::memcpy(blk + 2, &dmin, 2);
  }
  return w;
}

WeightMatrix KView(GgmlType type, int64_t rows, int64_t cols, const std::vector<uint8_t>& bytes) {
  WeightMatrix w;
  w.name = "w";
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = bytes.size() / rows;
  w.data = bytes;
  return w;
}

using G16KFn = void (*)(const uint8_t*, int64_t, int64_t, const Q8KRows&, int64_t, float*, int64_t);

G16KFn KKernel(const LlmKernelTable& t, GgmlType type) {
  return type == GgmlType::kQ4_K ? t.gemm_g16_q4_k : t.gemm_g16_q6_k;
}

// The group products' promise (llm_kernels.h gemm_g16_q4_k) for row r, computed here from the
// file's bytes (ggml's block layouts) with exact integers and the promised float steps.
float SubBlockSums(const WeightMatrix& w, int64_t r, const Q8KRow& x) {
  const bool q4 = w.type == GgmlType::kQ4_K;
  const int block = q4 ? 144 : 210;
  float acc = 0.0f;
  for (int64_t b = 0; b < w.cols / 256; ++b) {
    const uint8_t* blk = w.Row(r).data() + b * block;
    const int8_t* xq = x.q + b * 256;
    int q[256], sc[16], mn[8];
    if (q4) {
      const uint8_t* s = blk + 4;  // 12 bytes of 6-bit scales and mins (ggml's get_scale_min_k4)
      for (int j = 0; j < 8; ++j) {
        sc[j] = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        mn[j] = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      }
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          q[64 * j + l] = blk[16 + 32 * j + l] & 0xF;
          q[64 * j + 32 + l] = blk[16 + 32 * j + l] >> 4;
        }
      }
    } else {
      const uint8_t *ql = blk, *qh = blk + 128;
      for (int s = 0; s < 16; ++s) sc[s] = static_cast<int8_t>(blk[192 + s]);
      for (int n = 0; n < 256; n += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; ++l) {
          q[n + l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
          q[n + l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
          q[n + l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
          q[n + l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
      }
    }
    const int sub = q4 ? 32 : 16;
    int32_t tot = 0, mins = 0;
    for (int s = 0; s < 256 / sub; ++s) {
      int32_t sum = 0;
      for (int i = s * sub; i < (s + 1) * sub; ++i) sum += (q4 ? q[i] : q[i] - 32) * xq[i];
      tot += sc[s] * sum;
      if (q4) {
        int32_t xs = 0;
        for (int i = s * sub; i < (s + 1) * sub; ++i) xs += xq[i];
        mins += mn[s] * xs;
      }
    }
    const float d = HalfToFloat(static_cast<uint16_t>(blk[q4 ? 0 : 208] | blk[q4 ? 1 : 209] << 8));
    const float c = d * static_cast<float>(tot);
    if (q4) {
      const float dmin = HalfToFloat(static_cast<uint16_t>(blk[2] | blk[3] << 8));
      acc = std::fma(std::fma(-dmin, static_cast<float>(mins), c), x.d[b], acc);
    } else {
      acc = std::fma(c, x.d[b], acc);
    }
  }
  return acc;
}

// Every table's group products give the promised sub-block sums bit for bit (so the same bits on
// every table), and are close to the exact dot.
TEST(GemmG16, KQuantsGiveThePromisedSubBlockSumsBitForBit) {
  std::mt19937 g(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int checked = 0;
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    for (int64_t cols : {256, 768, 4096}) {
      for (int64_t rows : {5, 13, 16, 43}) {
        for (bool extreme : {false, true}) {
          if (extreme && rows != 43) continue;
          const std::vector<uint8_t> bytes = RandomKMatrix(type, rows, cols, extreme, g);
          const WeightMatrix w = KView(type, rows, cols, bytes);
          auto packed = AmxPackedWeight::Pack(w);
          ASSERT_TRUE(packed.ok()) << packed.status().ToString();
          std::vector<float> wd(rows * cols);
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_TRUE(DequantizeRow(type, w.Row(r), std::span<float>(wd.data() + r * cols, cols)).ok());
          }
          for (int64_t T : {1, 2, 5, 8, 9, 17, 64}) {
            if (cols == 4096 && T > 9 && rows != 43) continue;  // keeps the test short
            std::vector<float> x(T * cols);
            for (float& v : x) v = nd(g);
            if (extreme) {
              for (int64_t i = 0; i < T * cols; i += 7) x[i] = (i % 2 == 0 ? 1 : -1) * 1e4f;  // activations at +-127
              for (int64_t i = 0; i < cols; ++i) x[i] = 1.0f;  // token 0: every activation at -127
            }
            Q8KRows xk;
            xk.Resize(T, cols);
            for (int64_t t = 0; t < T; ++t) xk.Quantize(t, x.data() + t * cols);
            const int64_t stride = rows + 3;  // nothing past `rows` may be written
            for (const LlmKernelTable* k : AvailableLlmKernels()) {
              G16KFn fn = KKernel(*k, type);
              if (fn == nullptr) continue;
              std::vector<float> y(T * stride, -7.0f);
              fn((*packed)->group(0), (*packed)->groups(), rows, xk, T, y.data(), stride);
              for (int64_t t = 0; t < T; ++t) {
                const Q8KRow xr = xk.Row(t);
                for (int64_t r = 0; r < rows; ++r) {
                  const float got = y[t * stride + r];
                  ASSERT_EQ(got, SubBlockSums(w, r, xr)) << k->name << ", " << GgmlTypeName(type) << " cols=" << cols
                                                         << " rows=" << rows << " T=" << T << " t=" << t << " r=" << r
                                                         << " extreme=" << extreme;
                  double want = 0, mag = 0;
                  for (int64_t i = 0; i < cols; ++i) {
                    const double p = static_cast<double>(wd[r * cols + i]) * xr.d[i / 256] * xr.q[i];
                    want += p;
                    mag += std::fabs(p);
                  }
                  ASSERT_NEAR(got, want, 1e-5 * mag + 1e-6) << k->name << " t=" << t << " r=" << r;
                }
                for (int64_t r = rows; r < stride; ++r) ASSERT_EQ(y[t * stride + r], -7.0f) << k->name;
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no table on this CPU has K-quant group products (AVX2 or AVX-512 VNNI)";
}

// Groups [1, 3) of a 40-row K-quant matrix alone: the same values as the whole, nothing else written.
TEST(GemmG16, KQuantGroupsFromTheMiddle) {
  std::mt19937 g(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 40, cols = 512, T = 11;
  int checked = 0;
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    const std::vector<uint8_t> bytes = RandomKMatrix(type, rows, cols, false, g);
    auto packed = AmxPackedWeight::Pack(KView(type, rows, cols, bytes));
    ASSERT_TRUE(packed.ok());
    std::vector<float> x(T * cols);
    for (float& v : x) v = nd(g);
    Q8KRows xk;
    xk.Resize(T, cols);
    for (int64_t t = 0; t < T; ++t) xk.Quantize(t, x.data() + t * cols);
    for (const LlmKernelTable* k : AvailableLlmKernels()) {
      G16KFn fn = KKernel(*k, type);
      if (fn == nullptr) continue;
      std::vector<float> all(T * rows), part(T * rows, -7.0f);
      fn((*packed)->group(0), 3, rows, xk, T, all.data(), rows);
      fn((*packed)->group(1), 2, rows - 16, xk, T, part.data() + 16, rows);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(part[t * rows + r], r < 16 ? -7.0f : all[t * rows + r]) << k->name << " t=" << t << " r=" << r;
        }
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no table on this CPU has K-quant group products (AVX2 or AVX-512 VNNI)";
}

// Pack refuses K-quant rows that are not whole super-blocks.
TEST(GemmG16, KQuantPackNeedsWholeSuperBlocks) {
  std::vector<uint8_t> bytes(4 * 144);
  WeightMatrix w = KView(GgmlType::kQ4_K, 4, 256, bytes);
  w.cols = 128;
  EXPECT_FALSE(AmxPackedWeight::Pack(w).ok());
}

}  // namespace
}  // namespace inferloop::llm
