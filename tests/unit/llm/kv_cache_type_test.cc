// The KV cache's element types (F16, Q8_0): pool sizing per type, Q8_0 rows against ggml's
// quantize_row_q8_0 formula and the dequantize reference (DequantizeRow), the Q8_0 value kernel
// on every ISA, attention over a Q8_0 cache against a double-precision softmax on the dequantized
// rows (and close to the F16 cache's result), and a clear error where Q8_0 does not fit a model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "base/float_types.h"
#include "llm/generation.h"
#include "llm/ggml_types.h"
#include "llm/kv_attention.h"
#include "llm/kv_block_pool.h"
#include "llm/llama_model.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

TEST(KvCacheType, ParseAndNames) {
  EXPECT_EQ(*ParseKvType("f16"), KvType::kF16);
  EXPECT_EQ(*ParseKvType("q8_0"), KvType::kQ8_0);
  for (const char* bad : {"", "F16", "q8", "q4_0", "f32"}) {
    auto r = ParseKvType(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("f16 or q8_0"), std::string::npos) << r.status().message();
  }
  EXPECT_STREQ(KvTypeName(KvType::kF16), "f16");
  EXPECT_STREQ(KvTypeName(KvType::kQ8_0), "q8_0");
}

TEST(KvCacheType, PoolSizingPerType) {
  // 2 layers, 2 KV heads of 64: F16 rows are 128 halves (256 bytes), Q8_0 rows 4 blocks of 34.
  const KvCacheShape f16{2, 128, 16, KvType::kF16, 64};
  const KvCacheShape q8{2, 128, 16, KvType::kQ8_0, 64};
  EXPECT_EQ(f16.row_bytes(), 256u);
  EXPECT_EQ(q8.row_bytes(), 136u);
  EXPECT_EQ(f16.block_bytes(), 2u * 2 * 16 * 256);
  EXPECT_EQ(q8.block_bytes(), 2u * 2 * 16 * 136);
  auto pf = KvBlockPool::Create(f16, 3);
  auto pq = KvBlockPool::Create(q8, 3);
  ASSERT_TRUE(pf.ok() && pq.ok());
  EXPECT_EQ(pf->bytes_per_block(), f16.block_bytes());
  EXPECT_EQ(pq->bytes_per_block(), q8.block_bytes());
  EXPECT_EQ(pq->type(), KvType::kQ8_0);
  // The same memory budget holds 64/34 (~1.88x) as many Q8_0 blocks.
  const size_t budget = size_t{1} << 20;
  EXPECT_EQ(budget / f16.block_bytes(), 64u);
  EXPECT_EQ(budget / q8.block_bytes(), 120u);
  // Head-major blocks: one head's rows back to back (slot s+1 starts a head row, 68 bytes,
  // after slot s), then the next head's 16 rows, the values after the keys of a layer, the next
  // layer after that; blocks hold block_bytes.
  EXPECT_EQ(q8.n_heads(), 2);
  EXPECT_EQ(q8.head_row_bytes(), 68u);
  EXPECT_EQ(f16.head_row_bytes(), 128u);
  EXPECT_EQ(pq->KeyHead(0, 0, 0, 1) - pq->KeyHead(0, 0, 0, 0), 68);
  EXPECT_EQ(pq->KeyHead(0, 0, 1, 0) - pq->KeyHead(0, 0, 0, 0), 16 * 68);
  EXPECT_EQ(pq->ValueHead(0, 0, 0, 0) - pq->KeyHead(0, 0, 0, 0), 2 * 16 * 68);
  EXPECT_EQ(pq->KeyHead(0, 1, 0, 0) - pq->KeyHead(0, 0, 0, 0), 2 * 2 * 16 * 68);
  EXPECT_EQ(pq->KeyHead(1, 0, 0, 0) - pq->KeyHead(0, 0, 0, 0), static_cast<ptrdiff_t>(q8.block_bytes()));
  EXPECT_EQ(pf->KeyHead(0, 0, 1, 3) - pf->KeyHead(0, 0, 0, 0), 16 * 128 + 3 * 128);
  // Copy on write copies a whole Q8_0 block.
  KvSequence a(&*pq);
  ASSERT_TRUE(a.Reserve(20).ok());
  std::memset(a.KeyHead(1, 1, 19), 0x5A, 68);
  KvSequence b = a.Fork();
  ASSERT_TRUE(b.PrepareWrite(19).ok());
  EXPECT_NE(b.KeyHead(1, 1, 19), a.KeyHead(1, 1, 19));
  EXPECT_EQ(std::memcmp(b.KeyHead(1, 1, 19), a.KeyHead(1, 1, 19), 68), 0);
}

TEST(KvCacheType, Q8_0NeedsHeadDimMultipleOf32) {
  auto r = KvBlockPool::Create({2, 32, 16, KvType::kQ8_0, 8}, 4);  // stories260k: 4 heads of 8
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("head dim is 8"), std::string::npos) << r.status().message();
  EXPECT_TRUE(KvBlockPool::Create({2, 32, 16, KvType::kF16, 8}, 4).ok());
  EXPECT_TRUE(KvBlockPool::Create({2, 64, 16, KvType::kQ8_0, 32}, 4).ok());
}

