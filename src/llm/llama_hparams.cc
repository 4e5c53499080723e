#include "llm/llama_hparams.h"

#include <cmath>

#include "base/status_macros.h"

namespace inferloop::llm {
namespace {

Result<uint32_t> ReadCount(const GgufFile& f, const std::string& key) {
  IL_ASSIGN_OR_RETURN(uint64_t v, f.GetUnsigned(key));
  if (v == 0 || v > (1u << 24)) {
    return Status::InvalidArgument("key '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<uint32_t>(v);
}

// Optional float key: absent -> `fallback`; present with another type -> error.
Result<float> ReadOptionalFloat(const GgufFile& f, const std::string& key, float fallback) {
  if (f.Find(key) == nullptr) return fallback;
  return f.GetFloat32(key);
}

}  // namespace

Result<LlamaHparams> ReadLlamaHparams(const GgufFile& f) {
  LlamaHparams h;
  IL_ASSIGN_OR_RETURN(std::string_view arch, f.GetString("general.architecture"));
  h.arch = std::string(arch);
  if (h.arch != "llama" && h.arch != "mistral" && h.arch != "qwen2") {
    return Status::Unimplemented("architecture '" + h.arch +
                                 "' is not supported (supported: llama, mistral, qwen2)");
  }
  const std::string p = h.arch + ".";
  IL_ASSIGN_OR_RETURN(h.n_embd, ReadCount(f, p + "embedding_length"));
  IL_ASSIGN_OR_RETURN(h.n_layer, ReadCount(f, p + "block_count"));
  IL_ASSIGN_OR_RETURN(h.n_head, ReadCount(f, p + "attention.head_count"));
  if (f.Find(p + "attention.head_count_kv") != nullptr) {
    IL_ASSIGN_OR_RETURN(h.n_head_kv, ReadCount(f, p + "attention.head_count_kv"));
  } else {
    h.n_head_kv = h.n_head;
  }
  IL_ASSIGN_OR_RETURN(h.n_ff, ReadCount(f, p + "feed_forward_length"));
  IL_ASSIGN_OR_RETURN(h.n_ctx_train, ReadCount(f, p + "context_length"));
  if (h.n_head % h.n_head_kv != 0) {
    return Status::InvalidArgument("key '" + p + "attention.head_count' (" + std::to_string(h.n_head) +
                                   ") is not a multiple of head_count_kv (" + std::to_string(h.n_head_kv) + ")");
  }
  if (f.Find(p + "attention.key_length") != nullptr) {
    IL_ASSIGN_OR_RETURN(h.head_dim, ReadCount(f, p + "attention.key_length"));
  } else {
    if (h.n_embd % h.n_head != 0) {
      return Status::InvalidArgument("key '" + p + "embedding_length' (" + std::to_string(h.n_embd) +
                                     ") is not a multiple of head_count (" + std::to_string(h.n_head) + ")");
    }
    h.head_dim = h.n_embd / h.n_head;
  }
  if (f.Find(p + "rope.dimension_count") != nullptr) {
    IL_ASSIGN_OR_RETURN(h.rope_dims, ReadCount(f, p + "rope.dimension_count"));
  } else {
    h.rope_dims = h.head_dim;
  }
  if (h.rope_dims > h.head_dim || h.rope_dims % 2 != 0) {
    return Status::InvalidArgument("key '" + p + "rope.dimension_count' (" + std::to_string(h.rope_dims) +
                                   ") must be even and at most the head size " + std::to_string(h.head_dim));
  }
  IL_ASSIGN_OR_RETURN(h.rope_freq_base, ReadOptionalFloat(f, p + "rope.freq_base", 10000.0f));
  IL_ASSIGN_OR_RETURN(h.rms_eps, ReadOptionalFloat(f, p + "attention.layer_norm_rms_epsilon", 1e-5f));
  if (!(h.rope_freq_base > 0) || !std::isfinite(h.rope_freq_base)) {
    return Status::InvalidArgument("key '" + p + "rope.freq_base' must be a positive number");
  }
  if (!(h.rms_eps > 0) || !std::isfinite(h.rms_eps)) {
    return Status::InvalidArgument("key '" + p + "attention.layer_norm_rms_epsilon' must be a positive number");
  }
  std::string scaling = "none";
  if (f.Find(p + "rope.scaling.type") != nullptr) {
    IL_ASSIGN_OR_RETURN(std::string_view s, f.GetString(p + "rope.scaling.type"));
    scaling = std::string(s);
  }
  if (scaling == "linear") {
    IL_ASSIGN_OR_RETURN(float factor, ReadOptionalFloat(f, p + "rope.scaling.factor", 1.0f));
    if (!(factor > 0) || !std::isfinite(factor)) {
      return Status::InvalidArgument("key '" + p + "rope.scaling.factor' must be a positive number");
    }
    h.rope_freq_scale = 1.0f / factor;
  } else if (scaling != "none") {
    return Status::Unimplemented("RoPE scaling type '" + scaling + "' is not supported (supported: none, linear)");
  }
  h.rope_style = h.arch == "qwen2" ? RopeStyle::kNeox : RopeStyle::kNorm;
  h.attn_bias = h.arch == "qwen2";
  return h;
}

}  // namespace inferloop::llm
