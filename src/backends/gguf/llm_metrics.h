// The LLM metric families of the gguf backend (listed in gguf_backend.h) and each model's series.
// Series of a model stay while any version of it is alive (a reload keeps them); the last
// version's going removes them. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "llm/llm_engine.h"
#include "serve/metrics_registry.h"

namespace inferloop::backends {

// One model's series (cells shared by its versions).
struct LlmModelSeries {
  serve::Histogram ttft, tpot, queue;
  serve::Counter prompt_tokens, generation_tokens;
  serve::Counter prefix_hits_memory, prefix_hits_disk;  // inferloop_llm_prefix_cache_hit_tokens_total{tier}
  serve::Counter finished_stop, finished_length, finished_cancelled, finished_error;
  serve::Counter embedding_inputs;  // inferloop_llm_embedding_inputs_total (POST /v1/embeddings)
  // Publishes an engine's state to the model's gauges.
  std::function<void(const llm::EngineStats&)> publish;
};

// The share of the KV cache held by sequences, 0..1: blocks kept only by the prefix cache are
// evictable, so they count as free (as vLLM counts them). 0 for an engine with no blocks.
double KvUsageFraction(const llm::EngineStats& st);

class LlmMetrics {
 public:
  explicit LlmMetrics(serve::MetricsRegistry* registry);  // null: every series is a no-op
  // The series of `model`, counting one more live version of it.
  LlmModelSeries Acquire(const std::string& model);
  // One version of `model` is gone; the last one removes its series.
  void Release(const std::string& model);

 private:
  struct Families;
  std::shared_ptr<Families> f_;
  std::mutex mu_;
  std::map<std::string, int> live_;
};

}  // namespace inferloop::backends
