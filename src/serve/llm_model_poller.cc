#include "serve/llm_model_poller.h"

#include <set>
#include <utility>

#include "serve/model_repository_layout.h"

namespace inferloop::serve {

LlmModelPoller::LlmModelPoller(LlmTextService& service, std::string repository, EventLog* log)
    : service_(service), repository_(std::move(repository)), log_(log) {}

LlmModelPoller::~LlmModelPoller() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LlmModelPoller::Poll() {
  std::set<std::string> present;
  for (const auto& [name, path] : ScanLlmModels(repository_)) {
    present.insert(name);
    const std::string fp = path + "|" + FileStamp(path);
    auto it = seen_.find(name);
    if (it != seen_.end() && it->second.fingerprint == fp) continue;
    const bool reload = it != seen_.end() && it->second.serving;
    if (log_) log_->Info("llm_model_loading", {{"model", name}, {"path", path}});
    const auto t0 = std::chrono::steady_clock::now();
    Seen& seen = seen_[name];
    seen.fingerprint = fp;  // a failed file is not retried until it changes
    if (Status st = service_.LoadModel(name, path); !st.ok()) {
      if (log_) {
        log_->Error("llm_model_load_failed",
                    {{"model", name}, {"path", path}, {"reason", st.message()},
                     {"serving", seen.serving ? "the previous file" : "nothing"}});
      }
      continue;
    }
    seen.serving = true;
    auto engine = service_.Engine(name);
    if (log_ && engine) {
      log_->Info("llm_model_loaded",
                 {{"model", name},
                  {"path", path},
                  {"reload", reload ? "true" : "false"},
                  {"seconds", std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())},
                  {"kv_blocks", std::to_string(engine->kv_blocks())},
                  {"kv_block_tokens", std::to_string(engine->options().block_tokens)},
                  {"kv_type", llm::KvTypeName(engine->options().kv_type)}});
    }
  }
  for (auto it = seen_.begin(); it != seen_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    if (it->second.serving) {
      if (log_) log_->Info("llm_model_unloading", {{"model", it->first}, {"reason", "removed from the repository"}});
      (void)service_.UnloadModel(it->first);
    }
    it = seen_.erase(it);
  }
}

void LlmModelPoller::Start(std::chrono::milliseconds interval) {
  thread_ = std::thread([this, interval] {
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu_);
        if (cv_.wait_for(l, interval, [&] { return stopping_; })) return;
      }
      Poll();
    }
  });
}

}  // namespace inferloop::serve
