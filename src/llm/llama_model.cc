#include "llm/llama_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "llm/kv_attention.h"
#include "llm/amx_matmul.h"
#include "llm/llm_kernels.h"
#include "llm/mapped_file.h"

namespace inferloop::llm {
namespace {

void RmsNorm(const float* x, const std::vector<float>& g, float eps, int n, float* out) {
  // Float squares, double sum, as llama.cpp; eight partial sums rather than one chain of
  // dependent double adds (n of them, 45 calls a TinyLlama decode step), which can move the double
  // sum by an ulp of a double, far below the float it becomes.
  double part[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    #pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) part[k] += static_cast<double>(x[i + k] * x[i + k]);
  }
  for (; i < n; ++i) part[0] += static_cast<double>(x[i] * x[i]);
  const double ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv * g[i];
}

Result<std::vector<float>> ReadVector(const GgufFile& f, const std::string& name, int n) {
  IL_ASSIGN_OR_RETURN(WeightMatrix w, ViewWeight(f, name, 1, n));
  std::vector<float> v(n);
  ReadRow(w, 0, v.data());
  return v;
}

}  // namespace

Result<std::unique_ptr<LlamaModel>> LlamaModel::Load(const std::string& path) {
  IL_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  auto with_path = [&](const Status& s) { return s.WithContext("'" + path + "'"); };
  auto tok = Tokenizer::FromGguf(file);
  if (!tok.ok()) return with_path(tok.status());
  std::unique_ptr<LlamaModel> m(new LlamaModel(std::move(file), std::move(*tok)));
  m->path_ = path;
  auto hp = ReadLlamaHparams(m->file_);
  if (!hp.ok()) return with_path(hp.status());
  m->hp_ = *hp;
  Status s = m->Bind();
  if (!s.ok()) return with_path(s);
  return m;
}

Status LlamaModel::Bind() {
  const GgufFile& f = file_;
  const GgufTensorInfo* emb = f.FindTensor("token_embd.weight");
  if (emb == nullptr) return Status::NotFound("model tensor 'token_embd.weight' is missing");
  if (emb->dims.size() != 2) return Status::InvalidArgument("model tensor 'token_embd.weight' is not 2-D");
  hp_.n_vocab = static_cast<uint32_t>(emb->dims[1]);
  if (static_cast<int32_t>(hp_.n_vocab) < tokenizer_.vocab_size()) {
    return Status::InvalidArgument("token_embd.weight has " + std::to_string(hp_.n_vocab) +
                                   " rows but the tokenizer has " + std::to_string(tokenizer_.vocab_size()) + " tokens");
  }
  const int64_t E = hp_.n_embd, V = hp_.n_vocab, F = hp_.n_ff;
  const int64_t QD = static_cast<int64_t>(hp_.n_head) * hp_.head_dim;
  const int64_t KVD = static_cast<int64_t>(hp_.n_head_kv) * hp_.head_dim;
  IL_ASSIGN_OR_RETURN(tok_embd_, ViewWeight(f, "token_embd.weight", V, E));
  IL_ASSIGN_OR_RETURN(output_norm_, ReadVector(f, "output_norm.weight", static_cast<int>(E)));
  if (f.FindTensor("output.weight") != nullptr) {
    IL_ASSIGN_OR_RETURN(output_, ViewWeight(f, "output.weight", V, E));
  } else {
    output_ = tok_embd_;  // tied embeddings
  }
  layers_.resize(hp_.n_layer);
  for (uint32_t l = 0; l < hp_.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayer& L = layers_[l];
    IL_ASSIGN_OR_RETURN(L.attn_norm, ReadVector(f, p + "attn_norm.weight", static_cast<int>(E)));
    IL_ASSIGN_OR_RETURN(L.wq, ViewWeight(f, p + "attn_q.weight", QD, E));
    IL_ASSIGN_OR_RETURN(L.wk, ViewWeight(f, p + "attn_k.weight", KVD, E));
    IL_ASSIGN_OR_RETURN(L.wv, ViewWeight(f, p + "attn_v.weight", KVD, E));
    IL_ASSIGN_OR_RETURN(L.wo, ViewWeight(f, p + "attn_output.weight", E, QD));
    IL_ASSIGN_OR_RETURN(L.ffn_norm, ReadVector(f, p + "ffn_norm.weight", static_cast<int>(E)));
    IL_ASSIGN_OR_RETURN(L.w_gate, ViewWeight(f, p + "ffn_gate.weight", F, E));
    IL_ASSIGN_OR_RETURN(L.w_up, ViewWeight(f, p + "ffn_up.weight", F, E));
    IL_ASSIGN_OR_RETURN(L.w_down, ViewWeight(f, p + "ffn_down.weight", E, F));
    if (hp_.attn_bias) {
      IL_ASSIGN_OR_RETURN(L.bq, ReadVector(f, p + "attn_q.bias", static_cast<int>(QD)));
      IL_ASSIGN_OR_RETURN(L.bk, ReadVector(f, p + "attn_k.bias", static_cast<int>(KVD)));
      IL_ASSIGN_OR_RETURN(L.bv, ReadVector(f, p + "attn_v.bias", static_cast<int>(KVD)));
    }
  }
  // With AMX, AVX-512 VNNI or AVX2, the Q8_0 / Q4_0 / Q4_K / Q6_K matrices are repacked into 16-row groups once
  // here (a tied output matrix too; the embedding lookup keeps reading rows from the file), by
  // several threads. The file's copies of packed matrices then leave memory (not the embedding
  // table's), so the weights are held once.
  std::vector<WeightMatrix*> mats;
  for (LlamaLayer& L : layers_) {
    for (WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) mats.push_back(w);
  }
  mats.push_back(&output_);
  std::atomic<size_t> next{0};
  auto pack = [&] {
    for (size_t i = next++; i < mats.size(); i = next++) {
      if (PackForGemm(*mats[i]) && mats[i]->data.data() != tok_embd_.data.data()) ReleaseMappedPages(mats[i]->data);
    }
  };
  if (PackedGemmAvailable()) {
    std::vector<std::jthread> helpers(std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8) - 1);
    for (auto& t : helpers) t = std::jthread(pack);
    pack();
  }
  rope_inv_freq_.resize(hp_.rope_dims / 2);
  for (uint32_t i = 0; i < hp_.rope_dims / 2; ++i) {
    rope_inv_freq_[i] = std::pow(hp_.rope_freq_base, -2.0f * static_cast<float>(i) / static_cast<float>(hp_.rope_dims));
  }
  // Llama 3.1-style RoPE scaling: one factor per rotated pair divides its frequency.
  if (f.FindTensor("rope_freqs.weight") != nullptr) {
    IL_ASSIGN_OR_RETURN(std::vector<float> factors, ReadVector(f, "rope_freqs.weight", static_cast<int>(hp_.rope_dims / 2)));
    for (uint32_t i = 0; i < hp_.rope_dims / 2; ++i) {
      if (!(factors[i] > 0) || !std::isfinite(factors[i])) {
        return Status::InvalidArgument("rope_freqs.weight[" + std::to_string(i) + "] is not a positive number");
      }
      rope_inv_freq_[i] /= factors[i];
    }
  }
  return Status::Ok();
}

