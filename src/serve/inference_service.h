// InferenceService: what the protocol frontends (REST, gRPC: src/frontends) ask of the server
// core (src/serve). The frontends decode bytes into these calls and encode the answers; the core
// never sees a socket. One implementation serves a model repository (serve/model_manager.h); tests
// of the frontends use a fake.
//
// Threading: every method may be called from any thread, concurrently. Methods that take a
// callback return at once and call it exactly once, possibly before they return, possibly on
// another thread; callbacks must not block (they run on the core's worker threads).
//
// Errors use the Status codes with these meanings on the wire (HTTP status / gRPC code):
//   kInvalidArgument 400 / INVALID_ARGUMENT    bad request (shape, dtype, data size, fields)
//   kNotFound        404 / NOT_FOUND           unknown model or version
//   kResourceExhausted 429 / RESOURCE_EXHAUSTED over a limit (in-flight, bytes): retry later
//   kUnavailable     503 / UNAVAILABLE         not ready, queue full, draining: retry later
//   kDeadlineExceeded 504 / DEADLINE_EXCEEDED  the request's timeout passed while it waited
//   kCancelled       499 / CANCELLED           the client went away
//   kUnimplemented   501 / UNIMPLEMENTED
//   kFailedPrecondition 400 / FAILED_PRECONDITION
//   kInternal        500 / INTERNAL
// For 429 and 503 the frontends send Retry-After (REST header; gRPC trailing metadata
// "retry-after") with RetryAfterSeconds().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/adaptive_control.h"
#include "serve/infer_request.h"

namespace inferloop::serve {

// Seconds a client should wait before retrying a 429/503.
inline int RetryAfterSeconds() { return 1; }

struct ServerMetadata {
  std::string name;     // "inferloop"
  std::string version;  // inferloop's version
  std::vector<std::string> extensions;
};

struct TensorMetadata {
  std::string name;
  std::string datatype;        // KServe v2 datatype ("FP32", "BYTES", ...)
  std::vector<int64_t> shape;  // -1 for variable sizes; starts with -1 when the model batches
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;  // the versions being served (for a specific version: it)
  std::string platform;               // "onnxruntime_onnx" (what Triton says for ONNX models)
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
  int64_t memory_bytes = 0;  // memory the version(s) hold: weights, arenas, caches
};

// One entry of the repository index (model repository extension).
struct ModelIndexEntry {
  std::string name;
  std::string version;  // empty for a model with no version loaded
  std::string state;    // "LOADING", "READY", "UNLOADING", "UNAVAILABLE"
  std::string reason;   // why UNAVAILABLE; progress while LOADING (e.g. "warming up 2/4")
};

// Cumulative count and total duration (statistics extension's StatisticDuration).
struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

struct BatchStat {
  uint64_t batch_size = 0;  // rows in the batch
  DurationStat compute_input, compute_infer, compute_output;
};

// Statistics of one model version (statistics extension).
struct ModelStatistics {
  std::string name;
  std::string version;
  uint64_t last_inference_ms = 0;  // ms since the epoch of the last completed request; 0: none
  uint64_t inference_count = 0;    // rows inferred (a batch of 4 rows counts 4)
  uint64_t execution_count = 0;    // batches executed
  // success and fail count every answered request (success includes response cache hits); queue
  // and compute_* only requests a model computed.
  DurationStat success, fail, queue, compute_input, compute_infer, compute_output;
  // Response cache (config.pbtxt response_cache { enable: true }; cached_model_version.h): hits
  // (time to look up and copy the stored response) and misses (time to look up and insert). A
  // hit adds to success, not to inference_count, execution_count, queue or compute_*.
  DurationStat cache_hit, cache_miss;
  std::vector<BatchStat> batch_stats;  // ascending by batch_size
  int64_t memory_bytes = 0;
};

// Per-request context a frontend fills in.
struct RequestContext {
  RequestContext() = default;
  // With the frontend's cancellation flag and arrival time (no flag made and dropped, no clock read).
  RequestContext(std::shared_ptr<std::atomic<bool>> cancelled_flag, std::chrono::steady_clock::time_point received_at)
      : cancelled(std::move(cancelled_flag)), received(received_at) {}

  // Set to true by the frontend when the client goes away (connection closed, gRPC call
  // cancelled); a request still queued is then dropped before it is computed.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // Whether the client went away (false when there is no flag).
  bool IsCancelled() const { return cancelled && cancelled->load(); }
  // When the frontend received the request (its end-to-end time starts here).
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
  // Size of the request as received (body bytes), for admission limits.
  size_t request_bytes = 0;
  // The protocol it came over, for metrics: "http" or "grpc".
  std::string protocol;
};

using InferCallback = std::function<void(Result<InferResponse>)>;
using StatusCallback = std::function<void(Status)>;

class InferenceService {
 public:
  virtual ~InferenceService() = default;

  // Live: the server's schedulers are making progress (a wedged worker makes this false).
  virtual bool Live() = 0;
  // Ready: every model the server was asked to load is loaded and warmed, and it is not
  // shutting down.
  virtual bool Ready() = 0;
  virtual ServerMetadata GetServerMetadata() = 0;

  // version empty: the server's choice (the highest version being served).
  // ModelReady: NotFound for an unknown model/version; false while it loads or is unavailable.
  virtual Result<bool> ModelReady(const std::string& model, const std::string& version) = 0;
  virtual Result<ModelMetadata> GetModelMetadata(const std::string& model, const std::string& version) = 0;
  // The model's completed configuration as JSON (Triton's /v2/models/<m>/config: the fields of
  // proto/model_config.proto, names as in the .proto).
  virtual Result<std::string> GetModelConfigJson(const std::string& model, const std::string& version) = 0;

  // Runs one inference. request.model_name/model_version say where it goes. The request
  // parameters "priority" (uint, 0 = the model's default) and "timeout" (microseconds) are
  // honoured as the model's configuration allows. Admission limits are checked before anything
  // is queued: over a limit the callback gets ResourceExhausted/Unavailable at once.
  virtual void Infer(InferRequest request, RequestContext context, InferCallback done) = 0;

  // Model repository extension. ready_only: only READY entries.
  virtual std::vector<ModelIndexEntry> RepositoryIndex(bool ready_only) = 0;
  // Loads (or reloads) a model from the repository; done when it is READY or failed to load.
  // FailedPrecondition when the model control mode does not allow it.
  virtual void LoadModel(const std::string& model, StatusCallback done) = 0;
  // Unloads every version of a model; done once in-flight requests finished and it is gone.
  virtual void UnloadModel(const std::string& model, StatusCallback done) = 0;

  // Statistics extension. model empty: every model; version empty: every version served.
  virtual Result<std::vector<ModelStatistics>> GetStatistics(const std::string& model, const std::string& version) = 0;

  // Prometheus text exposition format (version 0.0.4) of every metric.
  virtual std::string MetricsText() = 0;

  // Adaptive loop (docs/ADAPTIVE.md): the state of a version with precision variants (variants
  // prepared or skipped at load, knobs in force, the last decision's reason). NotFound for an
  // unknown model/version; FailedPrecondition for a version without variants (no adaptive { }).
  virtual Result<AdaptiveState> GetAdaptiveState(const std::string& model, const std::string& version) = 0;
  // Pins the version to `variant` (AdaptiveControl::Pin: InvalidArgument for a name that is not
  // one of its variants, FailedPrecondition for one that is not usable); variant "" frees it
  // (the controller chooses again). Errors as GetAdaptiveState otherwise.
  virtual Status PinVariant(const std::string& model, const std::string& version, const std::string& variant) = 0;
};

}  // namespace inferloop::serve
