// ModelManager: the models of one model repository and their lifecycle, for every kind of model
// (the backends of serve/model_backend.h: ONNX, GGUF, ensembles, processing steps).
//
// - Control modes: kNone loads every model at start and never changes; kPoll also rescans the
//   repository every poll_interval and loads added or changed models, unloads removed ones;
//   kExplicit loads only the startup list, then what Load()/Unload() ask for.
// - Loads run one at a time on the manager's loader thread (so each version's memory can be
//   measured around its load). A (re)load builds the new versions beside the serving ones; once
//   every one of them is loaded and warmed they take traffic in one swap, and the versions they
//   replace drain (queued and running requests finish) and are freed. A version that fails to
//   load leaves the one it would replace serving and says why in the index.
// - Find() hands out reference-counted versions, so a request keeps its version alive until it
//   is answered.
// - Idle models (docs/ADAPTIVE.md, driven by control/idle_policy.h): FindForRequest records when
//   each model was last used; UnloadIdle unloads a model but keeps it known (index: UNAVAILABLE,
//   "unloaded while idle ..."), and the next request for it loads it again on the loader thread
//   (LoadOnDemand: requests wait in a queue, no thread blocks; concurrent ones share one load).
//   A model unloaded by the user (Unload) is not loaded on demand.
// - Response cache: a version whose config says response_cache { enable: true } is wrapped in a
//   CachedModelVersion (cached_model_version.h) when it loads, so Find() (requests, and ensemble
//   steps through the resolver) hands out the wrapper. Without a cache (options.response_cache
//   null) such a model is served uncached, with one "response_cache_off" log line per load.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "serve/event_log.h"
#include "serve/inference_service.h"
#include "serve/model_backend.h"
#include "serve/model_repository_layout.h"
#include "serve/response_cache.h"

namespace inferloop::serve {

enum class ModelControlMode { kNone, kPoll, kExplicit };
Result<ModelControlMode> ParseModelControlMode(const std::string& s);  // "none" | "poll" | "explicit"

// What the idle policy sees of one model (ModelManager::Usage).
struct ModelUsage {
  std::string model;
  std::chrono::steady_clock::time_point last_used;  // its last request, or when it was loaded
  int64_t memory_bytes = 0;  // MemoryBytes() summed over its serving versions
  bool serving = false;      // it has a serving version
  bool hot = false;          // config.pbtxt adaptive { hot: true }: never unloaded
  bool needed = false;       // a serving model calls it (an ensemble step): never unloaded
};

// The index reason of a model the idle policy unloaded.
inline constexpr const char* kUnloadedWhileIdleReason = "unloaded while idle (memory budget); loads on the next request";

struct ModelManagerOptions {
  std::string repository;
  // The kinds of model served; the registry must outlive the manager. Required.
  std::shared_ptr<const BackendRegistry> backends;
  // Handed to backends that call other models (ensembles); may be null when none does.
  ModelResolver* resolver = nullptr;
  ModelControlMode mode = ModelControlMode::kNone;
  std::vector<std::string> startup_models;  // kExplicit: loaded at start ("*": all)
  std::chrono::milliseconds poll_interval{2000};
  SessionOptions session;
  AdmissionLimits per_model_limits;
  // Metrics for a version being loaded; may be empty.
  std::function<std::shared_ptr<VersionMetricsSink>(const std::string& model, int64_t version)> metrics_for;
  // Called after a version stops serving (for metrics cleanup); may be empty.
  std::function<void(const std::string& model, int64_t version)> on_version_removed;
  EventLog* log = nullptr;  // may be null
  // See VersionLoadRequest::inline_slots.
  std::shared_ptr<std::atomic<int>> inline_slots;
  // See VersionLoadRequest::cpu_share. Null: off.
  std::shared_ptr<CpuShareScheduler> cpu_share;
  // Idle policy hooks (metrics); may be empty. on_demand_loaded: the first waiting request's
  // extra wait.
  std::function<void(const std::string& model)> on_idle_unloaded;
  std::function<void(const std::string& model, std::chrono::nanoseconds waited)> on_demand_loaded;
  // The server's response cache, for models whose config enables it; null: none (they are
  // served uncached).
  std::shared_ptr<ResponseCache> response_cache;
};

class ModelManager {
 public:
  // Fails when the repository cannot be listed or no backend registry is given. Loads nothing
  // yet: call LoadStartupModels().
  static Result<std::unique_ptr<ModelManager>> Create(ModelManagerOptions options);
  ~ModelManager();  // stops polling, drains and frees every version
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // Loads the startup models (blocking) and starts polling in kPoll mode. Returns the first
  // error (every model is still tried); the server stays up and not ready then. In kExplicit
  // mode, models marked hot (config.pbtxt adaptive { hot: true }) load too.
  Status LoadStartupModels();

  // True when every model the server was asked to serve has a READY version.
  bool AllRequestedReady();

