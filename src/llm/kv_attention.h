// Attention over the paged KV cache in its element type (KvType), and the writes of new keys and
// values into it. Both follow llama.cpp's CPU arithmetic for the same cache type, so that greedy
// decoding picks what llama.cpp picks on the same file:
//   F16  - llama.cpp's default attention (no flash attention): the query is rounded to half
//          precision before its dot products with the F16 keys (ggml's F16 x F32 product converts
//          the F32 side), softmax in float, and the attention weights are rounded to half
//          precision before the weighted sum of the F16 values.
//   Q8_0 - llama.cpp's CPU flash attention, which a quantized V cache requires: the query is
//          quantized to Q8_0 blocks (as ggml's quantize_row_q8_0) and dotted with the Q8_0 keys
//          block by block in int32; an online softmax walks the positions in order (rescaling
//          the float accumulator when a new maximum appears), adding each value row dequantized
//          to float (d * q) times exp(score - max); the sum is divided by the softmax total at
//          the end.
#pragma once

#include <cstdint>
#include <vector>

#include "llm/kv_block_pool.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {

// Writes `n` floats (one position's keys or values of one layer: n = kv_dim) as a cache row of
// `type`. F16: rounded to nearest even. Q8_0 (n % 32 == 0): per block of 32, d = max|x| / 127
// stored as F16 and q = x * 127 / max|x| rounded to nearest even (ggml's quantize_row_q8_0).
void StoreKvRow(const LlmKernelTable& k, KvType type, const float* x, int n, uint8_t* row);

// Scratch space of AttendHeads, reused across calls by one thread (calls of sizes seen before do
// not allocate).
struct AttentionScratch {
  std::vector<float> scores, qf;
  std::vector<uint16_t> q16;
  std::vector<int8_t> q8;
  std::vector<float> qd, qsum;
  std::vector<float> head;  // per-head running values
  std::vector<Q8Row> q8_rows;  // the Q8_0 cache's quantized query heads

  // Room for calls of up to `heads` heads over up to `positions` positions, so that such calls
  // allocate nothing (reserve the sequence's capacity once, not each position as it comes).
  void Reserve(int heads, int positions, int head_dim);
};

// Grouped-query attention: for each of `heads` query heads g sharing key/value head `kv_head`,
// out[g * head_dim, (g + 1) * head_dim) = sum_j softmax_j(scale * q_g . K_j) * V_j over positions
// j in [0, n) of `seq`'s layer `layer` (n >= 1; the rows must have been written). `q` holds the
// heads' queries, head_dim floats each, one after the other. The cache type is the sequence's
// pool's. Each head's result is bit for bit what a call with heads = 1 gives for it: the heads
// only share the reads of each position's key and value rows.
void AttendHeads(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int head_dim, int heads,
                 const float* q, int n, float scale, float* out, AttentionScratch& s);

}  // namespace inferloop::llm
