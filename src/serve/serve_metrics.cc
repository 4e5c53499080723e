#include "serve/serve_metrics.h"

#include <cctype>
#include <mutex>

#include "serve/metrics_registry.h"

namespace inferloop::serve {
namespace {

// The status code as a label value: StatusCodeName in lower case ("invalid_argument").
std::string CodeLabel(StatusCode c) {
  std::string label = StatusCodeName(c);
  for (char& ch : label) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return label;
}

// Every failure code (kOk excluded), for removing a version's failure series.
constexpr int kFirstFailureCode = static_cast<int>(StatusCode::kInvalidArgument);
constexpr int kLastFailureCode = static_cast<int>(StatusCode::kCancelled);

double Seconds(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) * 1e-9; }
double Microseconds(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) * 1e-3; }

// Latency buckets: 100 us .. ~52 s (x2 steps).
std::vector<double> LatencyBuckets() { return ExponentialBuckets(1e-4, 2.0, 20); }

// The response cache's own metrics, brought up to date from ResponseCache::Stats at each
// exposition (a counter advances by what changed since the previous one).
struct ResponseCacheMetrics {
  std::shared_ptr<const ResponseCache> cache;
  CounterFamily* lookups = nullptr;
  CounterFamily* hits = nullptr;
  CounterFamily* misses = nullptr;
  CounterFamily* evictions = nullptr;
  CounterFamily* disk_errors = nullptr;
  CounterFamily* lookup_seconds = nullptr;
  CounterFamily* insert_seconds = nullptr;
  GaugeFamily* bytes = nullptr;
  GaugeFamily* entries = nullptr;
  GaugeFamily* budget = nullptr;
  ResponseCacheStats last;  // as of the previous exposition
};

void Advance(CounterFamily* family, const std::vector<std::string>& labels, double now, double before) {
  if (now > before) family->WithLabels(labels).value().Increment(now - before);
}

void SetTier(const ResponseCacheMetrics& m, const std::string& tier, const ResponseCacheTierStats& now,
             const ResponseCacheTierStats& before) {
  Advance(m.hits, {tier}, static_cast<double>(now.hits), static_cast<double>(before.hits));
  Advance(m.evictions, {tier}, static_cast<double>(now.evictions), static_cast<double>(before.evictions));
  m.bytes->WithLabels({tier}).value().Set(static_cast<double>(now.bytes));
  m.entries->WithLabels({tier}).value().Set(static_cast<double>(now.entries));
  m.budget->WithLabels({tier}).value().Set(static_cast<double>(now.budget_bytes));
}

void UpdateResponseCacheMetrics(ResponseCacheMetrics& m) {
  const ResponseCacheStats now = m.cache->Stats();
  const ResponseCacheStats& before = m.last;
  Advance(m.lookups, {}, static_cast<double>(now.lookups), static_cast<double>(before.lookups));
  Advance(m.misses, {}, static_cast<double>(now.misses), static_cast<double>(before.misses));
  SetTier(m, "memory", now.memory, before.memory);
  SetTier(m, "disk", now.disk, before.disk);
  Advance(m.disk_errors, {"corrupt"}, static_cast<double>(now.disk_corrupt_dropped),
          static_cast<double>(before.disk_corrupt_dropped));
  Advance(m.disk_errors, {"write_failure"}, static_cast<double>(now.disk_write_failures),
          static_cast<double>(before.disk_write_failures));
  Advance(m.disk_errors, {"skipped"}, static_cast<double>(now.disk_skipped_writes),
          static_cast<double>(before.disk_skipped_writes));
  Advance(m.lookup_seconds, {}, static_cast<double>(now.lookup_ns) * 1e-9, static_cast<double>(before.lookup_ns) * 1e-9);
  Advance(m.insert_seconds, {}, static_cast<double>(now.insert_ns) * 1e-9, static_cast<double>(before.insert_ns) * 1e-9);
  m.last = now;
}

}  // namespace

