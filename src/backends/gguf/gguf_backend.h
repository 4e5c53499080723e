// The gguf backend: llama-family language models in GGUF files (DIR/<model>/<version>/model.gguf),
// each version one llm::LlmEngine (continuous batching, paged KV cache) served through the
// OpenAI-compatible API (ModelVersion::TextGeneration). KServe v2 inference on such a model is
// refused with a message pointing at /v1. Loading, versions, poll/explicit control, hot reload
// with drain, readiness and statistics are the model manager's, as for every kind of model.
//
// Serves configs whose backend is "gguf" or "llama" (platform empty), and config-less or
// backend-less models whose highest version folder holds model.gguf and no model.onnx.
//
// Metrics (in the registry given; label "model"), per model, living across reloads:
//   inferloop_llm_time_to_first_token_seconds, inferloop_llm_time_per_output_token_seconds,
//   inferloop_llm_queue_time_seconds (histograms, per choice);
//   inferloop_llm_prompt_tokens_total, inferloop_llm_generation_tokens_total,
//   inferloop_llm_prefix_cache_hit_tokens_total{tier="memory|disk"}, inferloop_llm_requests_total{finish_reason},
//   inferloop_llm_prefix_cache_disk_bytes_read_total, _disk_bytes_written_total, _disk_errors_total;
//   inferloop_llm_kv_blocks_used, _kv_blocks_free, _kv_blocks_cached_idle, _running_sequences,
//   _waiting_sequences, _token_backlog, inferloop_llm_prefix_cache_disk_bytes (gauges of the newest
//   version of the model).
// A model's series are removed once no version of it is left.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "llm/llm_engine.h"
#include "serve/event_log.h"
#include "serve/metrics_registry.h"
#include "serve/model_backend.h"

namespace inferloop::backends {

struct GgufBackendOptions {
  llm::EngineOptions engine;
  // New requests get ResourceExhausted (HTTP 429) while the prompt tokens waiting to be computed
  // exceed this.
  int64_t max_token_backlog = 16384;
  // KV memory the prefix cache may keep for blocks no sequence uses (-1: no bound but the KV
  // cache itself; 0: no prefix cache). Converted to blocks per model.
  int64_t prefix_cache_bytes = -1;
  // The prefix cache's disk tier (llm/kv_disk_tier.h): "" for none. Blocks evicted from memory,
  // and every cached block when a version is unloaded or the server stops, are kept in
  // prefix_cache_dir/<model identity>/ within prefix_cache_disk_bytes per model.
  std::string prefix_cache_dir;
  int64_t prefix_cache_disk_bytes = int64_t{4096} << 20;
  serve::EventLog* log = nullptr;  // "llm_engine_draining" / "llm_engine_stopped"; may be null
};

// `registry` may be null (no metrics); it must outlive the backend and its versions.
std::shared_ptr<serve::ModelBackend> MakeGgufBackend(GgufBackendOptions options, serve::MetricsRegistry* registry);

}  // namespace inferloop::backends
