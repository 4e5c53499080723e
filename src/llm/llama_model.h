// A llama-family decoder (llama, mistral, qwen2) over the weights of a GGUF file, used in place
// (mmap): token embedding, per layer RMSNorm -> attention with RoPE and grouped-query heads over
// the paged KV cache -> RMSNorm -> SwiGLU feed-forward, final RMSNorm and output projection.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "llm/gguf_file.h"
#include "llm/kv_attention.h"
#include "llm/kv_block_pool.h"
#include "llm/llama_hparams.h"
#include "llm/tokenizer.h"
#include "llm/weight_matrix.h"

namespace inferloop {
class ThreadPool;
}

namespace inferloop::llm {

struct LlamaLayer {
  WeightMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  std::vector<float> attn_norm, ffn_norm;
  std::vector<float> bq, bk, bv;  // qwen2 only
};

// One token of a forward step: the token at position `pos` of sequence `seq`. Tokens of one
// sequence in a step must have consecutive positions in order.
struct BatchToken {
  KvSequence* seq = nullptr;
  int pos = 0;
  int32_t token = 0;
  bool logits = false;  // compute next-token logits after this token
  bool hidden = false;  // write this token's final hidden state (after the output norm)
};

// The intermediate buffers of LlamaModel::Forward (activations, RoPE angles, each thread's
// attention scratch), kept by the caller between calls so that a step no larger than one seen
// before allocates nothing for them. One per caller: concurrent Forward calls need one each.
class ForwardScratch {
 private:
  friend class LlamaModel;
  std::vector<float> x, h, q, kk, vv, att, tmp, gate, up, cos_t, sin_t, rows;
  std::vector<AttentionScratch> attention;  // one per attention work slot
  MatMulScratch matmul;                     // the products' quantized activations
};

class LlamaModel {
 public:
  // Opens and validates `path`: architecture, hyperparameters, every tensor's presence, dims and
  // type, and the tokenizer. Errors name the file and the problem.
  static Result<std::unique_ptr<LlamaModel>> Load(const std::string& path);

  const LlamaHparams& hparams() const { return hp_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const GgufFile& file() const { return file_; }
  // The file it was loaded from.
  const std::string& path() const { return path_; }
  // The KV cache shape of this model (a pool of `type` fails to be created when the type does
  // not fit the model: Q8_0 needs a head dim that is a multiple of 32).
  KvCacheShape kv_shape(int block_tokens = 16, KvType type = KvType::kF16) const;
  // Bytes of weights read to compute one token (every matrix once).
  uint64_t weight_bytes() const;

  // One step over a batch of tokens from any number of sequences: every token's keys and values
  // are written to its sequence's KV cache (which must already hold positions [0, pos) and have
  // room reserved for pos), and for tokens marked `logits` the next-token logits are written to
  // `logits`, n_vocab floats each, in batch order. Matrix products run once for the whole batch.
  // For tokens marked `hidden`, the final hidden state after the output norm (what the output
  // projection would read; the embedding of the token) is written to `hidden`, n_embd floats
  // each, in batch order (`hidden` may be null when no token is marked).
  // `scratch` (may be null: then the buffers are allocated for this call) holds the intermediate
  // buffers between calls.
  // InvalidArgument for a token id outside the vocab or a position beyond what was reserved.
  Status Forward(std::span<const BatchToken> batch, float* logits, ThreadPool* pool, float* hidden = nullptr,
                 ForwardScratch* scratch = nullptr) const;
  // A batch of one.
  Status Forward(int32_t token, int pos, KvSequence& seq, float* logits, ThreadPool* pool,
                 ForwardScratch* scratch = nullptr) const;

 private:
  LlamaModel(GgufFile file, Tokenizer tok) : file_(std::move(file)), tokenizer_(std::move(tok)) {}
  Status Bind();
  // Attention of every token's query heads (q: T x n_head * head_dim) over its sequence's
  // positions [0, pos] of layer `layer` into att (same shape), split over `pool`.
  void Attend(std::span<const BatchToken> batch, int layer, const float* q, float* att, ThreadPool* pool,
              ForwardScratch& fs) const;

  GgufFile file_;
  std::string path_;
  Tokenizer tokenizer_;
  LlamaHparams hp_;
  WeightMatrix tok_embd_, output_;
  std::vector<float> output_norm_;
  std::vector<LlamaLayer> layers_;
  std::vector<float> rope_inv_freq_;  // rope_dims / 2 frequencies
};

}  // namespace inferloop::llm
