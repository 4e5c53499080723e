#include "llm/kv_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/float_types.h"

namespace inferloop::llm {
namespace {

void AttendF16(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int HD, const float* q, int n,
               float scale, float* out, AttentionScratch& s) {
  s.scores.resize(n);
  s.q16.resize(HD);
  s.qf.resize(HD);
  k.to_f16(q, s.q16.data(), HD);
  for (int d = 0; d < HD; ++d) s.qf[d] = HalfToFloat(s.q16[d]);
  const float* qh = s.qf.data();
  float* scores = s.scores.data();
  float mx = -INFINITY;
  for (int j = 0; j < n; ++j) {
    scores[j] = k.dot_f16(seq.Key(layer, j) + kv_head * HD, qh, HD) * scale;
    mx = std::max(mx, scores[j]);
  }
  float sum = 0;
  for (int j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(out, out + HD, 0.0f);
  const float inv = 1.0f / sum;
  for (int j = 0; j < n; ++j) {
    const float w = HalfToFloat(FloatToHalf(scores[j] * inv));
    k.axpy_f16(w, seq.Value(layer, j) + kv_head * HD, out, HD);
  }
}

void AttendQ8_0(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int HD, const float* q, int n,
                float scale, float* out, AttentionScratch& s) {
  const int nb = HD / kQ8_0BlockValues;
  s.q8.resize(HD);
  s.qd.resize(nb);
  s.qsum.resize(nb);
  k.quantize_q8(q, HD, s.q8.data(), s.qd.data(), s.qsum.data());
  Q8Row qr;
  qr.q = s.q8.data();
  qr.d = s.qd.data();
  qr.sum = s.qsum.data();
  const size_t head = static_cast<size_t>(kv_head) * nb * kQ8_0BlockBytes;
  KvBlockPool& pool = *seq.pool();
  const int bt = pool.shape().block_tokens;
  const size_t row = pool.shape().row_bytes();
  float m = -INFINITY;  // running maximum score
  float total = 0;      // running softmax denominator, relative to m
  std::fill(out, out + HD, 0.0f);
  // Positions in order, a block of the sequence's table at a time (its rows are row bytes apart).
  for (int j0 = 0; j0 < n; j0 += bt) {
    const int block = seq.blocks()[j0 / bt];
    const uint8_t* krow = pool.KeyRow(block, layer, 0) + head;
    const uint8_t* vrow = pool.ValueRow(block, layer, 0) + head;
    for (int j = j0; j < std::min(n, j0 + bt); ++j, krow += row, vrow += row) {
      const float sc = k.dot_q8_0(krow, qr, HD) * scale;
      float ms = 1.0f;  // rescales what was summed so far when sc is a new maximum
      float vs = 1.0f;  // exp(sc - m)
      if (sc > m) {
        const float old = m;
        m = sc;
        ms = std::exp(old - m);
        for (int d = 0; d < HD; ++d) out[d] *= ms;
      } else {
        vs = std::exp(sc - m);
      }
      k.axpy_q8_0(vs, vrow, out, HD);
      total = total * ms + vs;
    }
  }
  const float inv = total == 0.0f ? 0.0f : 1.0f / total;
  for (int d = 0; d < HD; ++d) out[d] *= inv;
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

void AttendHead(const LlmKernelTable& k, const KvSequence& seq, int layer, int kv_head, int head_dim, const float* q,
                int n, float scale, float* out, AttentionScratch& s) {
  if (seq.pool()->type() == KvType::kQ8_0) {
    AttendQ8_0(k, seq, layer, kv_head, head_dim, q, n, scale, out, s);
  } else {
    AttendF16(k, seq, layer, kv_head, head_dim, q, n, scale, out, s);
  }
}

}  // namespace inferloop::llm
