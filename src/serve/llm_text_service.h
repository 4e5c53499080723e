// LlmTextService: TextGenerationService over GGUF llama-family models, one LlmEngine
// (continuous batching, paged KV cache) per model, with the LLM metrics.
//
// Metrics (registered in the server's registry; label "model"):
//   inferloop_llm_time_to_first_token_seconds   histogram, per choice
//   inferloop_llm_time_per_output_token_seconds histogram, per choice (after the first token)
//   inferloop_llm_queue_time_seconds            histogram, submit to first computed step
//   inferloop_llm_prompt_tokens_total, inferloop_llm_generation_tokens_total,
//   inferloop_llm_prefix_cache_hit_tokens_total (prompt tokens taken from the prefix cache),
//   inferloop_llm_requests_total{finish_reason}
//   inferloop_llm_kv_blocks_used, inferloop_llm_kv_blocks_free, inferloop_llm_kv_blocks_cached_idle,
//   inferloop_llm_running_sequences, inferloop_llm_waiting_sequences, inferloop_llm_token_backlog  gauges
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "llm/llm_engine.h"
#include "serve/metrics_registry.h"
#include "serve/text_generation_service.h"

namespace inferloop::serve {

struct LlmServiceOptions {
  llm::EngineOptions engine;
  // New requests get ResourceExhausted (HTTP 429) while the prompt tokens waiting to be computed
  // exceed this.
  int64_t max_token_backlog = 16384;
  // KV memory the prefix cache may keep for blocks no sequence uses (-1: no bound but the KV
  // cache itself; 0: no prefix cache). Converted to blocks per model.
  int64_t prefix_cache_bytes = -1;
};

class LlmTextService : public TextGenerationService {
 public:
  // `registry` may be null (no metrics); it must outlive the service.
  LlmTextService(LlmServiceOptions options, MetricsRegistry* registry);
  ~LlmTextService() override;

  // Loads `path` as model `name` and starts its engine. Errors name the file and the problem;
  // AlreadyExists-like InvalidArgument for a name already loaded.
  Status LoadModel(const std::string& name, const std::string& path);

  std::vector<ModelInfo> ListModels() const override;
  Status Generate(TextGenerationRequest request, std::function<void(const TextPiece&)> on_piece,
                  std::function<void(const TextGenerationResult&)> on_done) override;

  // Waits until no generation is queued or running (or `deadline` passes); true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) const;

  // The engine of a loaded model (nullptr if unknown), for stats and tests.
  const llm::LlmEngine* Engine(const std::string& name) const;

  struct Loaded;

 private:
  LlmServiceOptions options_;
  MetricsRegistry* registry_;
  struct Families;
  std::unique_ptr<Families> families_;
  std::vector<std::unique_ptr<Loaded>> models_;
};

}  // namespace inferloop::serve
