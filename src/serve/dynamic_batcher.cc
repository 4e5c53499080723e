// DynamicBatcher (dynamic_batcher.h).
//
// Dispatch algorithm (every step under one mutex; callbacks run without it):
//  - Queues: one FIFO per priority level plus a "delayed" FIFO behind every level (requests whose
//    DELAY-action timeout passed). "Line order" is level 1, 2, ..., then delayed, FIFO within each.
//  - An idle worker first sweeps the queues: cancelled requests are answered Cancelled, REJECT
//    requests past their deadline DeadlineExceeded, DELAY requests past theirs move to the back of
//    the delayed FIFO. A separate timer thread does the same sweep at the earliest deadline (and
//    polls cancellation every kCancelPoll while anything waits), so expiry is noticed even while
//    every instance is busy.
//  - The head of the line (the first request in line order) decides the batch key. Walking the
//    line in order, requests with that key join while their rows fit in max_batch_size; the walk
//    stops at the first compatible request that does not fit (so compatible requests keep their
//    order). Requests with other keys keep their places.
//  - The candidate batch is dispatched when it is full (rows == max_batch_size, max_batch_size 0,
//    or the next compatible request in line does not fit: it cannot grow), else when its rows are
//    a preferred size (every compatible waiting request is in it by construction), else when its
//    oldest request has waited max_queue_delay, or the batcher is draining (nothing more can
//    come; the reason is then "delay"). Otherwise the worker waits for a new request, a sweep
//    that changed the queues, or the delay to pass.
//  - StallTime: the longest-running batch's age, else (no batch running) how long the oldest
//    queued request has waited since every instance went idle.
#include "serve/dynamic_batcher.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace inferloop::serve {

const char* DispatchReasonName(DispatchReason r) {
  switch (r) {
    case DispatchReason::kFull:
      return "full";
    case DispatchReason::kPreferred:
      return "preferred";
    case DispatchReason::kDelay:
      return "delay";
  }
  return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;

// How often the timer thread looks for cancelled requests while anything waits (cancellation
// sets a flag and does not notify the batcher).
constexpr auto kCancelPoll = std::chrono::milliseconds(20);
// Longer delays and timeouts are clamped to this, so deadlines never overflow the clock.
constexpr std::chrono::microseconds kMaxWait = std::chrono::hours(24 * 365);

struct Entry {
  std::unique_ptr<PendingRequest> req;
  std::optional<Clock::time_point> deadline;  // none: no timeout (or already delayed)
  TimeoutAction action = TimeoutAction::kReject;
};

struct Dropped {
  std::unique_ptr<PendingRequest> req;
  Status why;
};

void NameThisThread(const std::string& name, int instance) {
#if defined(__linux__)
  // Linux thread names hold 15 characters.
  std::string n = "ilb" + std::to_string(instance) + ":" + name;
  if (n.size() > 15) n.resize(15);
  pthread_setname_np(pthread_self(), n.c_str());
#else
  (void)name;
  (void)instance;
#endif
}

}  // namespace

struct DynamicBatcher::State {
  BatcherOptions options;
  BatchExecutor executor;
  BatcherObserver* observer = nullptr;

  mutable std::mutex mu;
  std::condition_variable work_cv;   // workers: queues changed, stopping
  std::condition_variable timer_cv;  // timer thread: queues changed, stopping
  std::condition_variable idle_cv;   // Drain: queues emptied / a batch finished

  std::vector<std::deque<Entry>> levels;  // index level-1
  std::deque<Entry> delayed;              // behind every level
  int64_t depth = 0;
  int64_t running = 0;
  std::vector<std::optional<Clock::time_point>> batch_started;  // per instance
  std::vector<bool> inline_claimed;  // per instance: a caller thread runs a batch on it (TryRunInline)
  bool timer_idle = false;           // the timer thread waits with no deadline (queues were empty)
  int inline_running = 0;            // instances claimed by TryRunInline now
  int active_instances = 1;          // workers 0..active_instances-1 take batches (SetTuning)
  Clock::time_point all_idle_since = Clock::now();
  bool draining = false;
  bool stopping = false;

