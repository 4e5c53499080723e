#include "serve/version_statistics.h"

#include <algorithm>

namespace inferloop::serve {

ModelMetadata MetadataFromConfig(const std::string& name, int64_t version, const std::string& platform,
                                 const ModelConfig& config) {
  ModelMetadata m;
  m.name = name;
  m.versions = {std::to_string(version)};
  m.platform = platform;
  const bool batched = config.max_batch_size() > 0;
  auto add = [&](const auto& list, std::vector<TensorMetadata>& out) {
    for (const auto& t : list) {
      TensorMetadata tm{t.name(), KServeDataTypeName(t.data_type()), {}};
      if (batched) tm.shape.push_back(-1);
      tm.shape.insert(tm.shape.end(), t.dims().begin(), t.dims().end());
      out.push_back(std::move(tm));
    }
  };
  add(config.input(), m.inputs);
  add(config.output(), m.outputs);
  return m;
}

void AddDuration(DurationStat& d, std::chrono::nanoseconds t, uint64_t n) {
  d.count += n;
  d.ns += static_cast<uint64_t>(std::max<int64_t>(0, t.count())) * n;
}

uint64_t NowEpochMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

void VersionStatistics::RecordSuccess(uint64_t rows, std::chrono::nanoseconds queue, std::chrono::nanoseconds compute,
                                      std::chrono::nanoseconds total) {
  std::lock_guard<std::mutex> lock(mu_);
  AddDuration(s_.success, total);
  AddDuration(s_.queue, queue);
  AddDuration(s_.compute_infer, compute);
  s_.inference_count += rows;
  s_.execution_count += 1;
  s_.last_inference_ms = NowEpochMs();
}

void VersionStatistics::RecordFailure(std::chrono::nanoseconds total) {
  std::lock_guard<std::mutex> lock(mu_);
  AddDuration(s_.fail, total);
}

void VersionStatistics::Update(const std::function<void(ModelStatistics&)>& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f(s_);
}

ModelStatistics VersionStatistics::Snapshot(const std::string& name, int64_t version, int64_t memory_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  ModelStatistics s = s_;
  s.name = name;
  s.version = std::to_string(version);
  s.memory_bytes = memory_bytes;
  return s;
}

}  // namespace inferloop::serve
