// ggml block formats: sizes, row sizes, and dequantization of hand-built blocks whose values are
// worked out by hand from the format descriptions (independent of gguf-py, which
// gguf_file_test.cc compares against).
#include "llm/ggml_types.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/float_types.h"

namespace inferloop::llm {
namespace {

void PutHalf(uint8_t* p, float f) {
  const uint16_t h = FloatToHalf(f);
  std::memcpy(p, &h, 2);
}

TEST(GgmlTypes, TraitsAndRowBytes) {
  EXPECT_EQ(GgmlTypeName(GgmlType::kQ4_K), "Q4_K");
  EXPECT_EQ(GgmlTypeName(77), "type 77");
  EXPECT_EQ(FindGgmlTypeTraits(77), nullptr);
  EXPECT_EQ(*GgmlRowBytes(0, 10), 40u);
  EXPECT_EQ(*GgmlRowBytes(30, 10), 20u);
  EXPECT_EQ(*GgmlRowBytes(8, 64), 68u);
  EXPECT_EQ(*GgmlRowBytes(2, 4096), 128u * 18);
  EXPECT_EQ(*GgmlRowBytes(12, 4096), 16u * 144);
  EXPECT_EQ(*GgmlRowBytes(14, 4096), 16u * 210);
  EXPECT_EQ(GgmlRowBytes(14, 100).status().message(),
            "Q6_K row of 100 elements is not a multiple of the block size 256");
  EXPECT_FALSE(GgmlRowBytes(0, UINT64_MAX).ok());  // overflow is an error, not a wrap
  EXPECT_FALSE(GgmlRowBytes(99, 1).ok());
}

TEST(GgmlTypes, Q8_0) {
  std::vector<uint8_t> b(34);
  PutHalf(b.data(), 0.5f);
  for (int i = 0; i < 32; ++i) b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 16));
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, b, y).ok());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * (i - 16));
}

TEST(GgmlTypes, Q4_0) {
  std::vector<uint8_t> b(18);
  PutHalf(b.data(), 2.0f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_0, b, y).ok());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * (j - 8));
    EXPECT_EQ(y[j + 16], 2.0f * (15 - j - 8));
  }
}

TEST(GgmlTypes, Q4_K) {
  std::vector<uint8_t> b(144, 0);
  PutHalf(b.data(), 0.25f);      // d
  PutHalf(b.data() + 2, 1.0f);   // dmin
  uint8_t* s = b.data() + 4;
  // Sub-block j: scale j + 1 and min 2j; sub-blocks 4..7 use the split encoding, with scale
  // 40 + j (needs the high bits) and min 50 + j.
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(j + 1);
    s[j + 4] = static_cast<uint8_t>(2 * j);
  }
  for (int j = 4; j < 8; ++j) {
    const int sc = 40 + j, m = 50 + j;
    s[j + 4] = static_cast<uint8_t>((sc & 0x0F) | ((m & 0x0F) << 4));
    s[j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
    s[j] |= static_cast<uint8_t>((m >> 4) << 6);
  }
  for (int k = 0; k < 128; ++k) b[16 + k] = static_cast<uint8_t>((k % 16) | ((15 - k % 16) << 4));
  std::vector<float> y(256);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_K, b, y).ok());
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32, l = i % 32, chunk = i / 64;
    const int byte = chunk * 32 + l;
    const int q = (sub % 2 == 0) ? (byte % 16) : (15 - byte % 16);
    const int sc = sub < 4 ? sub + 1 : 40 + sub, m = sub < 4 ? 2 * sub : 50 + sub;
    EXPECT_FLOAT_EQ(y[i], 0.25f * sc * q - 1.0f * m) << "element " << i;
  }
}

TEST(GgmlTypes, Q6_K) {
  std::vector<uint8_t> b(210, 0);
  uint8_t* ql = b.data();
  uint8_t* qh = b.data() + 128;
  auto* sc = reinterpret_cast<int8_t*>(b.data() + 192);
  PutHalf(b.data() + 208, 0.5f);
  for (int k = 0; k < 16; ++k) sc[k] = static_cast<int8_t>(k - 8);
  // Element i: q (0..63) = i % 64; written into its low-4 and high-2 bit places.
  auto set = [&](int i, int q) {
    const int half = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
    uint8_t& low = ql[half * 64 + l + (quarter % 2) * 32];
    low |= static_cast<uint8_t>((q & 0x0F) << (quarter >= 2 ? 4 : 0));
    qh[half * 32 + l] |= static_cast<uint8_t>((q >> 4) << (2 * quarter));
  };
  for (int i = 0; i < 256; ++i) set(i, (i * 7) % 64);
  std::vector<float> y(256);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ6_K, b, y).ok());
  for (int i = 0; i < 256; ++i) {
    const int scale = sc[i / 16];  // one scale per 16 consecutive elements
    EXPECT_EQ(y[i], 0.5f * scale * ((i * 7) % 64 - 32)) << "element " << i;
  }
}

TEST(GgmlTypes, PlainTypes) {
  std::vector<uint8_t> b(4);
  PutHalf(b.data(), -1.5f);
  const uint16_t bf = FloatToBFloat16(3.0f);
  std::memcpy(b.data() + 2, &bf, 2);
  std::vector<float> y(1);
  ASSERT_TRUE(DequantizeRow(GgmlType::kF16, std::span<const uint8_t>(b).first(2), y).ok());
  EXPECT_EQ(y[0], -1.5f);
  ASSERT_TRUE(DequantizeRow(GgmlType::kBF16, std::span<const uint8_t>(b).subspan(2), y).ok());
  EXPECT_EQ(y[0], 3.0f);
}

TEST(GgmlTypes, ErrorsNameTheType) {
  std::vector<uint8_t> b(176);
  std::vector<float> y(256);
  Status st = DequantizeRow(GgmlType::kQ5_K, b, y);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(st.message(),
            "dequantizing ggml tensor type Q5_K is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");
  EXPECT_NE(DequantizeRow(static_cast<GgmlType>(77), b, y).message().find("type 77"), std::string::npos);
  std::vector<uint8_t> short_block(33);
  std::vector<float> y32(32);
  EXPECT_EQ(DequantizeRow(GgmlType::kQ8_0, short_block, y32).message(),
            "Q8_0 row of 32 elements needs 34 bytes, got 33");
  std::vector<float> y40(40);
  EXPECT_FALSE(DequantizeRow(GgmlType::kQ8_0, short_block, y40).ok());
}

}  // namespace
}  // namespace inferloop::llm