  std::vector<std::thread> workers;
  std::thread timer;

  const QueuePolicy& PolicyFor(uint32_t level) const {
    auto it = options.level_policies.find(level);
    return it == options.level_policies.end() ? options.default_policy : it->second;
  }

  void NotifyDepth() {
    if (observer) observer->OnQueueDepth(depth);
  }

  // Visits every queue in line order.
  template <typename F>
  void ForEachQueue(F&& f) {
    for (auto& q : levels) f(q);
    f(delayed);
  }

  // Removes cancelled and REJECT-expired entries into `out`, moves DELAY-expired ones to the
  // delayed queue. Returns the earliest remaining deadline. Caller holds mu.
  std::optional<Clock::time_point> Sweep(Clock::time_point now, std::vector<Dropped>& out) {
    std::optional<Clock::time_point> next;
    std::vector<Entry> moved;
    ForEachQueue([&](std::deque<Entry>& q) {
      for (auto it = q.begin(); it != q.end();) {
        Entry& e = *it;
        if (e.req->context.IsCancelled()) {
          out.push_back({std::move(e.req), Status(StatusCode::kCancelled, "request cancelled while queued")});
          it = q.erase(it);
          continue;
        }
        if (e.deadline && now >= *e.deadline) {
          if (e.action == TimeoutAction::kReject) {
            out.push_back({std::move(e.req), Status(StatusCode::kDeadlineExceeded,
                                                    "request timed out after waiting in the queue of " +
                                                        options.name)});
            it = q.erase(it);
            continue;
          }
          if (&q != &delayed) {
            e.deadline.reset();
            moved.push_back(std::move(e));
            it = q.erase(it);
            continue;
          }
          e.deadline.reset();
        }
        if (e.deadline && (!next || *e.deadline < *next)) next = e.deadline;
        ++it;
      }
    });
    for (auto& e : moved) delayed.push_back(std::move(e));
    if (!out.empty()) {
      depth -= static_cast<int64_t>(out.size());
      NotifyDepth();
      work_cv.notify_all();
      idle_cv.notify_all();
    } else if (!moved.empty()) {
      work_cv.notify_all();
    }
    return next;
  }

  // Answers dropped requests. Caller must NOT hold mu.
  void Answer(std::vector<Dropped>& dropped) {
    for (auto& d : dropped) {
      if (observer) observer->OnDropped(*d.req, d.why);
      d.req->Answer(Result<InferResponse>(d.why));
    }
    dropped.clear();
  }

  bool Empty() const { return depth == 0; }

  struct Candidate {
    std::vector<std::pair<std::deque<Entry>*, size_t>> picks;  // queue, index
    int64_t rows = 0;
    bool full = false;
    Clock::time_point oldest = Clock::time_point::max();
  };

  // The batch the head of the line would take now. Queues must be non-empty.
  Candidate Plan() {
    Candidate c;
    const std::string* key = nullptr;
    const int64_t max = options.max_batch_size;
    bool stop = false;
    ForEachQueue([&](std::deque<Entry>& q) {
      for (size_t i = 0; i < q.size() && !stop; ++i) {
        const PendingRequest& r = *q[i].req;
        if (!key) {
          key = &r.batch_key;
        } else if (r.batch_key != *key) {
          continue;
        }
        if (max <= 0) {
          if (!c.picks.empty()) {
            stop = true;
            break;
          }
        } else if (c.rows + r.rows > max) {
          c.full = true;  // cannot grow without reordering compatible requests
          stop = true;
          break;
        }
        c.picks.emplace_back(&q, i);
        c.rows += r.rows;
        c.oldest = std::min(c.oldest, r.enqueued);
        if (max <= 0) {
          stop = true;
          break;
        }
      }
    });
    if (max <= 0 || c.rows == max) c.full = true;
    return c;
  }

  bool IsPreferred(int64_t rows) const {
    const auto& p = options.preferred_batch_sizes;
    return std::find(p.begin(), p.end(), rows) != p.end();
  }

