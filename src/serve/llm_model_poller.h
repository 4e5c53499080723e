// LlmModelPoller: keeps an LlmTextService in step with the GGUF models of a model repository
// (DIR/<model>/<version>/model.gguf, the highest version of each model; ScanLlmModels).
//
// Each Poll(): a model that is new, or whose file changed (another version folder became the
// highest, or the file's size or modification time changed: FileStamp), is loaded; a loaded one
// whose file stays the same is left alone; a model gone from the repository is unloaded. A
// reload or unload never drops a request (LlmTextService retires the old engine). A file that
// fails to load is logged ("llm_model_load_failed") and not retried until it changes; the
// version serving before keeps serving.
//
// Events: llm_model_loading, llm_model_loaded {reload: true|false}, llm_model_load_failed,
// llm_model_unloading (then the service's llm_model_draining / llm_model_unloaded).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "serve/event_log.h"
#include "serve/llm_text_service.h"

namespace inferloop::serve {

class LlmModelPoller {
 public:
  // `service` and `log` (may be null) must outlive the poller.
  LlmModelPoller(LlmTextService& service, std::string repository, EventLog* log);
  // Stops the polling thread (waiting for a load in progress to end).
  ~LlmModelPoller();
  LlmModelPoller(const LlmModelPoller&) = delete;
  LlmModelPoller& operator=(const LlmModelPoller&) = delete;

  // One scan of the repository, on the calling thread (loads block it). Not concurrently with
  // the polling thread: call before Start().
  void Poll();
  // Calls Poll() every `interval` on a thread of its own until destroyed.
  void Start(std::chrono::milliseconds interval);

 private:
  LlmTextService& service_;
  std::string repository_;
  EventLog* log_;
  // Per model: "path|stamp" of the file last tried (loaded, or failed), and whether it serves.
  struct Seen {
    std::string fingerprint;
    bool serving = false;
  };
  std::map<std::string, Seen> seen_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace inferloop::serve
