#include "control/idle_policy.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace inferloop::control {

using Clock = std::chrono::steady_clock;

Result<int64_t> ParseMemorySize(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("memory size '" + text + "': " + why +
                                   " (expected bytes, or a whole number with KiB, MiB or GiB, e.g. 512MiB)");
  };
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return bad(text.empty() ? "empty" : "not a whole number of bytes");
  std::string unit = text.substr(digits);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
  else return bad("unknown unit '" + text.substr(digits) + "'");
  if (digits > 18) return bad("too large");
  const int64_t n = std::stoll(text.substr(0, digits));
  if (n > (std::numeric_limits<int64_t>::max() >> shift)) return bad("too large");
  return n << shift;
}

IdleDecision DecideIdle(const std::vector<IdleModelView>& models, double release_after_seconds,
                        int64_t memory_budget_bytes) {
  IdleDecision d;
  std::vector<const IdleModelView*> candidates;
  for (const auto& m : models) {
    if (!m.serving) continue;
    d.serving_bytes += m.memory_bytes;
    if (!m.hot && !m.needed) candidates.push_back(&m);
  }
  if (memory_budget_bytes > 0 && d.serving_bytes > memory_budget_bytes) {
    std::sort(candidates.begin(), candidates.end(), [](const IdleModelView* a, const IdleModelView* b) {
      if (a->idle_seconds != b->idle_seconds) return a->idle_seconds > b->idle_seconds;
      return a->model < b->model;
    });
    int64_t left = d.serving_bytes;
    for (const IdleModelView* m : candidates) {
      if (left <= memory_budget_bytes) break;
      d.unload.push_back(m->model);
      left -= m->memory_bytes;
    }
  }
  if (release_after_seconds > 0) {
    for (const auto& m : models) {
      if (!m.serving || m.hot || m.released || m.idle_seconds < release_after_seconds) continue;
      if (std::find(d.unload.begin(), d.unload.end(), m.model) != d.unload.end()) continue;
      d.release.push_back(m.model);
    }
  }
  return d;
}

IdlePolicy::IdlePolicy(serve::ModelManager& models, IdlePolicyOptions options, serve::EventLog* log)
    : models_(models), options_(options), log_(log) {}

Result<std::unique_ptr<IdlePolicy>> IdlePolicy::Start(serve::ModelManager& models, IdlePolicyOptions options,
                                                      serve::EventLog* log) {
  if (options.release_after.count() < 0)
    return Status::InvalidArgument("idle policy: release_after must be >= 0 (0: never)");
  if (options.memory_budget_bytes < 0)
    return Status::InvalidArgument("idle policy: the memory budget must be >= 0 (0: none)");
  if (options.check_interval.count() <= 0)
    return Status::InvalidArgument("idle policy: the check interval must be > 0");
  std::unique_ptr<IdlePolicy> p(new IdlePolicy(models, options, log));
  p->thread_ = std::thread([raw = p.get()] { raw->Loop(); });
  return p;
}

IdlePolicy::~IdlePolicy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void IdlePolicy::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, options_.check_interval, [&] { return stopping_; })) return;
    }
    CheckOnce();
  }
}

void IdlePolicy::CheckOnce() {
  std::lock_guard<std::mutex> check(check_mu_);
  const auto now = Clock::now();
  const std::vector<serve::ModelUsage> usage = models_.Usage();
  std::map<std::string, Clock::time_point> last_used;
  std::vector<IdleModelView> views;
  for (const auto& u : usage) {
    last_used[u.model] = u.last_used;
    IdleModelView v;
    v.model = u.model;
    v.idle_seconds = std::chrono::duration<double>(now - u.last_used).count();
    v.memory_bytes = u.memory_bytes;
    v.serving = u.serving;
    v.hot = u.hot;
    v.needed = u.needed;
    auto r = released_at_.find(u.model);
    v.released = r != released_at_.end() && r->second == u.last_used;
    auto un = unloading_.find(u.model);
    if (un != unloading_.end()) {
      if (u.serving && un->second == u.last_used) v.serving = false;  // its unload is still queued
      else unloading_.erase(un);
    }
    views.push_back(std::move(v));
  }
  const IdleDecision d =
      DecideIdle(views, std::chrono::duration<double>(options_.release_after).count(), options_.memory_budget_bytes);
  for (const auto& m : d.release) {
    int64_t before = 0, after = 0;
    for (const auto& v : models_.Serving(m)) {
      before += v->MemoryBytes();
      v->ReleaseIdleMemory();
      after += v->MemoryBytes();
    }
    released_at_[m] = last_used[m];
    if (log_)
      log_->Info("model_idle_memory_released",
                 {{"model", m}, {"memory_bytes_before", std::to_string(before)}, {"memory_bytes_after", std::to_string(after)}});
  }
  if (!d.unload.empty() && log_) {
    std::string names;
    for (const auto& m : d.unload) names += (names.empty() ? "" : ",") + m;
    log_->Info("memory_budget_exceeded", {{"serving_bytes", std::to_string(d.serving_bytes)},
                                          {"budget_bytes", std::to_string(options_.memory_budget_bytes)},
                                          {"unloading", names}});
  }
  for (const auto& m : d.unload) {
    unloading_[m] = last_used[m];
    released_at_.erase(m);
    models_.UnloadIdle(m, last_used[m]);
  }
}

}  // namespace inferloop::control