  // Takes the candidate's requests out of the queues. Caller holds mu.
  Batch Take(Candidate& c, DispatchReason reason, Clock::time_point now) {
    Batch b;
    b.rows = c.rows;
    b.reason = reason;
    for (auto& [q, i] : c.picks) {
      b.requests.push_back(std::move((*q)[i].req));
      b.requests.back()->dispatched = now;
    }
    ForEachQueue([](std::deque<Entry>& q) {
      q.erase(std::remove_if(q.begin(), q.end(), [](const Entry& e) { return e.req == nullptr; }), q.end());
    });
    depth -= static_cast<int64_t>(b.requests.size());
    NotifyDepth();
    return b;
  }

  void WorkerLoop(int instance) {
    NameThisThread(options.name, instance);
    std::unique_lock<std::mutex> lock(mu);
    std::vector<Dropped> dropped;
    for (;;) {
      Clock::time_point now = Clock::now();
      Sweep(now, dropped);
      if (!dropped.empty()) {
        lock.unlock();
        Answer(dropped);
        lock.lock();
        continue;
      }
      if (Empty()) {
        if (stopping) return;
        work_cv.wait(lock);
        continue;
      }
      if (inline_claimed[static_cast<size_t>(instance)] || instance >= active_instances) {
        // A caller runs on this instance now, or the instance is switched off (SetTuning).
        work_cv.wait(lock);
        continue;
      }
      Candidate c = Plan();
      std::optional<DispatchReason> reason;
      if (c.full) {
        reason = DispatchReason::kFull;
      } else if (IsPreferred(c.rows)) {
        reason = DispatchReason::kPreferred;
      } else if (draining || stopping || now - c.oldest >= options.max_queue_delay) {
        reason = DispatchReason::kDelay;
      }
      if (!reason) {
        work_cv.wait_until(lock, c.oldest + options.max_queue_delay);
        continue;
      }
      Batch batch = Take(c, *reason, now);
      ++running;
      batch_started[instance] = now;
      lock.unlock();
      if (observer) observer->OnDispatch(batch);
      executor(instance, std::move(batch));
      lock.lock();
      --running;
      batch_started[instance].reset();
      if (running == 0) all_idle_since = Clock::now();
      idle_cv.notify_all();
    }
  }

  void TimerLoop() {
    NameThisThread(options.name, -1);
    std::unique_lock<std::mutex> lock(mu);
    std::vector<Dropped> dropped;
    for (;;) {
      std::optional<Clock::time_point> next = Sweep(Clock::now(), dropped);
      if (!dropped.empty()) {
        lock.unlock();
        Answer(dropped);
        lock.lock();
        continue;
      }
      if (stopping) return;
      if (Empty()) {
        timer_idle = true;
        timer_cv.wait(lock);
        timer_idle = false;
      } else {
        Clock::time_point until = Clock::now() + kCancelPoll;
        if (next && *next < until) until = *next;
        timer_cv.wait_until(lock, until);
      }
    }
  }
};

DynamicBatcher::DynamicBatcher(BatcherOptions options, BatchExecutor executor, BatcherObserver* observer)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  if (s.options.priority_levels < 1) s.options.priority_levels = 1;
  if (s.options.default_priority_level < 1 || s.options.default_priority_level > s.options.priority_levels) {
    s.options.default_priority_level = 1;
  }
  if (s.options.instance_count < 1) s.options.instance_count = 1;
  s.options.max_queue_delay = std::clamp(s.options.max_queue_delay, std::chrono::microseconds(0), kMaxWait);
  s.executor = std::move(executor);
  s.observer = observer;
  s.levels.resize(s.options.priority_levels);
  s.batch_started.resize(static_cast<size_t>(s.options.instance_count));
  s.inline_claimed.assign(static_cast<size_t>(s.options.instance_count), false);
  s.active_instances = s.options.instance_count;
  s.timer = std::thread([&s] { s.TimerLoop(); });
  for (int i = 0; i < s.options.instance_count; ++i) {
    s.workers.emplace_back([&s, i] { s.WorkerLoop(i); });
  }
}