struct ServeMetrics::Impl {
  MetricsRegistry registry;
  CounterFamily* success = nullptr;
  CounterFamily* failure = nullptr;
  HistogramFamily* request_seconds = nullptr;
  HistogramFamily* queue_seconds = nullptr;
  HistogramFamily* compute_seconds = nullptr;
  HistogramFamily* batch_size = nullptr;
  CounterFamily* batches = nullptr;
  GaugeFamily* queue_depth = nullptr;
  GaugeFamily* inflight = nullptr;
  GaugeFamily* model_ready = nullptr;
  GaugeFamily* model_memory = nullptr;
  CounterFamily* refused = nullptr;
  CounterFamily* cpu_share_wait = nullptr;
  CounterFamily* cpu_share_charged = nullptr;
  CounterFamily* idle_unloads = nullptr;
  HistogramFamily* on_demand_load_seconds = nullptr;
  // Triton's per-model response cache counters (names and units as Triton's metrics.md).
  CounterFamily* cache_hits = nullptr;
  CounterFamily* cache_misses = nullptr;
  CounterFamily* cache_hit_us = nullptr;
  CounterFamily* cache_miss_us = nullptr;
  std::unique_ptr<ResponseCacheMetrics> response_cache;  // null until SetResponseCache
  std::mutex expose_mu;  // one exposition at a time (it sets the scrape-time gauges)
};

// One model version's handles, updated lock-free on the request path.
class VersionSink final : public VersionMetricsSink {
 public:
  VersionSink(ServeMetrics::Impl& m, const std::string& model, const std::string& version)
      : m_(m), model_(model), version_(version) {
    const std::vector<std::string> mv = {model, version};
    success_ = m.success->WithLabels(mv).value();
    request_ = m.request_seconds->WithLabels(mv).value();
    queue_ = m.queue_seconds->WithLabels(mv).value();
    compute_ = m.compute_seconds->WithLabels(mv).value();
    batch_size_ = m.batch_size->WithLabels(mv).value();
    depth_ = m.queue_depth->WithLabels(mv).value();
    cpu_wait_ = m.cpu_share_wait->WithLabels(mv).value();
    cpu_charged_ = m.cpu_share_charged->WithLabels(mv).value();
    cache_hits_ = m.cache_hits->WithLabels(mv).value();
    cache_misses_ = m.cache_misses->WithLabels(mv).value();
    cache_hit_us_ = m.cache_hit_us->WithLabels(mv).value();
    cache_miss_us_ = m.cache_miss_us->WithLabels(mv).value();
    for (int r = 0; r < 3; ++r)
      reasons_[r] = m.batches->WithLabels({model, version, DispatchReasonName(static_cast<DispatchReason>(r))}).value();
  }
  void OnQueueDepth(int64_t depth) override { depth_.Set(static_cast<double>(depth)); }
  void OnBatch(int64_t rows, DispatchReason reason) override {
    batch_size_.Observe(static_cast<double>(rows));
    reasons_[static_cast<int>(reason)].Increment();
  }
  void OnRequestDone(const Status& status, std::chrono::nanoseconds queue, std::chrono::nanoseconds compute,
                     std::chrono::nanoseconds total) override {
    if (status.ok()) {
      success_.Increment();
      queue_.Observe(Seconds(queue));
      compute_.Observe(Seconds(compute));
    } else {
      auto c = m_.failure->WithLabels({model_, version_, CodeLabel(status.code())});
      if (c.ok()) c.value().Increment();
    }
    request_.Observe(Seconds(total));
  }
  void OnCpuShare(std::chrono::nanoseconds waited, std::chrono::nanoseconds charged) override {
    cpu_wait_.Increment(Seconds(waited));
    cpu_charged_.Increment(Seconds(charged));
  }
  void OnCacheHit(std::chrono::nanoseconds lookup, std::chrono::nanoseconds total) override {
    success_.Increment();
    request_.Observe(Seconds(total));
    cache_hits_.Increment();
    cache_hit_us_.Increment(Microseconds(lookup));
  }
  void OnCacheMiss(std::chrono::nanoseconds lookup_and_insert) override {
    cache_misses_.Increment();
    cache_miss_us_.Increment(Microseconds(lookup_and_insert));
  }

 private:
  ServeMetrics::Impl& m_;
  std::string model_, version_;
  Counter success_, cpu_wait_, cpu_charged_;
  Counter cache_hits_, cache_misses_, cache_hit_us_, cache_miss_us_;
  Histogram request_, queue_, compute_, batch_size_;
  Gauge depth_;
  Counter reasons_[3];
};

