// DynamicBatcher: one model version's scheduler. Requests wait in per-priority queues; worker
// threads (one per model instance) take batches of compatible requests and hand them to an
// executor that runs the model and answers each request.
//
// Contract:
// - Priority levels 1..priority_levels, 1 the highest; 0 at Enqueue means the default level.
//   A batch is filled from the highest level down, FIFO within a level, so a higher-priority
//   request overtakes queued lower-priority ones.
// - Requests batch together only when their batch_key is equal (same non-batch shapes and
//   dtypes); their rows add up to at most max_batch_size (max_batch_size 0: one request per batch).
// - A batch is dispatched when (reason) it is full (rows == max_batch_size), or it reaches a
//   preferred batch size and no more compatible requests are waiting, or the oldest request in
//   it has waited max_queue_delay ("delay"; with max_queue_delay 0 every request is dispatched as
//   soon as a worker is free). With no preferred sizes, "preferred" is never the reason.
// - Queue policy per level: max_queue_size bounds that level's queue (over it: Enqueue fails
//   with Unavailable at once); a timeout (the level's default, or a request's shorter one when
//   allow_timeout_override) is enforced while the request waits: action REJECT answers
//   DeadlineExceeded as soon as it passes, DELAY moves the request behind every other level
//   (it is still computed).
// - A request whose cancelled flag is set while it waits is answered Cancelled and never
//   computed.
// - Drain(): new requests are refused (Unavailable); queued ones are still computed; returns when
//   the queues are empty and no batch is running. The destructor drains, then joins the workers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/admission_control.h"
#include "serve/inference_service.h"

namespace inferloop::serve {

enum class TimeoutAction { kReject, kDelay };

struct QueuePolicy {
  uint32_t max_queue_size = 0;  // 0: unbounded (admission control bounds it globally)
  std::chrono::microseconds default_timeout{0};  // 0: none
  bool allow_timeout_override = false;
  TimeoutAction timeout_action = TimeoutAction::kReject;
};

struct BatcherOptions {
  int max_batch_size = 0;                  // 0: no batching
  std::vector<int> preferred_batch_sizes;  // each in [1, max_batch_size]
  std::chrono::microseconds max_queue_delay{0};
  uint32_t priority_levels = 1;         // >= 1
  uint32_t default_priority_level = 1;  // in [1, priority_levels]
  QueuePolicy default_policy;
  std::map<uint32_t, QueuePolicy> level_policies;  // overrides default_policy per level
  int instance_count = 1;                          // worker threads
  std::string name;  // for thread names and messages, e.g. "resnet50:1"
};

enum class DispatchReason { kFull, kPreferred, kDelay };
const char* DispatchReasonName(DispatchReason r);  // "full", "preferred", "delay"

// One queued request.
struct PendingRequest {
  InferRequest request;
  // The caller's context, moved in (a PendingRequest made by default holds no cancelled flag:
  // none is made only to be replaced).
  RequestContext context{nullptr, {}};
  InferCallback done;
  // Admission the request holds until it is answered (empty when the caller admits nothing).
  AdmissionTicket server_ticket, model_ticket;
  int64_t rows = 1;       // batch rows this request brings (1 when the model does not batch)
  std::string batch_key;  // requests batch together only with an equal key
  uint32_t priority = 0;  // 0: the default level
  std::optional<std::chrono::microseconds> timeout;  // the request's own ("timeout" parameter)
  // Set by the batcher:
  std::chrono::steady_clock::time_point enqueued;
  std::chrono::steady_clock::time_point dispatched;

  // Releases the tickets, then calls `done` (the frontend may hand the answer to its client
  // before `done` returns, so the admission is free by then); later calls release nothing more
  // and call nothing.
  void Answer(Result<InferResponse> result);
};

struct Batch {
  std::vector<std::unique_ptr<PendingRequest>> requests;  // in dispatch order
  int64_t rows = 0;
  DispatchReason reason = DispatchReason::kDelay;
};

// Observes the batcher, for metrics. Called on the batcher's threads (or Enqueue's caller);
// must be cheap and must not call back into the batcher.
class BatcherObserver {
 public:
  virtual ~BatcherObserver() = default;
  virtual void OnQueueDepth(int64_t depth) {}  // after every change
  virtual void OnDispatch(const Batch& batch) {}
  // A request answered without being computed (timeout, cancelled, shutdown).
  virtual void OnDropped(const PendingRequest& request, const Status& why) {}
};

// Runs a batch on instance `instance` (0-based) and calls every request's `done`. Called on
// that instance's worker thread, one batch at a time per instance.
using BatchExecutor = std::function<void(int instance, Batch batch)>;

class DynamicBatcher {
 public:
  // options must be valid (see BatcherOptions); observer may be null and must outlive this.
  DynamicBatcher(BatcherOptions options, BatchExecutor executor, BatcherObserver* observer);
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Queues a request. On refusal (bad priority: InvalidArgument; queue full or draining:
  // Unavailable) returns the error and does NOT call request->done; the caller answers.
  Status Enqueue(std::unique_ptr<PendingRequest> request);
  // The same, except that on refusal `request` is left with the caller (to answer it); on success
  // it is empty.
  Status TryEnqueue(std::unique_ptr<PendingRequest>& request);

  // Runs `request` at once on the calling thread when that changes no outcome: nothing is
  // queued (nothing to overtake or batch with), there is no batching delay to wait for
  // (max_queue_delay 0, or no batching), an instance is idle (the request takes it), and the
  // batcher is not draining. Returns true when it ran (the executor has answered it; `request`
  // is empty), false with `request` untouched otherwise (then Enqueue it). Saves the hand-off to
  // a worker thread: for models that take microseconds, that hand-off costs more than the model.
  // `run`, when given, runs the batch instead of the batcher's executor (e.g. one that skips
  // acquiring what the caller already holds).
  bool TryRunInline(std::unique_ptr<PendingRequest>& request, const BatchExecutor& run = nullptr);

  void Drain();

  // Changes the batching knobs while serving (the adaptive loop): preferred batch sizes (each in
  // [1, max_batch_size]; others are dropped), the batching delay, and how many of the
  // instance_count workers take batches (clamped to [1, instance_count]). Queued requests are
  // re-planned with the new knobs at once; a running batch is not interrupted.
  void SetTuning(std::vector<int> preferred_batch_sizes, std::chrono::microseconds max_queue_delay,
                 int active_instances);
  int active_instances() const;

  int64_t QueueDepth() const;
  int64_t RunningBatches() const;
  // How long the longest-running batch has been executing, or the oldest queued request has been
  // waiting with every instance idle; zero when neither. Liveness uses it to spot a wedged
  // worker.
  std::chrono::steady_clock::duration StallTime() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace inferloop::serve