KvCacheShape LlamaModel::kv_shape(int block_tokens, KvType type) const {
  return {static_cast<int>(hp_.n_layer), static_cast<int>(hp_.n_head_kv * hp_.head_dim), block_tokens, type,
          static_cast<int>(hp_.head_dim)};
}

uint64_t LlamaModel::weight_bytes() const {
  uint64_t b = output_.data.size();
  for (const LlamaLayer& L : layers_) {
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) b += w->data.size();
  }
  return b;
}

Status LlamaModel::Forward(int32_t token, int pos, KvSequence& seq, float* logits, ThreadPool* pool,
                           ForwardScratch* scratch) const {
  const BatchToken one{&seq, pos, token, logits != nullptr};
  return Forward(std::span<const BatchToken>(&one, 1), logits, pool, nullptr, scratch);
}

namespace {

// Sizes `v` to n values, allocating only when it never held that many.
float* Sized(std::vector<float>& v, int64_t n) {
  v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace

void LlamaModel::Attend(std::span<const BatchToken> batch, int layer, const float* q, float* att, ThreadPool* pool,
                        ForwardScratch& fs) const {
  const LlmKernelTable& k = ActiveLlmKernels();
  const int64_t T = static_cast<int64_t>(batch.size());
  const int HD = static_cast<int>(hp_.head_dim), NH = static_cast<int>(hp_.n_head);
  const int NKV = static_cast<int>(hp_.n_head_kv), QD = NH * HD, group = NH / NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  int64_t work = 0;  // multiply-adds of the scores
  for (const BatchToken& b : batch) work += int64_t{NH} * (b.pos + 1) * HD;
  const int threads = pool == nullptr || work < (1 << 17) ? 1 : pool->num_threads();
  // Units of work: the query heads of one token that share a key/value head, read together
  // (AttendHeads), unless that leaves fewer units than twice the threads (one sequence's decode
  // step on a model with few key/value heads): then one query head per unit.
  const int per_unit = T * NKV >= 2 * threads ? group : 1;
  const int64_t units = T * NH / per_unit;
  // Slot s takes units s, s + slots, ... with its own scratch: interleaved, so the long and short
  // positions of a prefill spread evenly; a few slots per thread, so a thread slowed by other
  // load does not hold the others up.
  const int64_t slots = std::min<int64_t>(units, int64_t{threads} * 4);
  if (fs.attention.size() < static_cast<size_t>(slots)) fs.attention.resize(slots);
  int capacity = 0;  // positions the longest sequence has room for: the scratch never grows past it
  for (const BatchToken& b : batch) capacity = std::max(capacity, b.seq->capacity());
  for (int64_t s = 0; s < slots; ++s) fs.attention[s].Reserve(per_unit, capacity, HD);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot) {
      for (int64_t u = slot; u < units; u += slots) {
        const int64_t t = u * per_unit / NH;
        const int hh = static_cast<int>(u * per_unit % NH);
        const BatchToken& b = batch[t];
        AttendHeads(k, *b.seq, layer, hh / group, HD, per_unit, q + t * QD + hh * HD, b.pos + 1, scale,
                    att + t * QD + hh * HD, fs.attention[slot]);
      }
    }
  };
  if (threads > 1) {
    pool->ParallelFor(slots, 1, run);
  } else {
    run(0, slots);
  }
}