ServeMetrics::ServeMetrics() : impl_(std::make_unique<Impl>()) {
  auto& r = impl_->registry;
  const std::vector<std::string> mv = {"model", "version"};
  impl_->success = r.AddCounter("inferloop_request_success_total", "Requests answered successfully.", mv).value();
  impl_->failure = r.AddCounter("inferloop_request_failure_total",
                                "Requests that reached a model version and failed, by reason (status code).",
                                {"model", "version", "reason"})
                       .value();
  impl_->request_seconds = r.AddHistogram("inferloop_request_duration_seconds",
                                          "End-to-end request time in the server (received to answered).", mv,
                                          LatencyBuckets())
                               .value();
  impl_->queue_seconds =
      r.AddHistogram("inferloop_queue_duration_seconds", "Time a successful request waited in its model's queue.", mv,
                     LatencyBuckets())
          .value();
  impl_->compute_seconds = r.AddHistogram("inferloop_compute_duration_seconds",
                                          "Time computing the batch a successful request was in (gather, run, split).",
                                          mv, LatencyBuckets())
                               .value();
  impl_->batch_size = r.AddHistogram("inferloop_batch_size", "Rows per executed batch.", mv,
                                     {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256})
                          .value();
  impl_->batches = r.AddCounter("inferloop_batches_total",
                                "Batches dispatched, by why: full (max_batch_size or next request did not fit), "
                                "preferred (a preferred batch size reached), delay (max_queue_delay expired or no delay).",
                                {"model", "version", "reason"})
                       .value();
  impl_->queue_depth =
      r.AddGauge("inferloop_queue_depth", "Requests waiting in a model version's queue (updated as they are queued).", mv)
          .value();
  impl_->inflight = r.AddGauge("inferloop_inflight_requests", "Requests admitted and not yet answered, server-wide.").value();
  impl_->model_ready = r.AddGauge("inferloop_model_ready", "1 when a serving model version takes requests, else 0.", mv).value();
  impl_->model_memory =
      r.AddGauge("inferloop_model_memory_bytes", "Memory a model version holds: the heap its load kept (weights, plans) and its arenas.", mv)
          .value();
  impl_->refused = r.AddCounter("inferloop_requests_refused_total",
                                "Requests refused before reaching a model's queue (admission limits, unknown model, "
                                "not ready, shutting down), by reason.",
                                {"model", "reason"})
                       .value();
  impl_->cpu_share_wait = r.AddCounter("inferloop_cpu_share_wait_seconds_total",
                                       "Time batches of a model version waited for an execution slot of the "
                                       "server's CPU-share scheduler (fair share between models).",
                                       mv)
                              .value();
  impl_->cpu_share_charged = r.AddCounter("inferloop_cpu_share_seconds_total",
                                          "Execution-slot time a model version's batches held (what the CPU-share "
                                          "scheduler charges it, before its cpu_share weight).",
                                          mv)
                                 .value();
  impl_->idle_unloads = r.AddCounter("inferloop_model_idle_unloads_total",
                                     "Models unloaded by the idle policy (memory budget); they load on their next request.",
                                     {"model"})
                            .value();
  impl_->on_demand_load_seconds =
      r.AddHistogram("inferloop_model_on_demand_load_seconds",
                     "Extra wait of the first request to a model unloaded while idle (its on-demand load).", {"model"},
                     {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60})
          .value();
  // Triton's per-model response cache counters: names, help and units as Triton's metrics.md.
  const struct {
    CounterFamily** family;
    const char* name;
    const char* help;
  } cache_counters[] = {
      {&impl_->cache_hits, "nv_cache_num_hits_per_model", "Number of response cache hits per model."},
      {&impl_->cache_misses, "nv_cache_num_misses_per_model", "Number of response cache misses per model."},
      {&impl_->cache_hit_us, "nv_cache_hit_duration_per_model",
       "Cumulative time requests spent looking up and copying a cached response on response cache hits, per model "
       "(microseconds)."},
      {&impl_->cache_miss_us, "nv_cache_miss_duration_per_model",
       "Cumulative time requests spent looking up and inserting responses on response cache misses, per model "
       "(microseconds)."},
  };
  for (const auto& c : cache_counters) *c.family = r.AddCounter(c.name, c.help, mv).value();
}

ServeMetrics::~ServeMetrics() = default;