  // The version to run a request on; version "" = the highest serving one. NotFound for an
  // unknown model or version; Unavailable while it is loading or when it failed to load.
  Result<std::shared_ptr<ModelVersion>> Find(const std::string& model, const std::string& version);
  // Find for a request: the same, and the model counts as used now (ModelUsage::last_used).
  Result<std::shared_ptr<ModelVersion>> FindForRequest(const std::string& model, const std::string& version);
  using FoundCallback = std::function<void(Result<std::shared_ptr<ModelVersion>>)>;
  // For a request whose FindForRequest failed: false when `model` was not unloaded by the idle
  // policy (done is not called; answer the Find error). true: `done` is called exactly once
  // (possibly before return; else on the loader thread) with FindForRequest's answer once the
  // model is loaded again, or the load's error. Requests that arrive while it loads share the load.
  bool LoadOnDemand(const std::string& model, const std::string& version, FoundCallback done);
  // Unloads `model` for the idle policy (on the loader thread, after what is queued there): not
  // when it was used after `last_used_seen` (a request came since the policy looked), is hot, or
  // is not serving. It stays known (see kUnloadedWhileIdleReason) and loads on its next request.
  void UnloadIdle(const std::string& model, std::chrono::steady_clock::time_point last_used_seen);
  // Every known model's use and memory, for the idle policy.
  std::vector<ModelUsage> Usage();
  // Every serving version (of `model`, or of all models when empty).
  std::vector<std::shared_ptr<ModelVersion>> Serving(const std::string& model = "");

  // Model repository extension. Load/Unload: FailedPrecondition unless kExplicit.
  void Load(const std::string& model, StatusCallback done);
  void Unload(const std::string& model, StatusCallback done);
  std::vector<ModelIndexEntry> Index(bool ready_only);

  // Stops taking requests and drains every version (shutdown); blocking.
  void DrainAll();

  // The longest any version's scheduler has been stalled (see DynamicBatcher::StallTime).
  std::chrono::steady_clock::duration MaxStall();

  ModelControlMode mode() const { return options_.mode; }

 private:
  struct VersionStatus {
    std::string state;  // LOADING, READY, UNAVAILABLE, UNLOADING
    std::string reason;
  };
  struct ModelEntry {
    std::map<int64_t, std::shared_ptr<ModelVersion>> serving;
    std::map<int64_t, VersionStatus> versions;
    std::map<int64_t, std::string> version_fingerprints;  // of the files each serving version came from
    std::string config_fingerprint;
    std::string fingerprint;  // of the whole folder, as last seen by a (re)load or poll
    std::string model_reason;  // model-level problem (bad config), or "unloaded"
    bool loading = false;
    bool hot = false;  // its config says adaptive { hot: true } (as of its last load)
    std::chrono::steady_clock::time_point last_used;
    bool idle_unloaded = false;  // unloaded by UnloadIdle: the next request loads it
    struct Waiter {
      std::string version;
      FoundCallback done;
    };
    std::vector<Waiter> waiting;  // requests waiting for the on-demand load
    std::chrono::steady_clock::time_point first_waited;
  };

  explicit ModelManager(ModelManagerOptions options);
  // Runs on the loader thread.
  Status DoLoad(const std::string& model);
  // Find's lookup; caller holds mu_. record_use: a version found stamps the model's last use.
  Result<std::shared_ptr<ModelVersion>> FindLocked(const std::string& model, const std::string& version,
                                                   bool record_use);
  VersionLoadRequest MakeLoadRequest(const std::string& model, const std::string& dir, const ModelVersionFile& vf,
                                     const ModelConfig& config);
  // `loaded` wrapped in a CachedModelVersion when its config enables the response cache and the
  // server has one; as is otherwise. Errors: its version folder cannot be fingerprinted.
  Result<std::shared_ptr<ModelVersion>> WrapForResponseCache(std::shared_ptr<ModelVersion> loaded,
                                                             const VersionLoadRequest& request);
  // `forget`: the model left the repository; its entry goes before "model_unloaded" is logged,
  // so requests that follow the event get NotFound, not Unavailable.
  Status DoUnload(const std::string& model, const std::string& why, bool forget = false);
  // Loader thread: the on-demand load of an idle-unloaded model, then its waiting requests.
  void RunOnDemandLoad(const std::string& model);
  // Whether config.pbtxt of the folder says adaptive { hot: true }.
  bool ConfigSaysHot(const std::string& model);
  void Post(std::function<void()> task);
  void LoaderLoop();
  void PollLoop();
  void PollOnce();
  std::vector<std::string> ListModelFolders();
  // `names` reordered so that the models each calls (ModelBackend::Dependencies) load first.
  std::vector<std::string> DependenciesFirst(const std::vector<std::string>& names);
  std::string FolderFingerprint(const std::string& model);
  void LogInfo(const std::string& event, const EventLog::Fields& fields);
  void LogError(const std::string& event, const EventLog::Fields& fields);

  ModelManagerOptions options_;

  std::mutex mu_;  // guards models_, requested_
  std::map<std::string, ModelEntry> models_;
  std::set<std::string> requested_;

  std::mutex tasks_mu_;
  std::condition_variable tasks_cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread loader_;
  std::thread poller_;
};

}  // namespace inferloop::serve
