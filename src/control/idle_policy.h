// IdlePolicy: what the server does with models that get no traffic (docs/ADAPTIVE.md, "Idle").
//
// Every check_interval it looks at each model's last use and memory (serve::ModelManager::Usage):
// - a model idle for release_after gets ReleaseIdleMemory() on its serving versions (ONNX: idle
//   arenas, scratch and cached shape plans freed), once until it is used again;
// - when the serving models together hold more than memory_budget_bytes (MemoryBytes()), the
//   least recently used ones are unloaded (ModelManager::UnloadIdle) until they fit; such a model
//   stays known and loads again on its next request.
// Hot models (config.pbtxt adaptive { hot: true }) are never released or unloaded; a model that a
// serving model calls (an ensemble step) is never unloaded.
//
// The decision is DecideIdle, a pure function (no clock, no threads) so tests drive it directly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "inferloop/status.h"
#include "serve/event_log.h"
#include "serve/model_manager.h"

namespace inferloop::control {

struct IdlePolicyOptions {
  std::chrono::milliseconds release_after{30000};  // idle this long: release its memory; 0: never
  int64_t memory_budget_bytes = 0;                  // serving models' memory at most; 0: no budget
  std::chrono::milliseconds check_interval{1000};   // > 0
  // Whether anything is to be done at all (the server starts no policy thread otherwise).
  bool enabled() const { return release_after.count() > 0 || memory_budget_bytes > 0; }
};

// "1073741824", "512MiB", "2GiB", "64KiB" (also MB/GB/KB as the same binary units, and a
// trailing "B" alone); "0" means no budget. InvalidArgument, naming the text, otherwise
// (negative, fractional, unknown unit, overflow).
Result<int64_t> ParseMemorySize(const std::string& text);

// One model as the decision sees it.
struct IdleModelView {
  std::string model;
  double idle_seconds = 0;    // since its last use
  int64_t memory_bytes = 0;   // of its serving versions
  bool serving = false;
  bool hot = false;           // never released nor unloaded
  bool needed = false;        // called by a serving model: never unloaded
  bool released = false;      // already released since its last use
};

struct IdleDecision {
  std::vector<std::string> release;  // ReleaseIdleMemory on these models' versions
  std::vector<std::string> unload;   // least recently used first
  int64_t serving_bytes = 0;         // the serving models' memory before the decision
};

// Release: serving, not hot, not released, idle for at least release_after_seconds (> 0), and
// not being unloaded. Unload (budget > 0 and serving_bytes > budget): serving models that are
// neither hot nor needed, the longest idle first (ties: by name), until the rest fit; when even
// all of them do not make it fit, all of them.
IdleDecision DecideIdle(const std::vector<IdleModelView>& models, double release_after_seconds,
                        int64_t memory_budget_bytes);

class IdlePolicy {
 public:
  // Checks the options (InvalidArgument: negative release_after or budget, check_interval <= 0)
  // and starts the check thread. `models` (and `log`, which may be null) must outlive the policy.
  static Result<std::unique_ptr<IdlePolicy>> Start(serve::ModelManager& models, IdlePolicyOptions options,
                                                   serve::EventLog* log);
  ~IdlePolicy();  // stops the check thread (returns within one check)
  IdlePolicy(const IdlePolicy&) = delete;
  IdlePolicy& operator=(const IdlePolicy&) = delete;

  // One check now (the thread calls it every check_interval).
  void CheckOnce();

 private:
  IdlePolicy(serve::ModelManager& models, IdlePolicyOptions options, serve::EventLog* log);
  void Loop();

  serve::ModelManager& models_;
  const IdlePolicyOptions options_;
  serve::EventLog* log_;
  std::mutex check_mu_;  // one check at a time; guards released_at_
  // Per model: the last use its memory was released after (released until it is used again).
  std::map<std::string, std::chrono::steady_clock::time_point> released_at_;
  // Per model: unloads asked for and not done yet (their memory counts as gone), by last use seen.
  std::map<std::string, std::chrono::steady_clock::time_point> unloading_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace inferloop::control
