// What every kind of model version reports the same way: its KServe metadata from its config,
// and the statistics extension's counters (thread-safe), so the backends do not each keep a copy.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "serve/inference_service.h"
#include "serve/model_config.h"

namespace inferloop::serve {

// Metadata of `config`'s inputs and outputs (shape -1 first when the model batches).
ModelMetadata MetadataFromConfig(const std::string& name, int64_t version, const std::string& platform,
                                 const ModelConfig& config);

// Adds one occurrence of `t` (negative counts as 0) to `d`, `n` times.
void AddDuration(DurationStat& d, std::chrono::nanoseconds t, uint64_t n = 1);
// Milliseconds since the Unix epoch now (ModelStatistics::last_inference_ms).
uint64_t NowEpochMs();

// A version's statistics behind a mutex.
class VersionStatistics {
 public:
  // A request answered successfully: `rows` inferred, one execution.
  void RecordSuccess(uint64_t rows, std::chrono::nanoseconds queue, std::chrono::nanoseconds compute,
                     std::chrono::nanoseconds total);
  void RecordFailure(std::chrono::nanoseconds total);
  // Any other change, under the lock.
  void Update(const std::function<void(ModelStatistics&)>& f);
  // A copy with name, version and memory set.
  ModelStatistics Snapshot(const std::string& name, int64_t version, int64_t memory_bytes) const;

 private:
  mutable std::mutex mu_;
  ModelStatistics s_;
};

}  // namespace inferloop::serve
