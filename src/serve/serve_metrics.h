// ServeMetrics: the server's Prometheus metrics (names and labels in docs/SERVING.md#metrics),
// on top of the MetricsRegistry. Per model version: request outcomes, request / queue / compute
// time histograms, batch sizes and dispatch reasons, queue depth; per server: in-flight requests,
// admission refusals, model state and memory; process CPU and memory; the response cache's
// per-model counters under Triton's names (nv_cache_*_per_model) and, once SetResponseCache is
// called, the cache's own (inferloop_response_cache_*: lookups, hits and evictions by tier,
// bytes and entries, disk errors, time), read from ResponseCache::Stats at each exposition.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/model_backend.h"
#include "serve/response_cache.h"

namespace inferloop::serve {

class ServeMetrics {
 public:
  ServeMetrics();
  ~ServeMetrics();

  // The sink a version being loaded reports to.
  std::shared_ptr<VersionMetricsSink> ForVersion(const std::string& model, int64_t version);
  // Drops a version's series once it stops serving.
  void RemoveVersion(const std::string& model, int64_t version);

  // A request refused before it reached a model's queue (admission, unknown model, draining).
  void OnRefused(const std::string& model, const Status& why);
  // The idle policy unloaded `model`; a request waited `waited` for its on-demand load.
  void OnIdleUnload(const std::string& model);
  void OnDemandLoad(const std::string& model, std::chrono::nanoseconds waited);

  // The server's response cache, whose statistics each exposition reports; call once, before
  // Text is called.
  void SetResponseCache(std::shared_ptr<const ResponseCache> cache);

  // The exposition text. `versions`: the serving versions, whose queue depth, state and memory
  // are read now; `inflight`: requests admitted and not yet answered, server-wide.
  std::string Text(const std::vector<std::shared_ptr<ModelVersion>>& versions, int64_t inflight);

  struct Impl;  // serve_metrics.cc

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferloop::serve