DynamicBatcher::~DynamicBatcher() {
  Drain();
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
  }
  s.work_cv.notify_all();
  s.timer_cv.notify_all();
  for (auto& w : s.workers) w.join();
  s.timer.join();
  // Workers only stop with empty queues; answer anything left anyway, so no callback is lost.
  std::vector<Dropped> left;
  s.ForEachQueue([&](std::deque<Entry>& q) {
    for (auto& e : q) left.push_back({std::move(e.req), Status::Unavailable(s.options.name + " is shutting down")});
    q.clear();
  });
  if (!left.empty()) {
    s.depth = 0;
    s.NotifyDepth();
    s.Answer(left);
  }
}

void PendingRequest::Answer(Result<InferResponse> result) {
  server_ticket.Release();
  model_ticket.Release();
  if (!done) return;
  InferCallback answer = std::move(done);
  done = nullptr;
  answer(std::move(result));
}

Status DynamicBatcher::Enqueue(std::unique_ptr<PendingRequest> request) { return TryEnqueue(request); }

Status DynamicBatcher::TryEnqueue(std::unique_ptr<PendingRequest>& request) {
  State& s = *state_;
  if (!request) return Status::InvalidArgument("no request to queue");
  const uint32_t level = request->priority == 0 ? s.options.default_priority_level : request->priority;
  if (level > s.options.priority_levels) {
    return Status::InvalidArgument("priority " + std::to_string(request->priority) + " is out of range: " +
                                   s.options.name + " has priority levels 1.." +
                                   std::to_string(s.options.priority_levels) + " (0 for the default)");
  }
  if (request->rows < 1) {
    return Status::InvalidArgument("a request must bring at least one batch row, got " + std::to_string(request->rows));
  }
  if (s.options.max_batch_size > 0 && request->rows > s.options.max_batch_size) {
    return Status::InvalidArgument("request batch size " + std::to_string(request->rows) + " exceeds " +
                                   s.options.name + "'s max_batch_size " + std::to_string(s.options.max_batch_size));
  }
  const QueuePolicy& policy = s.PolicyFor(level);
  bool wake_timer = false, wake_all = false;
  std::chrono::microseconds timeout = policy.default_timeout;
  if (policy.allow_timeout_override && request->timeout && request->timeout->count() > 0 &&
      (timeout.count() <= 0 || *request->timeout < timeout)) {
    timeout = *request->timeout;
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.draining || s.stopping) return Status::Unavailable(s.options.name + " is draining: not accepting requests");
    auto& q = s.levels[level - 1];
    if (policy.max_queue_size > 0 && q.size() >= policy.max_queue_size) {
      return Status::Unavailable("the queue of " + s.options.name + " priority level " + std::to_string(level) +
                                 " is full (" + std::to_string(policy.max_queue_size) + " requests)");
    }
    Entry e;
    e.req = std::move(request);
    e.req->enqueued = Clock::now();
    if (timeout.count() > 0) e.deadline = e.req->enqueued + std::min(timeout, kMaxWait);
    e.action = policy.timeout_action;
    const bool has_deadline = e.deadline.has_value();
    q.push_back(std::move(e));
    ++s.depth;
    s.NotifyDepth();
    // The timer needs waking only from its idle wait or for a deadline (it polls every
    // kCancelPoll while anything waits): one futex wake less per request.
    wake_timer = s.timer_idle || has_deadline;
    wake_all = s.inline_running > 0;
  }
  // One worker is enough for one new request (a busy worker looks at the queues again when its
  // batch is done) - unless an instance is claimed by an inline run: its worker would swallow
  // the wake-up, so then every worker is woken.
  if (wake_all) {
    s.work_cv.notify_all();
  } else {
    s.work_cv.notify_one();
  }
  if (wake_timer) s.timer_cv.notify_one();
  return Status::Ok();
}

