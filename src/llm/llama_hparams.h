// Hyperparameters of a llama-family model (llama, mistral, qwen2), read from a GGUF file's
// "<arch>.*" metadata keys.
#pragma once

#include <cstdint>
#include <string>

#include "inferloop/status.h"
#include "llm/gguf_file.h"

namespace inferloop::llm {

// How RoPE pairs the dimensions of a head: kNorm rotates adjacent pairs (2i, 2i+1) (GGUF llama
// and mistral, whose converters permute Q/K rows to match); kNeox rotates (i, i + rope_dims/2)
// (qwen2).
enum class RopeStyle { kNorm, kNeox };

struct LlamaHparams {
  std::string arch;            // general.architecture: "llama", "mistral" or "qwen2"
  uint32_t n_embd = 0;         // hidden size
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;      // < n_head: grouped-query attention
  uint32_t n_ff = 0;           // feed-forward (SwiGLU) width
  uint32_t n_ctx_train = 0;    // context length the model was trained for
  uint32_t head_dim = 0;       // n_embd / n_head unless the file says otherwise
  uint32_t rope_dims = 0;      // leading dims of a head that RoPE rotates (default head_dim)
  float rope_freq_base = 10000.0f;
  // Linear RoPE scaling (rope.scaling.type "linear"): positions are divided by this factor.
  float rope_freq_scale = 1.0f;
  RopeStyle rope_style = RopeStyle::kNorm;
  float rms_eps = 1e-5f;
  bool attn_bias = false;      // qwen2: Q, K, V projections have biases

  uint32_t n_vocab = 0;        // rows of token_embd.weight (set by the model loader)
};

// Reads and validates the hyperparameters. InvalidArgument naming the key for a missing or
// inconsistent value (e.g. n_head not divisible by n_head_kv); Unimplemented for other
// architectures ("architecture 'gpt2' is not supported (supported: llama, mistral, qwen2)") and
// for RoPE scaling types other than none/linear.
Result<LlamaHparams> ReadLlamaHparams(const GgufFile& file);

}  // namespace inferloop::llm
