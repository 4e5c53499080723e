// ServedModelVersion: one version of one ONNX model (the onnx backend, src/backends/onnx), loaded and serving: its completed config, the
// session, the dynamic batcher with one worker per instance, its statistics, its memory use and
// its circuit breaker.
//
// Lifecycle: Load() creates the session, completes/checks the config and runs the config's
// warmup samples (so the version is warm before it takes traffic); Infer() validates a request
// against the config and queues it; Drain() refuses new requests and returns once every queued
// and running request has been answered. Destroying the last reference frees the session.
//
// Circuit breaker (circuit_breaker.h): after 5 consecutive batches failed by the model itself
// (internal errors, unsupported paths; not bad request data, timeouts or cancellations), the
// version stops taking requests (Unavailable, ready = false) for a backoff that starts at 1 s and
// doubles up to 60 s; then one batch is let through as a trial: success closes the breaker,
// failure reopens it with the longer backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "serve/admission_control.h"
#include "serve/batch_assembly.h"
#include "serve/circuit_breaker.h"
#include "serve/dynamic_batcher.h"
#include "serve/inference_service.h"
#include "serve/model_backend.h"
#include "serve/model_config.h"

namespace inferloop::serve {

struct VersionLoadOptions {
  SessionOptions session;
  AdmissionLimits limits;  // per model version (from the CLI); 0 = unlimited
  // Called with human-readable progress while loading ("creating session", "warmup 2/4").
  std::function<void(const std::string&)> progress;
  std::shared_ptr<VersionMetricsSink> metrics;  // may be null
  // Shared by every version of a server: how many caller threads may run a request inline at
  // once (see DynamicBatcher::TryRunInline; only for versions whose batches take under
  // kInlineMaxExecution on average). Null or 0: never inline.
  std::shared_ptr<std::atomic<int>> inline_slots;
};

class ServedModelVersion final : public ModelVersion {
 public:
  // Requests of a version whose batches take less than this on average may run on the caller's
  // (io) thread when nothing is queued and an instance is idle.
  static constexpr std::chrono::microseconds kInlineMaxExecution{100};

  // `partial_config`: as parsed from config.pbtxt (or only the name); completed from the model.
  // `model_dir`: DIR/<model>, where warmup input files live (<model_dir>/warmup/).
  static Result<std::shared_ptr<ServedModelVersion>> Load(const std::string& model_name, int64_t version,
                                                          const std::string& model_path,
                                                          const std::string& model_dir,
                                                          const ModelConfig& partial_config,
                                                          VersionLoadOptions options);
  ~ServedModelVersion() override;

  // Validates and queues; every outcome goes to `done` (exactly once, possibly before return),
  // and the arguments are consumed. Exception: when this version is draining (being replaced
  // or unloaded) it returns false and consumes nothing, so the caller can send the request to
  // the version that replaces it.
  bool Infer(InferRequest&& request, RequestContext&& context, InferCallback&& done, AdmissionTicket&& server_ticket) override;

  void Drain() override;

  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const ModelConfig& config() const override { return config_; }
  // The precision its session runs at (SessionOptions::precision resolved; config.pbtxt's
  // parameter "precision" overrides the server's default).
  Precision precision() const { return session_->precision(); }
  ModelMetadata Metadata() const override;
  ModelStatistics Statistics() const override;
  // Bytes of resident memory this version added when it loaded (measured around the load,
  // which the manager serializes), plus what its arenas hold now.
  int64_t MemoryBytes() const override;
  // Ready: loaded, not draining, circuit breaker closed.
  bool Ready() const override;
  std::string NotReadyReason() const override;
  std::chrono::steady_clock::duration StallTime() const override;
  int64_t QueueDepth() const override;
  // Session::Trim: idle arenas, scratch and cached shape plans.
  void ReleaseIdleMemory() override;

  // Internal: use Load().
  ServedModelVersion(std::string name, int64_t version);

 private:
  struct Stats;
  struct GroupTimes;
  class Observer;
  // Runs a batch the batcher dispatched on `instance`: answers cancelled requests, runs the rest
  // as one group, and when the group fails with INVALID_ARGUMENT runs each request alone.
  void ExecuteBatch(int instance, Batch batch);
  void AnswerCancelled(Batch& batch);
  void RunEachAlone(int instance, Batch& batch, std::chrono::steady_clock::time_point dispatched);
  // Assembles, runs, splits and answers batch.requests[members]; an error answers nobody.
  Status RunGroup(int instance, Batch& batch, const std::vector<size_t>& members);
  Status RunModel(int instance, const std::vector<NamedValue>& inputs);
  void RecordBatch(int64_t rows, const GroupTimes& t);
  void Respond(PendingRequest& p, const std::vector<Tensor>& outputs, const GroupTimes& t);
  void Finish(PendingRequest& p, Result<InferResponse> result, std::chrono::nanoseconds compute);
  // Counts a request answered with `why` without being computed (stats and metrics).
  void RecordUnanswered(const Status& why, std::chrono::steady_clock::time_point received,
                        std::chrono::nanoseconds queued);

  const std::string name_;
  const int64_t version_;
  std::string model_dir_;
  ModelConfig config_;
  std::unique_ptr<Session> session_;
  BatchInputLayout layout_;                // inputs (config order), reshapes, batch buckets
  std::vector<std::string> output_names_;  // config order
  // Per batcher instance: the last run's outputs, reused by the next run (Session::RunInto).
  std::vector<std::vector<NamedValue>> run_outputs_;
  std::shared_ptr<AdmissionGate> gate_;
  std::shared_ptr<VersionMetricsSink> metrics_;
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<DynamicBatcher> batcher_;
  std::unique_ptr<Stats> stats_;
  int64_t load_rss_bytes_ = 0;
  std::shared_ptr<std::atomic<int>> inline_slots_;
  std::atomic<int64_t> mean_execution_ns_{INT64_MAX};  // moving average of batch execution time
  std::shared_mutex drain_mu_;
  std::atomic<bool> draining_{false};

  CircuitBreaker breaker_;
};

}  // namespace inferloop::serve
