// Test harness for the DynamicBatcher: an executor that records batches and can be held (blocks
// inside the executor until released) so requests pile up deterministically, and done callbacks
// that count answers per request id.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/dynamic_batcher.h"

namespace inferloop::serve::testing {

constexpr auto kEventTimeout = std::chrono::seconds(10);

struct RecordedBatch {
  int instance = -1;
  std::vector<std::string> ids;
  int64_t rows = 0;
  DispatchReason reason = DispatchReason::kDelay;
  std::string key;
};

struct Answer {
  int calls = 0;
  StatusCode code = StatusCode::kOk;
  std::string message;
};

class Harness {
 public:
  // The executor: records the batch, blocks while held, then answers every request with OK
  // (response id = request id).
  BatchExecutor Executor() {
    return [this](int instance, Batch batch) {
      RecordedBatch rec;
      rec.instance = instance;
      rec.rows = batch.rows;
      rec.reason = batch.reason;
      for (const auto& r : batch.requests) {
        rec.ids.push_back(r->request.id);
        rec.key = r->batch_key;
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        batches_.push_back(rec);
        ++in_executor_;
        cv_.notify_all();
        cv_.wait(lock, [this] { return !held_; });
        --in_executor_;
      }
      for (auto& r : batch.requests) {
        InferResponse resp;
        resp.id = r->request.id;
        r->done(std::move(resp));
      }
    };
  }

  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }

  std::unique_ptr<PendingRequest> Make(const std::string& id, int64_t rows = 1, const std::string& key = "k",
                                       uint32_t priority = 0,
                                       std::optional<std::chrono::microseconds> timeout = std::nullopt) {
    auto p = std::make_unique<PendingRequest>();
    p->request.id = id;
    p->context.cancelled = std::make_shared<std::atomic<bool>>(false);  // as a frontend's context has
    p->rows = rows;
    p->batch_key = key;
    p->priority = priority;
    p->timeout = timeout;
    p->done = [this, id](Result<InferResponse> r) {
      std::lock_guard<std::mutex> lock(mu_);
      Answer& a = answers_[id];
      ++a.calls;
      a.code = r.ok() ? StatusCode::kOk : r.status().code();
      a.message = r.ok() ? r->id : r.status().message();
      cv_.notify_all();
    };
    return p;
  }

  // Waits (generously) until pred() holds under the harness lock; false on timeout.
  bool WaitFor(const std::function<bool()>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kEventTimeout, pred);
  }
  bool WaitInExecutor(int n) {
    return WaitFor([&] { return in_executor_ == n; });
  }
  bool WaitAnswered(const std::string& id) {
    return WaitFor([&] { return answers_.count(id) > 0; });
  }
  bool WaitAnsweredCount(size_t n) {
    return WaitFor([&] { return answers_.size() >= n; });
  }

  std::vector<RecordedBatch> Batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  std::map<std::string, Answer> Answers() {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_;
  }
  // Every id the executor saw, in dispatch order.
  std::vector<std::string> ComputedIds() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> ids;
    for (const auto& b : batches_) ids.insert(ids.end(), b.ids.begin(), b.ids.end());
    return ids;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  int in_executor_ = 0;
  std::vector<RecordedBatch> batches_;
  std::map<std::string, Answer> answers_;
};

// Records observer calls.
class RecordingObserver : public BatcherObserver {
 public:
  void OnQueueDepth(int64_t depth) override {
    std::lock_guard<std::mutex> lock(mu_);
    depths_.push_back(depth);
  }
  void OnDispatch(const Batch& batch) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++dispatches_;
  }
  void OnDropped(const PendingRequest& request, const Status& why) override {
    std::lock_guard<std::mutex> lock(mu_);
    dropped_.emplace_back(request.request.id, why.code());
  }
  std::vector<int64_t> depths() {
    std::lock_guard<std::mutex> lock(mu_);
    return depths_;
  }
  int dispatches() {
    std::lock_guard<std::mutex> lock(mu_);
    return dispatches_;
  }
  std::vector<std::pair<std::string, StatusCode>> dropped() {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> depths_;
  int dispatches_ = 0;
  std::vector<std::pair<std::string, StatusCode>> dropped_;
};

}  // namespace inferloop::serve::testing