bool DynamicBatcher::TryRunInline(std::unique_ptr<PendingRequest>& request, const BatchExecutor& run) {
  State& s = *state_;
  if (!request || request->rows < 1) return false;
  if (s.options.max_batch_size > 0 && request->rows > s.options.max_batch_size) return false;
  const uint32_t level = request->priority == 0 ? s.options.default_priority_level : request->priority;
  if (level > s.options.priority_levels) return false;
  if (request->context.IsCancelled()) return false;
  size_t slot = 0;
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.options.max_queue_delay.count() != 0 && s.options.max_batch_size > 0) return false;
    if (s.draining || s.stopping || s.depth != 0 || s.running >= s.active_instances) return false;
    const size_t active = static_cast<size_t>(s.active_instances);
    while (slot < active && (s.batch_started[slot] || s.inline_claimed[slot])) ++slot;
    if (slot == active) return false;
    s.inline_claimed[slot] = true;
    s.batch_started[slot] = now;
    ++s.running;
    ++s.inline_running;
  }
  Batch batch;
  batch.rows = request->rows;
  batch.reason = DispatchReason::kDelay;  // nothing to wait for: dispatched at once
  request->enqueued = now;
  request->dispatched = now;
  batch.requests.push_back(std::move(request));
  if (s.observer) s.observer->OnDispatch(batch);
  (run ? run : s.executor)(static_cast<int>(slot), std::move(batch));
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.inline_claimed[slot] = false;
    s.batch_started[slot].reset();
    --s.running;
    --s.inline_running;
    if (s.running == 0) s.all_idle_since = Clock::now();
    queued = s.depth > 0 || s.draining || s.stopping;
  }
  // Requests queued meanwhile may have waited for this instance. With none, an idle worker is
  // not woken for nothing (a futex wake and a context switch per inline request); one enqueued
  // after the check above wakes a worker itself.
  if (queued) s.work_cv.notify_all();
  s.idle_cv.notify_all();
  return true;
}

void DynamicBatcher::Drain() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.draining = true;
  s.work_cv.notify_all();  // batches waiting for their delay go now
  s.idle_cv.wait(lock, [&s] { return s.depth == 0 && s.running == 0; });
}

void DynamicBatcher::SetTuning(std::vector<int> preferred_batch_sizes, std::chrono::microseconds max_queue_delay,
                               int active_instances) {
  State& s = *state_;
  const int max = s.options.max_batch_size;
  preferred_batch_sizes.erase(std::remove_if(preferred_batch_sizes.begin(), preferred_batch_sizes.end(),
                                             [max](int b) { return b < 1 || (max > 0 && b > max) || max <= 0; }),
                              preferred_batch_sizes.end());
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.options.preferred_batch_sizes = std::move(preferred_batch_sizes);
    s.options.max_queue_delay = std::clamp(max_queue_delay, std::chrono::microseconds(0), kMaxWait);
    s.active_instances = std::clamp(active_instances, 1, s.options.instance_count);
  }
  s.work_cv.notify_all();
}

int DynamicBatcher::active_instances() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->active_instances;
}

int64_t DynamicBatcher::QueueDepth() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->depth;
}

int64_t DynamicBatcher::RunningBatches() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->running;
}

std::chrono::steady_clock::duration DynamicBatcher::StallTime() const {
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  const auto now = Clock::now();
  std::optional<Clock::time_point> oldest_batch;
  for (const auto& t : s.batch_started) {
    if (t && (!oldest_batch || *t < *oldest_batch)) oldest_batch = t;
  }
  if (oldest_batch) return now - *oldest_batch;
  if (s.depth == 0) return Clock::duration::zero();
  Clock::time_point oldest = Clock::time_point::max();
  for (const auto& q : s.levels) {
    for (const auto& e : q) oldest = std::min(oldest, e.req->enqueued);
  }
  for (const auto& e : s.delayed) oldest = std::min(oldest, e.req->enqueued);
  const auto since = std::max(oldest, s.all_idle_since);
  return now > since ? now - since : Clock::duration::zero();
}

}  // namespace inferloop::serve
