#include "backends/gguf/llm_metrics.h"

#include <algorithm>
#include <vector>

namespace inferloop::backends {

struct LlmMetrics::Families {
  serve::HistogramFamily* ttft = nullptr;
  serve::HistogramFamily* tpot = nullptr;
  serve::HistogramFamily* queue = nullptr;
  serve::CounterFamily* prompt_tokens = nullptr;
  serve::CounterFamily* generation_tokens = nullptr;
  serve::CounterFamily* prefix_hits = nullptr;  // label tier: memory | disk
  serve::CounterFamily* disk_read = nullptr;
  serve::CounterFamily* disk_written = nullptr;
  serve::CounterFamily* disk_errors = nullptr;
  serve::GaugeFamily* disk_bytes = nullptr;
  serve::CounterFamily* draft = nullptr;     // speculative decoding: drafted tokens
  serve::CounterFamily* accepted = nullptr;  // of those, kept
  serve::CounterFamily* requests = nullptr;
  serve::CounterFamily* embedding_inputs = nullptr;
  serve::GaugeFamily* blocks_used = nullptr;
  serve::GaugeFamily* blocks_free = nullptr;
  serve::GaugeFamily* blocks_cached = nullptr;
  serve::GaugeFamily* running = nullptr;
  serve::GaugeFamily* waiting = nullptr;
  serve::GaugeFamily* backlog = nullptr;
  // The Gateway API Inference Extension's endpoint picker reads these (its model server protocol,
  // under vLLM's names, with label model_name), so it routes to inferloop pods as to vLLM pods.
  serve::GaugeFamily* gie_waiting = nullptr;
  serve::GaugeFamily* gie_running = nullptr;
  serve::GaugeFamily* gie_kv_usage = nullptr;         // vllm:kv_cache_usage_perc (current name)
  serve::GaugeFamily* gie_kv_usage_legacy = nullptr;  // vllm:gpu_cache_usage_perc (older pickers)
};

namespace {

template <typename T>
T Child(T fallback, auto* family, const std::vector<std::string>& labels) {
  if (family == nullptr) return fallback;
  auto r = family->WithLabels(labels);
  return r.ok() ? *r : fallback;
}

std::vector<double> LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

double KvUsageFraction(const llm::EngineStats& st) {
  if (st.kv_blocks_total <= 0) return 0.0;
  const double held = static_cast<double>(st.kv_blocks_used) - static_cast<double>(st.kv_blocks_cached_idle);
  return std::clamp(held / static_cast<double>(st.kv_blocks_total), 0.0, 1.0);
}

LlmMetrics::LlmMetrics(serve::MetricsRegistry* registry) : f_(std::make_shared<Families>()) {
  if (registry == nullptr) return;
  auto h = [&](const char* name, const char* help) {
    auto r = registry->AddHistogram(name, help, {"model"}, LatencyBuckets());
    return r.ok() ? *r : nullptr;
  };
  auto c = [&](const char* name, const char* help, std::vector<std::string> labels = {"model"}) {
    auto r = registry->AddCounter(name, help, std::move(labels));
    return r.ok() ? *r : nullptr;
  };
  auto g = [&](const char* name, const char* help, const char* label = "model") {
    auto r = registry->AddGauge(name, help, {label});
    return r.ok() ? *r : nullptr;
  };
  Families& f = *f_;
  f.ttft = h("inferloop_llm_time_to_first_token_seconds", "Time from request to its first generated token.");
  f.tpot = h("inferloop_llm_time_per_output_token_seconds", "Mean time between generated tokens of a choice.");
  f.queue = h("inferloop_llm_queue_time_seconds", "Time from request to the first step that computed it.");
  f.prompt_tokens = c("inferloop_llm_prompt_tokens_total", "Prompt tokens of finished requests.");
  f.generation_tokens = c("inferloop_llm_generation_tokens_total", "Generated tokens.");
  f.prefix_hits = c("inferloop_llm_prefix_cache_hit_tokens_total",
                    "Prompt tokens whose keys and values were reused from the prefix cache instead of computed, by "
                    "tier: memory, or disk (read back from --llm-prefix-cache-dir).",
                    {"model", "tier"});
  f.disk_read = c("inferloop_llm_prefix_cache_disk_bytes_read_total", "Bytes of KV block files read from the prefix "
                  "cache's disk tier.");
  f.disk_written = c("inferloop_llm_prefix_cache_disk_bytes_written_total", "Bytes of KV block files written to the "
                     "prefix cache's disk tier.");
  f.disk_errors = c("inferloop_llm_prefix_cache_disk_errors_total", "Damaged KV block files found (deleted) and failed "
                    "writes of the prefix cache's disk tier.");
  f.disk_bytes = g("inferloop_llm_prefix_cache_disk_bytes", "Bytes of KV block files in the prefix cache's disk tier.");
  f.draft = c("inferloop_llm_speculative_draft_tokens_total",
              "Tokens drafted by prompt lookup and verified (--llm-speculative-ngram).");
  f.accepted = c("inferloop_llm_speculative_accepted_tokens_total",
                 "Drafted tokens kept (the sampler chose them); each saves one decoding step.");
  f.requests = c("inferloop_llm_requests_total", "Finished choices by finish reason.", {"model", "finish_reason"});
  f.embedding_inputs = c("inferloop_llm_embedding_inputs_total", "Inputs embedded (POST /v1/embeddings), each one "
                         "vector; their tokens count in inferloop_llm_prompt_tokens_total.");
  f.blocks_used = g("inferloop_llm_kv_blocks_used", "KV cache blocks in use (by sequences or the prefix cache).");
  f.blocks_free = g("inferloop_llm_kv_blocks_free", "Free KV cache blocks.");
  f.blocks_cached = g("inferloop_llm_kv_blocks_cached_idle", "KV cache blocks held only by the prefix cache (evictable).");
  f.running = g("inferloop_llm_running_sequences", "Sequences being computed.");
  f.waiting = g("inferloop_llm_waiting_sequences", "Sequences waiting to be scheduled.");
  f.backlog = g("inferloop_llm_token_backlog", "Prompt tokens waiting to be computed.");
  f.gie_waiting = g("vllm:num_requests_waiting", "Sequences waiting to be scheduled (inferloop, for the Gateway API "
                    "Inference Extension's endpoint picker).", "model_name");
  f.gie_running = g("vllm:num_requests_running", "Sequences being computed (inferloop, for the endpoint picker).",
                    "model_name");
  f.gie_kv_usage = g("vllm:kv_cache_usage_perc", "Fraction (0..1) of KV cache blocks held by sequences; blocks kept "
                     "only by the prefix cache count as free (inferloop, for the endpoint picker).", "model_name");
  f.gie_kv_usage_legacy = g("vllm:gpu_cache_usage_perc", "Same as vllm:kv_cache_usage_perc, under the name older "
                            "endpoint pickers read (inferloop: CPU memory).", "model_name");
}

LlmModelSeries LlmMetrics::Acquire(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  ++live_[name];
  const Families& f = *f_;
  const std::vector<std::string> l = {name};
  LlmModelSeries s;
  s.ttft = Child(serve::Histogram(), f.ttft, l);
  s.tpot = Child(serve::Histogram(), f.tpot, l);
  s.queue = Child(serve::Histogram(), f.queue, l);
  s.prompt_tokens = Child(serve::Counter(), f.prompt_tokens, l);
  s.generation_tokens = Child(serve::Counter(), f.generation_tokens, l);
  s.prefix_hits_memory = Child(serve::Counter(), f.prefix_hits, {name, "memory"});
  s.prefix_hits_disk = Child(serve::Counter(), f.prefix_hits, {name, "disk"});
  serve::Counter disk_read = Child(serve::Counter(), f.disk_read, l),
                 disk_written = Child(serve::Counter(), f.disk_written, l),
                 disk_errors = Child(serve::Counter(), f.disk_errors, l),
                 drafted = Child(serve::Counter(), f.draft, l), accepted = Child(serve::Counter(), f.accepted, l);
  serve::Gauge disk_bytes = Child(serve::Gauge(), f.disk_bytes, l);
  s.finished_stop = Child(serve::Counter(), f.requests, {name, "stop"});
  s.finished_length = Child(serve::Counter(), f.requests, {name, "length"});
  s.finished_cancelled = Child(serve::Counter(), f.requests, {name, "cancelled"});
  s.finished_error = Child(serve::Counter(), f.requests, {name, "error"});
  s.embedding_inputs = Child(serve::Counter(), f.embedding_inputs, l);
  serve::Gauge used = Child(serve::Gauge(), f.blocks_used, l), free_blocks = Child(serve::Gauge(), f.blocks_free, l),
               cached = Child(serve::Gauge(), f.blocks_cached, l), running = Child(serve::Gauge(), f.running, l),
               waiting = Child(serve::Gauge(), f.waiting, l), backlog = Child(serve::Gauge(), f.backlog, l);
  serve::Gauge gie_waiting = Child(serve::Gauge(), f.gie_waiting, l),
               gie_running = Child(serve::Gauge(), f.gie_running, l),
               gie_kv = Child(serve::Gauge(), f.gie_kv_usage, l),
               gie_kv_legacy = Child(serve::Gauge(), f.gie_kv_usage_legacy, l);
  // The disk tier's and the drafts' totals already counted (the engine reports totals; copies of `publish` share it).
  auto last = std::make_shared<llm::EngineStats>();
  s.publish = [=](const llm::EngineStats& st) mutable {
    auto delta = [](int64_t now, int64_t before) { return static_cast<double>(std::max<int64_t>(0, now - before)); };
    disk_read.Increment(delta(st.disk_bytes_read, last->disk_bytes_read));
    disk_written.Increment(delta(st.disk_bytes_written, last->disk_bytes_written));
    disk_errors.Increment(delta(st.disk_errors, last->disk_errors));
    drafted.Increment(delta(st.draft_tokens, last->draft_tokens));
    accepted.Increment(delta(st.draft_accepted_tokens, last->draft_accepted_tokens));
    disk_bytes.Set(static_cast<double>(st.disk_bytes));
    *last = st;
    used.Set(st.kv_blocks_used);
    free_blocks.Set(st.kv_blocks_total - st.kv_blocks_used);
    cached.Set(st.kv_blocks_cached_idle);
    running.Set(st.running);
    waiting.Set(st.waiting);
    backlog.Set(static_cast<double>(st.token_backlog));
    gie_waiting.Set(st.waiting);
    gie_running.Set(st.running);
    const double kv = KvUsageFraction(st);
    gie_kv.Set(kv);
    gie_kv_legacy.Set(kv);
  };
  return s;
}

void LlmMetrics::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (--live_[name] > 0) return;
  live_.erase(name);
  const Families& f = *f_;
  for (auto* h : {f.ttft, f.tpot, f.queue})
    if (h) h->RemoveWhere("model", name);
  for (auto* c : {f.prompt_tokens, f.generation_tokens, f.prefix_hits, f.requests, f.disk_read, f.disk_written,
                  f.disk_errors, f.draft, f.accepted, f.embedding_inputs})
    if (c) c->RemoveWhere("model", name);
  for (auto* g : {f.blocks_used, f.blocks_free, f.blocks_cached, f.running, f.waiting, f.backlog, f.disk_bytes})
    if (g) g->RemoveWhere("model", name);
  for (auto* g : {f.gie_waiting, f.gie_running, f.gie_kv_usage, f.gie_kv_usage_legacy})
    if (g) g->RemoveWhere("model_name", name);
}

}  // namespace inferloop::backends
