#include "llm/llama_model.h"

#include <algorithm>
#include <cmath>

namespace inferloop::llm {
namespace {

void RmsNorm(const float* x, const WeightMatrix& w, float eps, int n, float* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
  std::vector<float> g(n);
  ReadRow(w, 0, g.data());
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
  if (f.FindTensor("rope_freqs.weight") != nullptr) {
    return Status::Unimplemented("per-dimension RoPE frequency factors (rope_freqs.weight, Llama 3.1 style) are not supported yet");
  }
  const int64_t E = hp_.n_embd, V = hp_.n_vocab, F = hp_.n_ff;
  const int64_t QD = static_cast<int64_t>(hp_.n_head) * hp_.head_dim;
  const int64_t KVD = static_cast<int64_t>(hp_.n_head_kv) * hp_.head_dim;
  IL_ASSIGN_OR_RETURN(tok_embd_, ViewWeight(f, "token_embd.weight", V, E));
  IL_ASSIGN_OR_RETURN(output_norm_, ViewWeight(f, "output_norm.weight", 1, E));
  if (f.FindTensor("output.weight") != nullptr) {
    IL_ASSIGN_OR_RETURN(output_, ViewWeight(f, "output.weight", V, E));
  } else {
    output_ = tok_embd_;  // tied embeddings
  }
  layers_.resize(hp_.n_layer);
  for (uint32_t l = 0; l < hp_.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayer& L = layers_[l];
    IL_ASSIGN_OR_RETURN(L.attn_norm, ViewWeight(f, p + "attn_norm.weight", 1, E));
    IL_ASSIGN_OR_RETURN(L.wq, ViewWeight(f, p + "attn_q.weight", QD, E));
    IL_ASSIGN_OR_RETURN(L.wk, ViewWeight(f, p + "attn_k.weight", KVD, E));
    IL_ASSIGN_OR_RETURN(L.wv, ViewWeight(f, p + "attn_v.weight", KVD, E));
    IL_ASSIGN_OR_RETURN(L.wo, ViewWeight(f, p + "attn_output.weight", E, QD));
    IL_ASSIGN_OR_RETURN(L.ffn_norm, ViewWeight(f, p + "ffn_norm.weight", 1, E));
    IL_ASSIGN_OR_RETURN(L.w_gate, ViewWeight(f, p + "ffn_gate.weight", F, E));
    IL_ASSIGN_OR_RETURN(L.w_up, ViewWeight(f, p + "ffn_up.weight", F, E));
    IL_ASSIGN_OR_RETURN(L.w_down, ViewWeight(f, p + "ffn_down.weight", E, F));
    if (hp_.attn_bias) {
      IL_ASSIGN_OR_RETURN(L.bq, ReadVector(f, p + "attn_q.bias", static_cast<int>(QD)));
      IL_ASSIGN_OR_RETURN(L.bk, ReadVector(f, p + "attn_k.bias", static_cast<int>(KVD)));
      IL_ASSIGN_OR_RETURN(L.bv, ReadVector(f, p + "attn_v.bias", static_cast<int>(KVD)));
    }
  }
  rope_inv_freq_.resize(hp_.rope_dims / 2);
  for (uint32_t i = 0; i < hp_.rope_dims / 2; ++i) {
    rope_inv_freq_[i] = std::pow(hp_.rope_freq_base, -2.0f * static_cast<float>(i) / static_cast<float>(hp_.rope_dims));
  }
  return Status::Ok();
}

KvCacheShape LlamaModel::kv_shape(int block_tokens) const {
  return {static_cast<int>(hp_.n_layer), static_cast<int>(hp_.n_head_kv * hp_.head_dim), block_tokens};
}

uint64_t LlamaModel::weight_bytes() const {
  uint64_t b = output_.data.size();
  for (const LlamaLayer& L : layers_) {
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) b += w->data.size();
  }
  return b;
}

Status LlamaModel::Forward(int32_t token, int pos, KvSequence& seq, float* logits, ThreadPool* pool) const {
  if (token < 0 || token >= static_cast<int32_t>(hp_.n_vocab)) {
    return Status::InvalidArgument("token id " + std::to_string(token) + " is outside the vocab (0.." +
                                   std::to_string(hp_.n_vocab - 1) + ")");
  }
  if (pos < 0 || pos >= seq.capacity()) {
    return Status::InvalidArgument("position " + std::to_string(pos) + " is beyond the reserved KV cache (" +
                                   std::to_string(seq.capacity()) + " positions)");
  }
  const int E = static_cast<int>(hp_.n_embd), F = static_cast<int>(hp_.n_ff), HD = static_cast<int>(hp_.head_dim);
  const int NH = static_cast<int>(hp_.n_head), NKV = static_cast<int>(hp_.n_head_kv);
  const int group = NH / NKV;
  std::vector<float> x(E), h(E), q(NH * HD), att(NH * HD), tmp(E), gate(F), up(F), scores(pos + 1);
  ReadRow(tok_embd_, token, x.data());

  // RoPE angle of each rotated pair at this position.
  const int half = static_cast<int>(hp_.rope_dims / 2);
  std::vector<float> cos_t(half), sin_t(half);
  const float p = static_cast<float>(pos) * hp_.rope_freq_scale;
  for (int i = 0; i < half; ++i) {
    const float theta = p * rope_inv_freq_[i];
    cos_t[i] = std::cos(theta);
    sin_t[i] = std::sin(theta);
  }
  auto rope = [&](float* v, int heads) {
    for (int hh = 0; hh < heads; ++hh) {
      float* r = v + hh * HD;
      for (int i = 0; i < half; ++i) {
        const int a = hp_.rope_style == RopeStyle::kNorm ? 2 * i : i;
        const int b = hp_.rope_style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
        const float x0 = r[a], x1 = r[b];
        r[a] = x0 * cos_t[i] - x1 * sin_t[i];
        r[b] = x0 * sin_t[i] + x1 * cos_t[i];
      }
    }
  };
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));

  for (int l = 0; l < static_cast<int>(hp_.n_layer); ++l) {
    const LlamaLayer& L = layers_[l];
    RmsNorm(x.data(), L.attn_norm, hp_.rms_eps, E, h.data());
    float* k = seq.Key(l, pos);
    float* v = seq.Value(l, pos);
    MatVec(L.wq, h.data(), q.data(), pool);
    MatVec(L.wk, h.data(), k, pool);
    MatVec(L.wv, h.data(), v, pool);
    if (hp_.attn_bias) {
      for (int i = 0; i < NH * HD; ++i) q[i] += L.bq[i];
      for (int i = 0; i < NKV * HD; ++i) {
        k[i] += L.bk[i];
        v[i] += L.bv[i];
      }
    }
    rope(q.data(), NH);
    rope(k, NKV);
    for (int hh = 0; hh < NH; ++hh) {
      const int kvh = hh / group;
      const float* qh = q.data() + hh * HD;
      float mx = -INFINITY;
      for (int t = 0; t <= pos; ++t) {
        const float* kt = seq.Key(l, t) + kvh * HD;
        float s = 0;
        for (int d = 0; d < HD; ++d) s += qh[d] * kt[d];
        scores[t] = s * scale;
        mx = std::max(mx, scores[t]);
      }
      float sum = 0;
      for (int t = 0; t <= pos; ++t) {
        scores[t] = std::exp(scores[t] - mx);
        sum += scores[t];
      }
      float* oh = att.data() + hh * HD;
      std::fill(oh, oh + HD, 0.0f);
      for (int t = 0; t <= pos; ++t) {
        const float w = scores[t] / sum;
        const float* vt = seq.Value(l, t) + kvh * HD;
        for (int d = 0; d < HD; ++d) oh[d] += w * vt[d];
      }
    }
    MatVec(L.wo, att.data(), tmp.data(), pool);
    for (int i = 0; i < E; ++i) x[i] += tmp[i];

    RmsNorm(x.data(), L.ffn_norm, hp_.rms_eps, E, h.data());
    MatVec(L.w_gate, h.data(), gate.data(), pool);
    MatVec(L.w_up, h.data(), up.data(), pool);
    for (int i = 0; i < F; ++i) {
      const float g = gate[i];
      gate[i] = g / (1.0f + std::exp(-g)) * up[i];  // SiLU(gate) * up
    }
    MatVec(L.w_down, gate.data(), tmp.data(), pool);
    for (int i = 0; i < E; ++i) x[i] += tmp[i];
  }
  if (logits != nullptr) {
    RmsNorm(x.data(), output_norm_, hp_.rms_eps, E, h.data());
    MatVec(output_, h.data(), logits, pool);
  }
  return Status::Ok();
}

}  // namespace inferloop::llm