void ServeMetrics::SetResponseCache(std::shared_ptr<const ResponseCache> cache) {
  std::lock_guard<std::mutex> lock(impl_->expose_mu);
  if (impl_->response_cache != nullptr || cache == nullptr) return;
  auto& r = impl_->registry;
  auto m = std::make_unique<ResponseCacheMetrics>();
  m->cache = std::move(cache);
  const std::vector<std::string> tier = {"tier"};
  m->lookups = r.AddCounter("inferloop_response_cache_lookups_total", "Response cache lookups.").value();
  m->hits = r.AddCounter("inferloop_response_cache_hits_total",
                         "Response cache lookups answered, by the tier that held the entry (memory, disk).", tier)
                .value();
  m->misses = r.AddCounter("inferloop_response_cache_misses_total", "Response cache lookups that found nothing.").value();
  m->evictions = r.AddCounter("inferloop_response_cache_evictions_total",
                              "Entries evicted from a response cache tier to stay within its byte budget.", tier)
                     .value();
  m->bytes = r.AddGauge("inferloop_response_cache_bytes", "Bytes a response cache tier holds.", tier).value();
  m->entries = r.AddGauge("inferloop_response_cache_entries", "Entries a response cache tier holds.", tier).value();
  m->budget = r.AddGauge("inferloop_response_cache_budget_bytes", "Byte budget of a response cache tier (0: no such tier).",
                         tier)
                  .value();
  m->disk_errors = r.AddCounter("inferloop_response_cache_disk_errors_total",
                                "Disk tier problems, by kind: corrupt (an entry failed its check on read and was "
                                "dropped), write_failure (a write failed: disk full, I/O error), skipped (a write "
                                "dropped: queue full or writes paused after failures).",
                                {"kind"})
                       .value();
  m->lookup_seconds =
      r.AddCounter("inferloop_response_cache_lookup_seconds_total", "Time spent in response cache lookups.").value();
  m->insert_seconds =
      r.AddCounter("inferloop_response_cache_insert_seconds_total", "Time spent inserting into the response cache.")
          .value();
  for (const char* t : {"memory", "disk"}) {
    m->hits->WithLabels({t}).value();
    m->evictions->WithLabels({t}).value();
  }
  for (const char* k : {"corrupt", "write_failure", "skipped"}) m->disk_errors->WithLabels({k}).value();
  impl_->response_cache = std::move(m);
}

void ServeMetrics::OnIdleUnload(const std::string& model) {
  auto c = impl_->idle_unloads->WithLabels({model});
  if (c.ok()) c.value().Increment();
}

void ServeMetrics::OnDemandLoad(const std::string& model, std::chrono::nanoseconds waited) {
  auto h = impl_->on_demand_load_seconds->WithLabels({model});
  if (h.ok()) h.value().Observe(Seconds(waited));
}

std::shared_ptr<VersionMetricsSink> ServeMetrics::ForVersion(const std::string& model, int64_t version) {
  return std::make_shared<VersionSink>(*impl_, model, std::to_string(version));
}

void ServeMetrics::RemoveVersion(const std::string& model, int64_t version) {
  const std::vector<std::string> mv = {model, std::to_string(version)};
  impl_->success->Remove(mv);
  impl_->request_seconds->Remove(mv);
  impl_->queue_seconds->Remove(mv);
  impl_->compute_seconds->Remove(mv);
  impl_->batch_size->Remove(mv);
  impl_->queue_depth->Remove(mv);
  impl_->model_ready->Remove(mv);
  impl_->model_memory->Remove(mv);
  impl_->cpu_share_wait->Remove(mv);
  impl_->cpu_share_charged->Remove(mv);
  impl_->cache_hits->Remove(mv);
  impl_->cache_misses->Remove(mv);
  impl_->cache_hit_us->Remove(mv);
  impl_->cache_miss_us->Remove(mv);
  for (int r = 0; r < 3; ++r)
    impl_->batches->Remove({model, mv[1], DispatchReasonName(static_cast<DispatchReason>(r))});
  for (int code = kFirstFailureCode; code <= kLastFailureCode; ++code)
    impl_->failure->Remove({model, mv[1], CodeLabel(static_cast<StatusCode>(code))});
}

void ServeMetrics::OnRefused(const std::string& model, const Status& why) {
  // Unknown model names are client-chosen: count them under one label so a scan of random names
  // cannot grow the series without bound.
  const std::string label = why.code() == StatusCode::kNotFound ? "" : model;
  auto c = impl_->refused->WithLabels({label, CodeLabel(why.code())});
  if (c.ok()) c.value().Increment();
}

std::string ServeMetrics::Text(const std::vector<std::shared_ptr<ModelVersion>>& versions, int64_t inflight) {
  std::lock_guard<std::mutex> lock(impl_->expose_mu);
  impl_->inflight->WithLabels({}).value().Set(static_cast<double>(inflight));
  for (const auto& v : versions) {
    const std::vector<std::string> mv = {v->name(), std::to_string(v->version())};
    impl_->model_ready->WithLabels(mv).value().Set(v->Ready() ? 1.0 : 0.0);
    impl_->model_memory->WithLabels(mv).value().Set(static_cast<double>(v->MemoryBytes()));
  }
  if (impl_->response_cache != nullptr) UpdateResponseCacheMetrics(*impl_->response_cache);
  return impl_->registry.Exposition();
}

}  // namespace inferloop::serve
