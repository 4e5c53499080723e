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
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "serve/adaptive_config.h"
#include "serve/admission_control.h"
#include "serve/batch_assembly.h"
#include "serve/circuit_breaker.h"
#include "serve/cpu_share_scheduler.h"
#include "serve/dynamic_batcher.h"
#include "serve/inference_service.h"
#include "serve/load_window.h"
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
  // Shared by every version of a server (see VersionLoadRequest::cpu_share); null: off. The
  // version registers with its config's adaptive { cpu_share } and holds a slot while a batch runs.
  std::shared_ptr<CpuShareScheduler> cpu_share;
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
  // Heap bytes this version's load kept (HeapBytesInUse around the load, which the manager
  // serializes: weights, packed weights, plans), plus what its arenas hold now.
  int64_t MemoryBytes() const override;
  // Ready: loaded, not draining, circuit breaker closed.
  bool Ready() const override;
  std::string NotReadyReason() const override;
  std::chrono::steady_clock::duration StallTime() const override;
  int64_t QueueDepth() const override;
  // Session::Trim of every variant: idle arenas, scratch and cached shape plans.
  void ReleaseIdleMemory() override;

  // --- For the adaptive loop (control/adaptive_loop.h, docs/ADAPTIVE.md) ---
  // Variant 0 is the version's own session; AddVariant adds a session of the same model at
  // another precision (`memory_bytes`: what creating it added to the process). Its inputs and
  // outputs must be the config's (InvalidArgument otherwise). Call before the version serves.
  Status AddVariant(std::string name, std::unique_ptr<Session> session, int64_t memory_bytes);
  int variant_count() const { return static_cast<int>(variants_.size()); }
  const std::string& variant_name(int i) const { return variants_[static_cast<size_t>(i)].name; }
  Session& variant_session(int i) { return i == 0 ? *session_ : *variants_[static_cast<size_t>(i)].session; }
  // Which variant new batches run on (clamped to the variants there are). Thread-safe.
  void SetVariant(int i);
  int active_variant() const { return active_variant_.load(std::memory_order_relaxed); }
  // Batching knobs while serving (DynamicBatcher::SetTuning). Thread-safe.
  void SetBatching(std::vector<int> preferred_batch_sizes, std::chrono::microseconds max_queue_delay, int instances);
  int instance_capacity() const { return instance_capacity_; }  // batcher workers there are
  // The config's adaptive block, checked and resolved when the version loaded.
  const AdaptiveObjectives& objectives() const { return objectives_; }
  LoadWindow& load_window() { return load_window_; }
  // The adaptive loop's view (null: none), owned by this version.
  void SetAdaptiveControl(std::unique_ptr<AdaptiveControl> control) { adaptive_ = std::move(control); }
  AdaptiveControl* Adaptive() override { return adaptive_.get(); }

  // Internal: use Load().
  ServedModelVersion(std::string name, int64_t version);

 private:
  struct Stats;
  struct GroupTimes;
  class Observer;
  // Runs a batch the batcher dispatched on `instance`: answers cancelled requests, runs the rest
  // as one group, and when the group fails with INVALID_ARGUMENT runs each request alone.
  void ExecuteBatch(int instance, Batch batch);
  // A batch from the batcher's worker: waits for a CPU-share slot (when sharing is on), then
  // ExecuteBatch; the wait counts as queueing.
  void ExecuteQueuedBatch(int instance, Batch batch);
  // Runs a fast request on the caller's thread (see Infer); false when it did not run.
  bool TryRunInline(std::unique_ptr<PendingRequest>& p);
  // Charges a released grant to the metrics.
  void ReportCpuShare(const CpuShareScheduler::Grant& grant, std::chrono::nanoseconds charged);
  void AnswerCancelled(Batch& batch);
  void RunEachAlone(int instance, Batch& batch, std::chrono::steady_clock::time_point dispatched);
  // Assembles, runs, splits and answers batch.requests[members]; an error answers nobody.
  // `start`: now (read once by the caller, the group's first phase starts with it).
  Status RunGroup(int instance, Batch& batch, const std::vector<size_t>& members, std::chrono::steady_clock::time_point start);
  Status RunModel(int instance, const std::vector<NamedValue>& inputs);
  void RecordBatch(int64_t rows, const GroupTimes& t);
  void Respond(PendingRequest& p, const std::vector<Tensor>& outputs, const GroupTimes& t);
  // `now`: when the answer was ready (the caller's last clock read), else read here.
  void Finish(PendingRequest& p, Result<InferResponse> result, std::chrono::nanoseconds compute,
              std::optional<std::chrono::steady_clock::time_point> now = std::nullopt);
  // Counts a request answered with `why` without being computed (stats and metrics).
  void RecordUnanswered(const Status& why, std::chrono::steady_clock::time_point received,
                        std::chrono::nanoseconds queued);

  struct Variant {
    std::string name;
    std::unique_ptr<Session> session;  // variant 0: session_ (not owned here)
    int64_t memory_bytes = 0;
  };
  Session& ActiveSession(int instance);

  const std::string name_;
  const int64_t version_;
  std::string model_dir_;
  ModelConfig config_;
  std::unique_ptr<Session> session_;
  std::vector<Variant> variants_;  // [0] = session_'s precision, no session of its own
  std::atomic<int> active_variant_{0};
  std::vector<int> run_variant_;  // per instance: the variant its run_outputs_ came from
  int instance_capacity_ = 1;
  LoadWindow load_window_;
  std::unique_ptr<AdaptiveControl> adaptive_;
  AdaptiveObjectives objectives_;
  BatchInputLayout layout_;                // inputs (config order), reshapes, batch buckets
  std::vector<std::string> output_names_;  // config order
  // Per batcher instance: the last run's outputs, reused by the next run (Session::RunInto).
  std::vector<std::vector<NamedValue>> run_outputs_;
  // Per batcher instance (an instance runs one group at a time): the vectors a group's run goes
  // through, kept so that a run in steady state allocates none of them. They hold no tensor
  // between runs (RunGroup clears them), so run_outputs_' buffers stay free for RunInto.
  struct RunScratch {
    std::vector<size_t> members;
    std::vector<const InferRequest*> group;
    std::vector<int64_t> group_rows;
    AssembledBatch assembled;
    std::vector<NamedValue> inputs;
    std::vector<Tensor> out_tensors;
    std::vector<std::vector<Tensor>> per_request;
  };
  std::vector<RunScratch> run_scratch_;
  std::shared_ptr<AdmissionGate> gate_;
  std::shared_ptr<VersionMetricsSink> metrics_;
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<DynamicBatcher> batcher_;
  std::unique_ptr<Stats> stats_;
  int64_t load_heap_bytes_ = 0;  // heap bytes the load kept (HeapBytesInUse before and after)
  std::shared_ptr<std::atomic<int>> inline_slots_;
  std::atomic<int64_t> mean_execution_ns_{INT64_MAX};  // moving average of batch execution time
  bool cpu_share_on_ = false;
  CpuShareScheduler::Flow cpu_flow_;  // registered when cpu_share_on_
  std::shared_mutex drain_mu_;
  std::atomic<bool> draining_{false};

  CircuitBreaker breaker_;
};

}  // namespace inferloop::serve