Status LlamaModel::Forward(std::span<const BatchToken> batch, float* logits, ThreadPool* pool, float* hidden,
                           ForwardScratch* scratch) const {
  const int64_t T = static_cast<int64_t>(batch.size());
  if (T == 0) return Status::Ok();
  int n_logits = 0;
  for (const BatchToken& b : batch) {
    if (b.token < 0 || b.token >= static_cast<int32_t>(hp_.n_vocab)) {
      return Status::InvalidArgument("token id " + std::to_string(b.token) + " is outside the vocab (0.." +
                                     std::to_string(hp_.n_vocab - 1) + ")");
    }
    if (b.seq == nullptr || b.pos < 0 || b.pos >= b.seq->capacity()) {
      return Status::InvalidArgument("position " + std::to_string(b.pos) + " is beyond the reserved KV cache (" +
                                     std::to_string(b.seq == nullptr ? 0 : b.seq->capacity()) + " positions)");
    }
    const KvCacheShape& cs = b.seq->pool()->shape();
    if (cs.n_layer != static_cast<int>(hp_.n_layer) || cs.n_heads() != static_cast<int>(hp_.n_head_kv) ||
        cs.kv_dim != static_cast<int>(hp_.n_head_kv * hp_.head_dim)) {
      return Status::InvalidArgument("the KV cache's shape (" + std::to_string(cs.n_layer) + " layers, " +
                                     std::to_string(cs.n_heads()) + " heads of " + std::to_string(cs.kv_dim / cs.n_heads()) +
                                     ") is not this model's (" + std::to_string(hp_.n_layer) + " layers, " +
                                     std::to_string(hp_.n_head_kv) + " heads of " + std::to_string(hp_.head_dim) +
                                     "): make it with kv_shape()");
    }
    n_logits += b.logits ? 1 : 0;
  }
  const LlmKernelTable& k = ActiveLlmKernels();
  const int E = static_cast<int>(hp_.n_embd), F = static_cast<int>(hp_.n_ff), HD = static_cast<int>(hp_.head_dim);
  const int NH = static_cast<int>(hp_.n_head), NKV = static_cast<int>(hp_.n_head_kv);
  const int QD = NH * HD, KVD = NKV * HD;
  ForwardScratch own;
  ForwardScratch& fs = scratch != nullptr ? *scratch : own;
  float* x = Sized(fs.x, T * E);
  float* h = Sized(fs.h, T * E);
  float* q = Sized(fs.q, T * QD);
  float* kk = Sized(fs.kk, T * KVD);
  float* vv = Sized(fs.vv, T * KVD);
  float* att = Sized(fs.att, T * QD);
  float* tmp = Sized(fs.tmp, T * E);
  float* gate = Sized(fs.gate, T * F);
  float* up = Sized(fs.up, T * F);
  for (int64_t t = 0; t < T; ++t) ReadRow(tok_embd_, batch[t].token, x + t * E);

  // RoPE angles of each token's position.
  const int half = static_cast<int>(hp_.rope_dims / 2);
  float* cos_t = Sized(fs.cos_t, T * half);
  float* sin_t = Sized(fs.sin_t, T * half);
  for (int64_t t = 0; t < T; ++t) {
    const float p = static_cast<float>(batch[t].pos) * hp_.rope_freq_scale;
    for (int i = 0; i < half; ++i) {
      const float theta = p * rope_inv_freq_[i];
      cos_t[t * half + i] = std::cos(theta);
      sin_t[t * half + i] = std::sin(theta);
    }
  }
  const bool norm_style = hp_.rope_style == RopeStyle::kNorm;
  auto rope = [&](float* v, int heads, int64_t t) {
    const float* c = cos_t + t * half;
    const float* sn = sin_t + t * half;
    for (int hh = 0; hh < heads; ++hh) {
      float* r = v + hh * HD;
      for (int i = 0; i < half; ++i) {
        const int a = norm_style ? 2 * i : i;
        const int b = norm_style ? 2 * i + 1 : i + half;
        const float x0 = r[a], x1 = r[b];
        r[a] = x0 * c[i] - x1 * sn[i];
        r[b] = x0 * sn[i] + x1 * c[i];
      }
    }
  };
  for (int l = 0; l < static_cast<int>(hp_.n_layer); ++l) {
    const LlamaLayer& L = layers_[l];
    for (int64_t t = 0; t < T; ++t) RmsNorm(x + t * E, L.attn_norm, hp_.rms_eps, E, h + t * E);
    {
      const WeightMatrix* ws[3] = {&L.wq, &L.wk, &L.wv};
      float* ys[3] = {q, kk, vv};
      MatMulMany(ws, h, T, ys, pool, &fs.matmul);
    }
    for (int64_t t = 0; t < T; ++t) {
      float* qt = q + t * QD;
      float* kt = kk + t * KVD;
      float* vt = vv + t * KVD;
      if (hp_.attn_bias) {
        for (int i = 0; i < QD; ++i) qt[i] += L.bq[i];
        for (int i = 0; i < KVD; ++i) {
          kt[i] += L.bk[i];
          vt[i] += L.bv[i];
        }
      }
      rope(qt, NH, t);
      rope(kt, NKV, t);
      const KvType kv_type = batch[t].seq->pool()->type();
      for (int hh = 0; hh < NKV; ++hh) {  // head-major blocks (kv_block_pool.h)
        StoreKvRow(k, kv_type, kt + hh * HD, HD, batch[t].seq->KeyHead(l, hh, batch[t].pos));
        StoreKvRow(k, kv_type, vt + hh * HD, HD, batch[t].seq->ValueHead(l, hh, batch[t].pos));
      }
    }
    // Attention of every (token, head) over its sequence's positions [0, pos], in the cache's
    // type as llama.cpp computes it for that type (kv_attention.h), so that greedy decoding
    // follows llama.cpp's choices on the same file.
    Attend(batch, l, q, att, pool, fs);
    MatMul(L.wo, att, T, tmp, pool, &fs.matmul);
    for (int64_t i = 0; i < T * E; ++i) x[i] += tmp[i];

    for (int64_t t = 0; t < T; ++t) RmsNorm(x + t * E, L.ffn_norm, hp_.rms_eps, E, h + t * E);
    {
      const WeightMatrix* ws[2] = {&L.w_gate, &L.w_up};
      float* ys[2] = {gate, up};
      MatMulMany(ws, h, T, ys, pool, &fs.matmul);
    }
    k.swiglu(gate, up, gate, T * F);  // SiLU(gate) * up
    MatMul(L.w_down, gate, T, tmp, pool, &fs.matmul);
    for (int64_t i = 0; i < T * E; ++i) x[i] += tmp[i];
  }
  if (n_logits > 0 && logits != nullptr) {
    float* rows = Sized(fs.rows, int64_t{n_logits} * E);
    int r = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (batch[t].logits) RmsNorm(x + t * E, output_norm_, hp_.rms_eps, E, rows + (r++) * E);
    }
    MatMul(output_, rows, n_logits, logits, pool, &fs.matmul);
  }
  if (hidden != nullptr) {
    int r = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (batch[t].hidden) RmsNorm(x + t * E, output_norm_, hp_.rms_eps, E, hidden + static_cast<int64_t>(r++) * E);
    }
  }
  return Status::Ok();
}

}  // namespace inferloop::llm