// ggml's quantize_row_q8_0, written out: d = amax / 127 kept as F16, q = x * (127 / amax)
// rounded to nearest even.
std::vector<uint8_t> ReferenceQ8_0(const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / 32 * 34);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const uint16_t d = FloatToHalf(amax / 127.0f);
    std::memcpy(&out[b * 34], &d, 2);
    const float id = amax > 0 ? 127.0f / amax : 0.0f;
    for (int i = 0; i < 32; ++i) out[b * 34 + 2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::nearbyint(x[b * 32 + i] * id)));
  }
  return out;
}

TEST(KvCacheType, Q8_0RowRoundTripWithinHalfAStep) {
  std::mt19937 g(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int n = 256;
  for (float scale : {1e-3f, 1.0f, 40.0f}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(g) * scale;
    std::fill(x.begin() + 64, x.begin() + 96, 0.0f);  // an all-zero block
    x[130] = 63.5f / 127.0f * scale * 4;              // a block with an exact tie: x * 127 / amax = 63.5
    x[131] = scale * 4;
    for (int i = 128; i < 160; ++i) if (i != 130 && i != 131) x[i] = std::clamp(x[i], -scale, scale);
    const std::vector<uint8_t> want = ReferenceQ8_0(x);
    for (const LlmKernelTable* t : AvailableLlmKernels()) {
      std::vector<uint8_t> row(n / 32 * 34);
      StoreKvRow(*t, KvType::kQ8_0, x.data(), n, row.data());
      EXPECT_EQ(row, want) << t->name << " scale " << scale;
      std::vector<float> y(n);
      ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, row, y).ok());
      for (int b = 0; b < n / 32; ++b) {
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        // Half a quantization step d = amax / 127, plus the F16 rounding of the scale over
        // |q| <= 127 (2^-11 relative for normal halves, more for tiny scales, which F16 holds
        // as subnormals), plus float rounding.
        const float d = amax / 127.0f;
        const float bound = 0.5f * d + 127.0f * std::fabs(d - HalfToFloat(FloatToHalf(d))) + 1e-6f * amax;
        for (int i = 0; i < 32; ++i) {
          ASSERT_LE(std::fabs(y[b * 32 + i] - x[b * 32 + i]), bound) << t->name << " block " << b << " i " << i;
        }
      }
    }
  }
}

TEST(KvCacheType, AxpyQ8_0MatchesDequantizedFma) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int n = 128;
  std::vector<float> x(n), y0(n);
  for (float& v : x) v = nd(g);
  for (float& v : y0) v = nd(g);
  std::vector<uint8_t> row(n / 32 * 34);
  StoreKvRow(*ScalarLlmKernels(), KvType::kQ8_0, x.data(), n, row.data());
  std::vector<float> xd(n);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, row, xd).ok());
  const float a = 0.37f;
  for (const LlmKernelTable* t : AvailableLlmKernels()) {
    std::vector<float> y = y0;
    t->axpy_q8_0(a, row.data(), y.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(y[i], std::fma(xd[i], a, y0[i])) << t->name << " i " << i;
  }
}

// One sequence's cache filled with random keys and values (head 1 of 2 is the one attended).
struct Filled {
  KvBlockPool pool;
  KvSequence seq;
};

std::unique_ptr<Filled> Fill(KvType type, int HD, int n, uint32_t seed, const LlmKernelTable& k) {
  auto pool = KvBlockPool::Create({1, 2 * HD, 16, type, HD}, (n + 15) / 16);
  EXPECT_TRUE(pool.ok());
  auto f = std::unique_ptr<Filled>(new Filled{std::move(*pool), KvSequence(nullptr)});
  f->seq = KvSequence(&f->pool);
  EXPECT_TRUE(f->seq.Reserve(n).ok());
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> kv(2 * HD);
  for (int j = 0; j < n; ++j) {  // two heads, as the model stores them: each head's row on its own
    for (float& v : kv) v = nd(g) * 2.0f;
    for (int h = 0; h < 2; ++h) StoreKvRow(k, type, kv.data() + h * HD, HD, f->seq.KeyHead(0, h, j));
    for (float& v : kv) v = nd(g);
    for (int h = 0; h < 2; ++h) StoreKvRow(k, type, kv.data() + h * HD, HD, f->seq.ValueHead(0, h, j));
  }
  return f;
}

