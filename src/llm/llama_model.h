// A llama-family decoder (llama, mistral, qwen2) over the weights of a GGUF file, used in place
// (mmap): token embedding, per layer RMSNorm -> attention with RoPE and grouped-query heads over
// the paged KV cache -> RMSNorm -> SwiGLU feed-forward, final RMSNorm and output projection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "llm/gguf_file.h"
#include "llm/kv_block_pool.h"
#include "llm/llama_hparams.h"
#include "llm/tokenizer.h"
#include "llm/weight_matrix.h"

namespace inferloop {
class ThreadPool;
}

namespace inferloop::llm {

struct LlamaLayer {
  WeightMatrix attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  std::vector<float> bq, bk, bv;  // qwen2 only
};

class LlamaModel {
 public:
  // Opens and validates `path`: architecture, hyperparameters, every tensor's presence, dims and
  // type, and the tokenizer. Errors name the file and the problem.
  static Result<std::unique_ptr<LlamaModel>> Load(const std::string& path);

  const LlamaHparams& hparams() const { return hp_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const GgufFile& file() const { return file_; }
  KvCacheShape kv_shape(int block_tokens = 16) const;
  // Bytes of weights read to compute one token (every matrix once).
  uint64_t weight_bytes() const;

  // Runs token `token` at position `pos` of `seq` (whose KV holds positions [0, pos); room for
  // `pos` must have been reserved) and writes the next-token logits (n_vocab floats) when
  // `logits` is not null. InvalidArgument for a token id outside the vocab or pos beyond what
  // was reserved.
  Status Forward(int32_t token, int pos, KvSequence& seq, float* logits, ThreadPool* pool) const;

 private:
  LlamaModel(GgufFile file, Tokenizer tok) : file_(std::move(file)), tokenizer_(std::move(tok)) {}
  Status Bind();

  GgufFile file_;
  Tokenizer tokenizer_;
  LlamaHparams hp_;
  WeightMatrix tok_embd_, output_norm_, output_;
  std::vector<LlamaLayer> layers_;
  std::vector<float> rope_inv_freq_;  // rope_dims / 2 frequencies
};

}  // namespace inferloop::llm
