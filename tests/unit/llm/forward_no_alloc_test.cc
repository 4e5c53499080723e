// A forward pass with its buffers kept (ForwardScratch, MatMulScratch) makes no heap allocation
// once it has seen a step of its size: malloc and friends are counted around the call (operator
// new goes through malloc in libstdc++). Off under sanitizers, whose runtimes own malloc.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <vector>

#include "llm/ggml_types.h"
#include "llm/kv_block_pool.h"
#include "llm/llama_model.h"
#include "llm/llm_kernels.h"
#include "llm/weight_matrix.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define LLM_NO_ALLOC_HOOKS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LLM_NO_ALLOC_HOOKS 1
#endif

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

#ifndef LLM_NO_ALLOC_HOOKS
#include "unit/libc_alloc_hooks.h"

void OnHeapAllocation() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
#endif

namespace inferloop::llm {
namespace {

template <typename Fn>
long AllocationsDuring(Fn&& fn) {
  g_allocations = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocations.load();
}

TEST(ForwardNoAlloc, HooksCountAllocations) {
#ifdef LLM_NO_ALLOC_HOOKS
  GTEST_SKIP() << "allocation hooks are off under sanitizers";
#endif
  // The counter itself works: a vector of a new size allocates.
  EXPECT_GE(AllocationsDuring([] { std::vector<float> v(1000); v[0] = 1; }), 1);
}

// A Q8_0 and a Q4_0 product (activations quantized to int8 blocks each call) into a kept scratch.
TEST(ForwardNoAlloc, QuantizedProductWithScratchAllocatesNothing) {
#ifdef LLM_NO_ALLOC_HOOKS
  GTEST_SKIP() << "allocation hooks are off under sanitizers";
#endif
  std::mt19937 g(3);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const int64_t rows = 48, cols = 256, block = type == GgmlType::kQ8_0 ? 34 : 18;
    std::vector<uint8_t> bytes(rows * cols / 32 * block);
    for (auto& b : bytes) b = static_cast<uint8_t>(g() & 0x7F);
    for (size_t b = 0; b < bytes.size(); b += block) bytes[b + 1] = 0x20;  // scale ~0.008
    WeightMatrix w;
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = cols / 32 * block;
    w.data = bytes;
    std::vector<float> x(4 * cols, 0.5f), y(4 * rows);
    MatMulScratch scratch;
    MatMul(w, x.data(), 4, y.data(), nullptr, &scratch);  // sizes the scratch
    EXPECT_EQ(AllocationsDuring([&] { MatMul(w, x.data(), 4, y.data(), nullptr, &scratch); }), 0);
    EXPECT_EQ(AllocationsDuring([&] { MatMul(w, x.data(), 1, y.data(), nullptr, &scratch); }), 0);  // smaller
    // Without a scratch the product allocates (the counter sees this path).
    EXPECT_GT(AllocationsDuring([&] { MatMul(w, x.data(), 4, y.data(), nullptr); }), 0);
  }
}

// The same through the 16-row group kernels of every format that packs (PackForGemm: Q8_0 /
// Q4_0 where the CPU packs them, Q4_K / Q6_K wherever the table has group kernels): 1 token
// (decode), 2, and 13 (a partial token tile), 48 rows (3 groups).
TEST(ForwardNoAlloc, PackedProductWithScratchAllocatesNothing) {
#ifdef LLM_NO_ALLOC_HOOKS
  GTEST_SKIP() << "allocation hooks are off under sanitizers";
#endif
  std::mt19937 g(5);
  int packed_formats = 0;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    const int64_t rows = 48, cols = 512;
    const auto row_bytes = GgmlRowBytes(static_cast<uint32_t>(type), cols);
    ASSERT_TRUE(row_bytes.ok());
    std::vector<uint8_t> bytes(rows * row_bytes.value());
    for (auto& b : bytes) b = static_cast<uint8_t>(g() & 0x7F);
    WeightMatrix w;
    w.name = "w";
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = row_bytes.value();
    w.data = bytes;
    if (!PackForGemm(w)) continue;
    ++packed_formats;
    std::vector<float> x(13 * cols, 0.25f), y(13 * rows);
    MatMulScratch scratch;
    MatMul(w, x.data(), 13, y.data(), nullptr, &scratch);  // sizes the scratch
    for (int64_t T : {13, 2, 1}) {
      EXPECT_EQ(AllocationsDuring([&] { MatMul(w, x.data(), T, y.data(), nullptr, &scratch); }), 0)
          << GgmlTypeName(type) << " T=" << T;
    }
  }
  if (ActiveLlmKernels().gemm_g16_q4_k != nullptr) {
    EXPECT_GE(packed_formats, 2) << "Q4_K and Q6_K pack here";
  }
}

TEST(ForwardNoAlloc, DecodeStepWithKeptScratchAllocatesNothing) {
#ifdef LLM_NO_ALLOC_HOOKS
  GTEST_SKIP() << "allocation hooks are off under sanitizers";
#endif
  auto m = LlamaModel::Load(INFERLOOP_STORIES260K_GGUF);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto pool = KvBlockPool::Create((*m)->kv_shape(), 8);
  ASSERT_TRUE(pool.ok());
  KvSequence seq(&*pool);
  ASSERT_TRUE(seq.Reserve(64).ok());
  std::vector<float> logits((*m)->hparams().n_vocab);
  ForwardScratch scratch;
  // A prompt of 5 tokens, then decode steps: the first decode step sizes the buffers for T = 1.
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::vector<BatchToken> batch;
  for (int i = 0; i < 5; ++i) batch.push_back({&seq, i, prompt[i], i == 4});
  ASSERT_TRUE((*m)->Forward(batch, logits.data(), nullptr, nullptr, &scratch).ok());
  ASSERT_TRUE((*m)->Forward(403, 5, seq, logits.data(), nullptr, &scratch).ok());
  long allocations = -1;
  for (int pos = 6; pos < 40; ++pos) {  // more positions: the attention scratch grows within capacity
    const long a = AllocationsDuring([&] { ASSERT_TRUE((*m)->Forward(407, pos, seq, logits.data(), nullptr, &scratch).ok()); });
    allocations = std::max(allocations, a);
  }
  EXPECT_EQ(allocations, 0) << "most allocations in one decode step";
}

}  // namespace
}  // namespace inferloop::llm
