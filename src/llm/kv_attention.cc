#include "llm/kv_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/float_types.h"
#include "llm/prefetch.h"

namespace inferloop::llm {
namespace {

// A head's keys or values of the KV block kAhead blocks on are asked into the L2
// (PrefetchBytesL2) before they are read. The hardware prefetchers did not bring the next block's
// run in time (the runs of one head's blocks are a block apart in the pool): bench_llm_attention on
// one Zen 4 core, F16, 3 alternating runs, at 1024 / 4096 positions avx2 4.3-5.5 / 22.4-23.5 ms
// -> 3.9-4.1 / 18.8-19.2, avx512 4.4-5.3 / 22.9-24.2 -> 3.5-4.0 / 18.6-19.0 (4 blocks ahead: the
// same). Results do not change. (The Q8_0 path's per-position work hides the latency itself: the
// same prefetch there gained nothing.)
constexpr int kAhead = 2;

// Each head's arithmetic is the single-head computation (the same operations in the same order),
// only interleaved: the key and value rows of a position are read once for all `G` heads.
void AttendF16(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int HD, int G, const float* q,
               int n, float scale, float* out, AttentionScratch& s) {
  s.scores.resize(static_cast<size_t>(G) * n);
  s.q16.resize(HD);
  s.qf.resize(static_cast<size_t>(G) * HD);
  s.head.resize(G);
  for (int g = 0; g < G; ++g) {
    k.to_f16(q + g * HD, s.q16.data(), HD);
    for (int d = 0; d < HD; ++d) s.qf[g * HD + d] = HalfToFloat(s.q16[d]);
  }
  // The keys and the values a block of the sequence's table at a time: the head's rows of a
  // block are one run, HD halves apart.
  KvBlockPool& pool = *seq.pool();
  const int bt = pool.shape().block_tokens;
  auto keys = [&](int j0) {
    return reinterpret_cast<const uint16_t*>(pool.KeyHead(seq.blocks()[j0 / bt], layer, kv_head, 0));
  };
  auto values = [&](int j0) {
    return reinterpret_cast<const uint16_t*>(pool.ValueHead(seq.blocks()[j0 / bt], layer, kv_head, 0));
  };
  float* scores = s.scores.data();
  const int run_bytes = bt * HD * static_cast<int>(sizeof(uint16_t));
  for (int j0 = 0; j0 < n; j0 += bt) {
    if (j0 + kAhead * bt < n) PrefetchBytesL2(keys(j0 + kAhead * bt), run_bytes);
    k.dot_f16_rows(keys(j0), HD, std::min(n - j0, bt), s.qf.data(), HD, G, scores + j0, n);
  }
  for (int g = 0; g < G; ++g) s.head[g] = k.scale_max(scores + g * n, n, scale);  // the head's maximum score
  // The weights softmax(score) rounded to half precision, as floats (softmax_weights_f16).
  for (int g = 0; g < G; ++g) {
    k.softmax_weights_f16(scores + g * n, n, s.head[g]);
    std::fill(out + g * HD, out + (g + 1) * HD, 0.0f);
  }
  for (int j0 = 0; j0 < n; j0 += bt) {
    if (j0 + kAhead * bt < n) PrefetchBytesL2(values(j0 + kAhead * bt), run_bytes);
    k.axpy_f16_rows(scores + j0, n, values(j0), HD, std::min(n - j0, bt), out, HD, G);
  }
}

void AttendQ8_0(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int HD, int G, const float* q,
                int n, float scale, float* out, AttentionScratch& s) {
  const int nb = HD / kQ8_0BlockValues;
  s.q8.resize(static_cast<size_t>(G) * HD);
  s.qd.resize(static_cast<size_t>(G) * nb);
  s.qsum.resize(static_cast<size_t>(G) * nb);
  s.head.resize(3 * static_cast<size_t>(G));
  s.q8_rows.resize(G);
  float* m = s.head.data();          // per head: running maximum score
  float* total = s.head.data() + G;  // per head: running softmax denominator, relative to m
  float* vs = s.head.data() + 2 * G;  // per head: this position's value weight, exp(sc - m)
  for (int g = 0; g < G; ++g) {
    k.quantize_q8(q + g * HD, HD, s.q8.data() + g * HD, s.qd.data() + g * nb, s.qsum.data() + g * nb);
    Q8Row& qr = s.q8_rows[g];
    qr.q = s.q8.data() + g * HD;
    qr.d = s.qd.data() + g * nb;
    qr.sum = s.qsum.data() + g * nb;
    m[g] = -INFINITY;
    total[g] = 0;
  }
  std::fill(out, out + static_cast<size_t>(G) * HD, 0.0f);
  KvBlockPool& pool = *seq.pool();
  const int bt = pool.shape().block_tokens;
  const size_t row = pool.shape().head_row_bytes();  // the head's rows of a block are one run
  s.scores.resize(static_cast<size_t>(G) * bt);
  float* dots = s.scores.data();  // the block's key dots, head g's at g * bt
  // Positions in order, a block of the sequence's table at a time (the head's rows of a block are
  // one run, `row` bytes apart): first every key dot of the block (they do not depend on the running softmax), then the
  // positions one by one.
  for (int j0 = 0; j0 < n; j0 += bt) {
    const int block = seq.blocks()[j0 / bt];
    const int rows = std::min(n - j0, bt);
    const uint8_t* vrow = pool.ValueHead(block, layer, kv_head, 0);
    k.dot_q8_0_rows(pool.KeyHead(block, layer, kv_head, 0), static_cast<int64_t>(row), rows, s.q8_rows.data(), G, HD,
                    dots, bt);
    for (int jj = 0; jj < rows; ++jj, vrow += row) {
      for (int g = 0; g < G; ++g) {
        float* og = out + g * HD;
        const float sc = dots[g * bt + jj] * scale;
        float ms = 1.0f;  // rescales what was summed so far when sc is a new maximum
        vs[g] = 1.0f;
        if (sc > m[g]) {
          const float old = m[g];
          m[g] = sc;
          ms = std::exp(old - m[g]);
          for (int d = 0; d < HD; ++d) og[d] *= ms;
        } else {
          vs[g] = std::exp(sc - m[g]);
        }
        total[g] = total[g] * ms + vs[g];
      }
      // Every head's sum takes the value row (dequantized once for all of them) after its
      // rescale, as one head alone would.
      k.axpy_q8_0_heads(vs, vrow, out, HD, G);
    }
  }
  for (int g = 0; g < G; ++g) {
    const float inv = total[g] == 0.0f ? 0.0f : 1.0f / total[g];
    for (int d = 0; d < HD; ++d) out[g * HD + d] *= inv;
  }
}

}  // namespace

void StoreKvRow(const LlmKernelTable& k, KvType type, const float* x, int n, uint8_t* row) {
  if (type == KvType::kF16) {
    k.to_f16(x, reinterpret_cast<uint16_t*>(row), n);
    return;
  }
  int8_t q[kQ8_0BlockValues];
  float d, sum;
  for (int b = 0; b < n / kQ8_0BlockValues; ++b) {
    k.quantize_q8(x + b * kQ8_0BlockValues, kQ8_0BlockValues, q, &d, &sum);
    uint8_t* blk = row + static_cast<size_t>(b) * kQ8_0BlockBytes;
    const uint16_t h = FloatToHalf(d);  // d is already a half-precision value: exact
    std::memcpy(blk, &h, 2);
    std::memcpy(blk + 2, q, kQ8_0BlockValues);
  }
}

void AttentionScratch::Reserve(int heads, int positions, int head_dim) {
  const size_t hp = static_cast<size_t>(heads) * positions, hd = static_cast<size_t>(heads) * head_dim;
  scores.reserve(hp);
  qf.reserve(hd);
  q16.reserve(head_dim);
  q8.reserve(hd);
  q8_rows.reserve(static_cast<size_t>(heads));
  qd.reserve(hd / kQ8_0BlockValues + 1);
  qsum.reserve(hd / kQ8_0BlockValues + 1);
  head.reserve(3 * static_cast<size_t>(heads));
}

void AttendHeads(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int head_dim, int heads,
                 const float* q, int n, float scale, float* out, AttentionScratch& s) {
  if (seq.pool()->type() == KvType::kQ8_0) {
    AttendQ8_0(k, seq, layer, kv_head, head_dim, heads, q, n, scale, out, s);
  } else {
    AttendF16(k, seq, layer, kv_head, head_dim, heads, q, n, scale, out, s);
  }
}

}  // namespace inferloop::llm
