// ModelClient: the blocking control-plane calls `inferloop perf` makes before and between load
// points: the model's metadata and configuration, and its statistics (the statistics
// extension). REST (GET /v2/models/M[/versions/V], .../config, .../stats) or gRPC
// (ModelMetadata, ModelConfig, ModelStatistics). Every call has a timeout of a few seconds, so an
// unreachable server is reported quickly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "perf/endpoint.h"

namespace inferloop::perf {

struct ModelTensorInfo {
  std::string name;
  std::string datatype;        // v2 name: "FP32", "INT32", "BYTES", ...
  std::vector<int64_t> shape;  // as in the metadata: -1 for variable dims (the batch dim included)
};

struct ModelInfo {
  std::string name;
  std::string version;      // as asked (empty: the server's choice)
  int64_t max_batch_size = 0;  // from the configuration; 0: the model does not batch
  std::vector<ModelTensorInfo> inputs;
};

// Cumulative counters of the statistics extension for one model.
struct ModelStatsSnapshot {
  uint64_t success_count = 0;
  uint64_t queue_ns = 0;
  uint64_t compute_ns = 0;  // compute_input + compute_infer + compute_output
};

class ModelClient {
 public:
  virtual ~ModelClient() = default;
  // NotFound for an unknown model (the server's message included), Unavailable when the server
  // cannot be reached within the timeout.
  virtual Result<ModelInfo> FetchModel(const std::string& name, const std::string& version) = 0;
  virtual Result<ModelStatsSnapshot> FetchStats(const std::string& name, const std::string& version) = 0;
};

std::unique_ptr<ModelClient> MakeModelClient(const Endpoint& endpoint, double timeout_s = 5.0);

}  // namespace inferloop::perf