TEST(KvCacheType, Q8_0AttentionMatchesDoubleSoftmaxOnDequantizedRows) {
  const int HD = 64;
  const float scale = 1.0f / 8.0f;
  for (int n : {1, 2, 17, 100}) {
    std::mt19937 g(100 + n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> q(HD);
    for (float& v : q) v = nd(g) * 2.0f;
    for (const LlmKernelTable* t : AvailableLlmKernels()) {
      auto f = Fill(KvType::kQ8_0, HD, n, 7 + n, *t);
      AttentionScratch s;
      std::vector<float> out(HD);
      AttendHeads(*t, f->seq, 0, 1, HD, 1, q.data(), n, scale, out.data(), s);
      // Reference: the query as llama.cpp quantizes it (Q8_0), keys and values dequantized,
      // softmax and weighted sum in double.
      std::vector<uint8_t> qrow(HD / 32 * 34);
      StoreKvRow(*ScalarLlmKernels(), KvType::kQ8_0, q.data(), HD, qrow.data());
      std::vector<float> qd(HD), kd(HD), vd(HD);
      ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, qrow, qd).ok());
      std::vector<double> sc(n), want(HD, 0.0);
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < n; ++j) {
        ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, {f->seq.KeyHead(0, 1, j), 68}, kd).ok());
        double d = 0;
        for (int i = 0; i < HD; ++i) d += static_cast<double>(qd[i]) * kd[i];
        sc[j] = d * scale;
        mx = std::max(mx, sc[j]);
      }
      for (int j = 0; j < n; ++j) sum += std::exp(sc[j] - mx);
      for (int j = 0; j < n; ++j) {
        ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, {f->seq.ValueHead(0, 1, j), 68}, vd).ok());
        for (int i = 0; i < HD; ++i) want[i] += std::exp(sc[j] - mx) / sum * vd[i];
      }
      for (int i = 0; i < HD; ++i) EXPECT_NEAR(out[i], want[i], 2e-5) << t->name << " n " << n << " i " << i;
    }
  }
}

TEST(KvCacheType, Q8_0AttentionCloseToF16) {
  const int HD = 128, n = 200;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  const LlmKernelTable& k = ActiveLlmKernels();
  auto f16 = Fill(KvType::kF16, HD, n, 3, k);
  auto q8 = Fill(KvType::kQ8_0, HD, n, 3, k);  // the same keys and values
  std::mt19937 g(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  double worst = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> q(HD), a(HD), b(HD);
    for (float& v : q) v = nd(g) * 2.0f;
    AttentionScratch s;
    AttendHeads(k, f16->seq, 0, 1, HD, 1, q.data(), n, scale, a.data(), s);
    AttendHeads(k, q8->seq, 0, 1, HD, 1, q.data(), n, scale, b.data(), s);
    for (int i = 0; i < HD; ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  // Values are N(0, 1); softmax weights are peaked (scores of std ~2.8). Q8_0's steps are
  // ~max|x| / 127 ~ 2.5% of a value's range, F16's 0.05%: outputs agree to a few hundredths.
  EXPECT_LT(worst, 0.05) << "max |f16 - q8_0| over 20 queries";
  EXPECT_GT(worst, 0.0) << "the two caches should not be identical";
}

TEST(KvCacheType, Stories260kRefusesQ8_0Clearly) {
  const std::string path = INFERLOOP_STORIES260K_GGUF;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "test model not present: " << path;
  auto m = LlamaModel::Load(path);
  ASSERT_TRUE(m.ok());
  GenerationOptions o;
  o.max_tokens = 4;
  o.sampling.temperature = 0;
  o.kv_type = KvType::kQ8_0;
  auto st = Generate(**m, {1, 403}, o, [](int32_t) { return true; });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("head dim is 8"), std::string::npos) << st.status().message();
}

// Grouped-query attention: several query heads over one key/value head in one call give each
// head exactly what a call for that head alone gives (both cache types, every kernel table).
TEST(KvCacheType, GroupedHeadsEqualSingleHeadCalls) {
  const int HD = 64;
  const float scale = 1.0f / 8.0f;
  // 3 heads, and 13 (the kernels' blocks of 8 and 4 heads, then one).
  for (int G : {3, 13})
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    for (int n : {1, 5, 33, 70}) {
      std::mt19937 g(300 + n);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> q(G * HD);
      for (float& v : q) v = nd(g) * 2.0f;
      for (const LlmKernelTable* t : AvailableLlmKernels()) {
        auto f = Fill(type, HD, n, 11 + n, *t);
        AttentionScratch s;
        std::vector<float> grouped(G * HD, -1.0f), single(HD);
        AttendHeads(*t, f->seq, 0, 1, HD, G, q.data(), n, scale, grouped.data(), s);
        for (int h = 0; h < G; ++h) {
          AttentionScratch fresh;
          AttendHeads(*t, f->seq, 0, 1, HD, 1, q.data() + h * HD, n, scale, single.data(), fresh);
          for (int i = 0; i < HD; ++i) {
            ASSERT_EQ(grouped[h * HD + i], single[i]) << t->name << " type " << static_cast<int>(type) << " n " << n
                                                      << " heads " << G << " head " << h << " i " << i;
          }
        }
        // The scratch of a larger call serves a smaller one: same answer again.
        std::vector<float> again(G * HD);
        AttendHeads(*t, f->seq, 0, 1, HD, G, q.data(), n, scale, again.data(), s);
        EXPECT_EQ(again, grouped);
      }
    }
  }
}

}  // namespace
}  // namespace inferloop::llm
