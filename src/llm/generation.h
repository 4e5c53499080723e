// Single-sequence generation: prefill a prompt, then decode token by token until a limit, an
// end-of-generation token, or the callback says stop. Used by `inferloop generate`.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "inferloop/status.h"
#include "llm/llama_model.h"
#include "llm/sampler.h"

namespace inferloop::llm {

struct GenerationOptions {
  int max_tokens = 128;        // tokens to generate (not counting the prompt)
  SamplingParams sampling;
  bool stop_at_eog = true;     // end at EOS / EOT
  int threads = 0;             // 0: the CPUs this process may use
  KvType kv_type = KvType::kF16;  // element type of the KV cache
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double prompt_seconds = 0;
  double generate_seconds = 0;
  bool stopped_at_eog = false;
};

// Called with each generated token; return false to stop.
using TokenCallback = std::function<bool(int32_t token)>;

// The checks Generate makes before computing anything, for callers that report bad requests
// before starting one (the Python module): InvalidArgument for an empty prompt, a token id
// outside the vocab, max_tokens < 0, the prompt plus max_tokens beyond the model's context, or
// bad sampling parameters.
Status ValidateGeneration(const LlamaModel& model, const std::vector<int32_t>& prompt,
                          const GenerationOptions& options);

// Generates after `prompt` (token ids, non-empty). Errors: those of ValidateGeneration.
Result<GenerationStats> Generate(const LlamaModel& model, const std::vector<int32_t>& prompt,
                                 const GenerationOptions& options, const TokenCallback& on_token);

}  // namespace inferloop::llm
