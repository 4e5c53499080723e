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
// A model's series live across reloads (same cells); the gauges follow the engine that takes
// new requests. An unloaded model's series are removed once its engine is freed.
//
// Reload and unload without downtime: LoadModel of a name already served loads the new file
// beside the serving engine, then swaps it in (new requests go to it); the replaced engine, like
// an unloaded one, is retired: it refuses new requests, finishes every request it accepted
// (streams in flight complete) and is freed, on the service's retire thread. A request that
// found the old engine just as it began refusing is sent to the one serving the name now.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llm/llm_engine.h"
#include "serve/event_log.h"
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
  // Retired engines: "llm_model_draining" / "llm_model_unloaded" events. May be null.
  EventLog* log = nullptr;
};

class LlmTextService : public TextGenerationService {
 public:
  // `registry` may be null (no metrics); it must outlive the service.
  LlmTextService(LlmServiceOptions options, MetricsRegistry* registry);
  // Cancels what is still running (retired engines included) and frees every engine.
  ~LlmTextService() override;

  // Loads `path` as model `name` and starts its engine; when `name` is already served, the new
  // engine replaces it (see above). Errors name the file and the problem; the engine serving
  // `name` before, if any, keeps serving then.
  Status LoadModel(const std::string& name, const std::string& path);
  // Stops serving `name` (new requests: NotFound) and retires its engine. NotFound if not served.
  Status UnloadModel(const std::string& name);

  std::vector<ModelInfo> ListModels() const override;
  Status Generate(TextGenerationRequest request, std::function<void(const TextPiece&)> on_piece,
                  std::function<void(const TextGenerationResult&)> on_done) override;

  // Waits until no generation is queued or running and no retired engine is left (or `deadline`
  // passes); true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) const;

  // The engine serving `name` (null if none), kept alive while held; for stats and tests.
  std::shared_ptr<const llm::LlmEngine> Engine(const std::string& name) const;

  struct Loaded;

 private:
  std::shared_ptr<Loaded> Find(const std::string& name) const;
  Status SubmitTo(const std::shared_ptr<Loaded>& m, const TextGenerationRequest& req,
                  const std::function<void(const TextPiece&)>& on_piece,
                  const std::function<void(const TextGenerationResult&)>& on_done);
  void Retire(std::shared_ptr<Loaded> old);  // call with mu_ not held
  void RetireLoop();

  LlmServiceOptions options_;
  MetricsRegistry* registry_;
  struct Families;
  std::unique_ptr<Families> families_;

  mutable std::mutex mu_;  // guards models_
  std::map<std::string, std::shared_ptr<Loaded>> models_;  // serving, by name

  mutable std::mutex retire_mu_;  // guards retiring_, stopping_
  std::condition_variable retire_cv_;
  std::deque<std::shared_ptr<Loaded>> retiring_;  // front: being drained by retirer_
  bool stopping_ = false;
  std::thread retirer_;
};

}  // namespace inferloop::serve
