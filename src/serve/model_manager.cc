#include "serve/model_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <future>

#include "base/status_macros.h"
#include "serve/adaptive_config.h"
#include "serve/cached_model_version.h"
#include "serve/model_repository_layout.h"
#include "base/process_memory.h"

namespace inferloop::serve {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Size and modification time of every file of a version folder: a change reloads the version.
std::string VersionStamp(const std::string& version_dir) {
  std::string stamp;
  for (const auto& f : FilesIn(version_dir)) stamp += f + "=" + FileStamp(version_dir + "/" + f) + ";";
  return stamp;
}

// config.pbtxt says adaptive { hot: true } (a config the adaptive checks refuse is not hot).
bool SaysHot(const ModelConfig& config) {
  auto objectives = ReadAdaptiveObjectives(config);
  return objectives.ok() && objectives.value().hot;
}

}  // namespace

Result<ModelControlMode> ParseModelControlMode(const std::string& s) {
  if (s == "none") return ModelControlMode::kNone;
  if (s == "poll") return ModelControlMode::kPoll;
  if (s == "explicit") return ModelControlMode::kExplicit;
  return Status::InvalidArgument("model control mode '" + s + "': expected none, poll or explicit");
}

ModelManager::ModelManager(ModelManagerOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<ModelManager>> ModelManager::Create(ModelManagerOptions options) {
  std::error_code ec;
  if (options.backends == nullptr) return Status::InvalidArgument("the model manager needs a backend registry");
  if (!fs::is_directory(options.repository, ec))
    return Status::NotFound("model repository '" + options.repository + "' is not a readable folder");
  std::unique_ptr<ModelManager> m(new ModelManager(std::move(options)));
  m->loader_ = std::thread([p = m.get()] { p->LoaderLoop(); });
  return m;
}

ModelManager::~ModelManager() {
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    stopping_ = true;
  }
  tasks_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (loader_.joinable()) loader_.join();
  DrainAll();
  std::lock_guard<std::mutex> lock(mu_);
  models_.clear();
}

void ModelManager::LogInfo(const std::string& event, const EventLog::Fields& fields) {
  if (options_.log) options_.log->Info(event, fields);
}
void ModelManager::LogError(const std::string& event, const EventLog::Fields& fields) {
  if (options_.log) options_.log->Error(event, fields);
}

void ModelManager::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    tasks_.push_back(std::move(task));
  }
  tasks_cv_.notify_all();
}

void ModelManager::LoaderLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(tasks_mu_);
      tasks_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping with nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

std::vector<std::string> ModelManager::ListModelFolders() {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(options_.repository, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.empty() || n[0] == '.') continue;
    std::error_code ec2;
    if (it->is_directory(ec2)) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ModelManager::FolderFingerprint(const std::string& model) {
  const std::string dir = options_.repository + "/" + model;
  std::string fp = "config=" + FileStamp(dir + "/config.pbtxt");
  std::vector<std::string> versions;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (int64_t v; ParseVersion(n, &v)) versions.push_back(n);
  }
  std::sort(versions.begin(), versions.end());
  for (const auto& v : versions) fp += ";" + v + "=" + VersionStamp(dir + "/" + v);
  return fp;
}

std::vector<std::string> ModelManager::DependenciesFirst(const std::vector<std::string>& names) {
  // The models each one calls (ensemble steps), from its config; a model goes after those of
  // them being loaded too. A cycle (an error the model's own load reports) keeps file order.
  std::map<std::string, std::vector<std::string>> deps;
  for (const auto& n : names) {
    ModelLayout layout = ScanModelFolder(options_.repository + "/" + n, [&](const ModelConfig& c, const std::vector<std::string>& files) -> Result<std::string> {
      IL_ASSIGN_OR_RETURN(ModelBackend * b, options_.backends->ForModel(c, files));
      deps[n] = b->Dependencies(c);
      return b->default_model_filename();
    });
  }
  std::vector<std::string> ordered;
  std::set<std::string> placed;
  const std::set<std::string> wanted(names.begin(), names.end());
  while (ordered.size() < names.size()) {
    bool progress = false;
    for (const auto& n : names) {
      if (placed.count(n)) continue;
      bool ready = true;
      for (const auto& d : deps[n]) ready &= !wanted.count(d) || placed.count(d) > 0 || d == n;
      if (!ready) continue;
      ordered.push_back(n);
      placed.insert(n);
      progress = true;
    }
    if (!progress) {
      for (const auto& n : names)
        if (!placed.count(n)) ordered.push_back(n), placed.insert(n);
    }
  }
  return ordered;
}

Status ModelManager::LoadStartupModels() {
  std::vector<std::string> names;
  if (options_.mode == ModelControlMode::kExplicit) {
    for (const auto& n : options_.startup_models) {
      if (n == "*") {
        for (const auto& m : ListModelFolders()) names.push_back(m);
      } else {
        names.push_back(n);
      }
    }
    // Hot models are kept loaded, so they load at start whatever the startup list says.
    for (const auto& m : ListModelFolders())
      if (std::find(names.begin(), names.end(), m) == names.end() && ConfigSaysHot(m)) names.push_back(m);
  } else {
    names = ListModelFolders();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& n : names) requested_.insert(n);
  }
  names = DependenciesFirst(names);
  Status first;
  for (const auto& n : names) {
    std::promise<Status> done;
    auto fut = done.get_future();
    Post([this, n, &done] { done.set_value(DoLoad(n)); });
    Status st = fut.get();
    if (!st.ok() && first.ok()) first = st;
  }
  if (options_.mode == ModelControlMode::kPoll) poller_ = std::thread([this] { PollLoop(); });
  return first;
}

Result<std::shared_ptr<ModelVersion>> ModelManager::WrapForResponseCache(std::shared_ptr<ModelVersion> loaded,
                                                                       const VersionLoadRequest& request) {
  if (options_.response_cache == nullptr || !loaded->config().response_cache().enable()) return loaded;
  IL_ASSIGN_OR_RETURN(std::string fingerprint,
                      VersionFingerprint(request.model_dir + "/config.pbtxt", request.version_dir));
  return std::shared_ptr<ModelVersion>(std::make_shared<CachedModelVersion>(
      std::move(loaded), options_.response_cache, std::move(fingerprint), request.metrics));
}

VersionLoadRequest ModelManager::MakeLoadRequest(const std::string& model, const std::string& dir,
                                                 const ModelVersionFile& vf, const ModelConfig& config) {
  VersionLoadRequest vo;
  vo.model_name = model;
  vo.version = vf.version;
  vo.model_dir = dir;
  vo.version_dir = vf.version_dir;
  vo.model_path = vf.model_path;
  vo.partial_config = config;
  vo.session = options_.session;
  vo.limits = options_.per_model_limits;
  vo.inline_slots = options_.inline_slots;
  vo.cpu_share = options_.cpu_share;
  vo.models = options_.resolver;
  if (options_.metrics_for) vo.metrics = options_.metrics_for(model, vf.version);
  vo.progress = [this, model, v = vf.version](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    models_[model].versions[v] = {"LOADING", what};
  };
  return vo;
}

Status ModelManager::DoLoad(const std::string& model) {
  const std::string dir = options_.repository + "/" + model;
  std::error_code ec;
  if (model.empty() || model.find('/') != std::string::npos || model[0] == '.' || !fs::is_directory(dir, ec)) {
    return Status::NotFound("model '" + NameForMessage(model) + "' is not in the model repository");
  }
  const std::string folder_fp = FolderFingerprint(model);
  ModelBackend* backend = nullptr;
  const BackendRegistry& registry = *options_.backends;
  ModelLayout layout = ScanModelFolder(dir, [&](const ModelConfig& c, const std::vector<std::string>& files) -> Result<std::string> {
    IL_ASSIGN_OR_RETURN(backend, registry.ForModel(c, files));
    if (!c.default_model_filename().empty() && !backend->default_model_filename().empty())
      return c.default_model_filename();
    return backend->default_model_filename();
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    ModelEntry& e = models_[model];
    e.fingerprint = folder_fp;
    e.loading = true;
    if (!layout.status.ok()) {
      e.model_reason = WithoutRepositoryPath(layout.status.message(), options_.repository);
      e.loading = false;
    }
  }
  if (!layout.status.ok()) {
    LogError("model_load_failed", {{"model", model}, {"reason", layout.status.message()}});
    return Status(layout.status.code(),
                  "model '" + model + "': " + WithoutRepositoryPath(layout.status.message(), options_.repository));
  }
  const std::string config_fp = layout.config.SerializeAsString();
  // Which versions need a (re)load: new ones, and ones whose file or config changed.
  std::vector<ModelVersionFile> to_load;
  std::set<int64_t> wanted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ModelEntry& e = models_[model];
    e.model_reason.clear();
    e.hot = SaysHot(layout.config);
    for (const auto& vf : layout.versions) {
      wanted.insert(vf.version);
      auto it = e.serving.find(vf.version);
      const bool same = it != e.serving.end() && e.config_fingerprint == config_fp &&
                        e.version_fingerprints[vf.version] == VersionStamp(vf.version_dir);
      if (!same) {
        to_load.push_back(vf);
        e.versions[vf.version] = {"LOADING", "queued"};
      }
    }
  }
  LogInfo("model_loading", {{"model", model}, {"kind", backend->kind()}, {"versions", std::to_string(to_load.size())}});
  if (layout.config.response_cache().enable() && options_.response_cache == nullptr && !to_load.empty())
    LogInfo("response_cache_off", {{"model", model}, {"reason", "the server has no response cache "
                                                                "(--response-cache-bytes 0): served uncached"}});
  std::map<int64_t, std::shared_ptr<ModelVersion>> loaded;
  std::map<int64_t, std::string> loaded_fp;
  // model_version_loaded is logged after the swap below: a client that waits for it (a deploy
  // script, the e2e tests) must find the new version answering, not the one it replaces.
  std::vector<EventLog::Fields> loaded_events;
  Status first_error;
  for (const auto& vf : to_load) {
    const auto t0 = Clock::now();
    const std::string stamp = VersionStamp(vf.version_dir);
    const VersionLoadRequest load = MakeLoadRequest(model, dir, vf, layout.config);
    auto r = backend->Load(load);
    if (r.ok()) r = WrapForResponseCache(std::move(r).value(), load);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mu_);
    ModelEntry& e = models_[model];
    if (!r.ok()) {
      // What clients see (errors, the repository index) never names a server path; the log does.
      const std::string reason = WithoutRepositoryPath(r.status().message(), options_.repository);
      if (e.serving.count(vf.version)) {
        e.versions[vf.version] = {"READY", "reload failed: " + reason + "; the previously loaded files still serve"};
      } else {
        e.versions[vf.version] = {"UNAVAILABLE", reason};
      }
      if (first_error.ok()) first_error = Status(r.status().code(), reason);
      LogError("model_load_failed", {{"model", model}, {"version", std::to_string(vf.version)},
                                     {"reason", r.status().message()}, {"ms", std::to_string(ms)}});
      continue;
    }
    loaded[vf.version] = std::move(r).value();
    loaded_fp[vf.version] = stamp;
    EventLog::Fields fields = {{"model", model}, {"version", std::to_string(vf.version)}, {"kind", backend->kind()},
                               {"ms", std::to_string(ms)}, {"memory_bytes", std::to_string(loaded[vf.version]->MemoryBytes())},
                               {"reload", e.serving.empty() ? "false" : "true"}};
    for (auto& d : loaded[vf.version]->LoadDetails()) fields.push_back(std::move(d));
    loaded_events.push_back(std::move(fields));
  }
  // The swap: new versions take traffic, the ones they replace or that the policy dropped leave.
  std::vector<std::shared_ptr<ModelVersion>> retired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ModelEntry& e = models_[model];
    for (auto& [v, sv] : loaded) {
      auto it = e.serving.find(v);
      if (it != e.serving.end()) retired.push_back(it->second);
      e.serving[v] = sv;
      e.version_fingerprints[v] = loaded_fp[v];
      e.versions[v] = {"READY", ""};
    }
    // Versions the policy no longer selects stop serving once a selected version serves; until
    // then (the new version failed to load) the old one keeps serving.
    bool a_wanted_version_serves = false;
    for (const auto& [v, sv] : e.serving) a_wanted_version_serves |= wanted.count(v) > 0;
    for (auto it = e.serving.begin(); it != e.serving.end();) {
      if (a_wanted_version_serves && !wanted.count(it->first)) {
        retired.push_back(it->second);
        e.version_fingerprints.erase(it->first);
        it = e.serving.erase(it);
      } else {
        ++it;
      }
    }
    // Status entries for versions that are neither serving nor failed-and-wanted go away.
    for (auto it = e.versions.begin(); it != e.versions.end();) {
      if (!e.serving.count(it->first) && !wanted.count(it->first)) it = e.versions.erase(it);
      else ++it;
    }
    e.config_fingerprint = config_fp;
    e.loading = false;
    if (!e.serving.empty()) e.idle_unloaded = false;
    if (!loaded.empty()) e.last_used = Clock::now();  // a model just loaded is not the least recently used
  }
  for (const auto& fields : loaded_events) LogInfo("model_version_loaded", fields);
  for (auto& old : retired) {
    const int64_t v = old->version();
    LogInfo("model_version_draining", {{"model", model}, {"version", std::to_string(v)}});
    old->Drain();
    bool still_serving = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = models_[model].serving.find(v);
      still_serving = it != models_[model].serving.end();
    }
    if (!still_serving && options_.on_version_removed) options_.on_version_removed(model, v);
    old.reset();
    LogInfo("model_version_unloaded", {{"model", model}, {"version", std::to_string(v)}});
  }
  if (!retired.empty()) ReleaseFreeMemoryToSystem();
  if (first_error.ok()) LogInfo("model_ready", {{"model", model}});
  return first_error.ok() ? Status::Ok()
                          : Status(first_error.code(), "model '" + model + "': " + first_error.message());
}

Status ModelManager::DoUnload(const std::string& model, const std::string& why, bool forget) {
  std::map<int64_t, std::shared_ptr<ModelVersion>> serving;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    if (it == models_.end() || (it->second.serving.empty() && it->second.versions.empty()))
      return Status::Ok();  // nothing loaded: unloading is a no-op
    serving = std::move(it->second.serving);
    it->second.serving.clear();
    for (auto& [v, st] : it->second.versions) st = {"UNLOADING", why};
  }
  LogInfo("model_unloading", {{"model", model}, {"reason", why}});
  for (auto& [v, sv] : serving) {
    sv->Drain();
    if (options_.on_version_removed) options_.on_version_removed(model, v);
  }
  serving.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (forget) {
      models_.erase(model);  // gone from the repository: unknown (404) from now on
    } else {
      ModelEntry& e = models_[model];
      e.versions.clear();
      e.version_fingerprints.clear();
      e.config_fingerprint.clear();
      e.model_reason = e.idle_unloaded ? kUnloadedWhileIdleReason : why;
    }
  }
  ReleaseFreeMemoryToSystem();
  LogInfo("model_unloaded", {{"model", model}, {"reason", why}});
  return Status::Ok();
}

void ModelManager::Load(const std::string& model, StatusCallback done) {
  if (options_.mode != ModelControlMode::kExplicit)
    return done(Status::FailedPrecondition(
        "loading models on request needs --model-control-mode explicit (the server runs in " +
        std::string(options_.mode == ModelControlMode::kPoll ? "poll" : "none") + " mode)"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_.insert(model);
  }
  Post([this, model, done = std::move(done)] {
    Status st = DoLoad(model);
    if (st.code() == StatusCode::kNotFound) {
      std::lock_guard<std::mutex> lock(mu_);
      requested_.erase(model);
      auto it = models_.find(model);
      if (it != models_.end() && it->second.serving.empty()) models_.erase(it);
    }
    done(st);
  });
}

void ModelManager::Unload(const std::string& model, StatusCallback done) {
  if (options_.mode != ModelControlMode::kExplicit)
    return done(Status::FailedPrecondition(
        "unloading models on request needs --model-control-mode explicit (the server runs in " +
        std::string(options_.mode == ModelControlMode::kPoll ? "poll" : "none") + " mode)"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!models_.count(model) && !requested_.count(model)) {
      std::error_code ec;
      if (!fs::is_directory(options_.repository + "/" + model, ec))
        return done(Status::NotFound("model '" + NameForMessage(model) + "' is not in the model repository"));
    }
    requested_.erase(model);
  }
  Post([this, model, done = std::move(done)] {
    {
      // Unloaded by the user: not loaded on demand any more, even when the idle policy had
      // unloaded it already.
      std::lock_guard<std::mutex> lock(mu_);
      auto it = models_.find(model);
      if (it != models_.end() && it->second.idle_unloaded) {
        it->second.idle_unloaded = false;
        it->second.model_reason = "unloaded";
      }
    }
    done(DoUnload(model, "unloaded"));
  });
}

void ModelManager::PollLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(tasks_mu_);
      if (tasks_cv_.wait_for(lock, options_.poll_interval, [&] { return stopping_; })) return;
    }
    PollOnce();
  }
}

void ModelManager::PollOnce() {
  const std::vector<std::string> present = ListModelFolders();
  std::vector<std::string> to_load, to_unload;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& n : present) {
      requested_.insert(n);
      auto it = models_.find(n);
      if (it == models_.end()) {
        to_load.push_back(n);
      } else if (!it->second.loading && it->second.fingerprint != FolderFingerprint(n)) {
        to_load.push_back(n);
      }
    }
    for (const auto& [n, e] : models_) {
      if (!std::binary_search(present.begin(), present.end(), n)) to_unload.push_back(n);
    }
  }
  for (const auto& n : to_unload) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requested_.erase(n);
    }
    Post([this, n] {
      (void)DoUnload(n, "removed from the repository", /*forget=*/true);
      std::lock_guard<std::mutex> lock(mu_);
      models_.erase(n);
    });
  }
  for (const auto& n : DependenciesFirst(to_load)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      models_[n].loading = true;  // not noticed again until this load ran
    }
    Post([this, n] { (void)DoLoad(n); });
  }
}

bool ModelManager::AllRequestedReady() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& n : requested_) {
    auto it = models_.find(n);
    if (it != models_.end() && it->second.idle_unloaded) continue;  // loads on its next request
    if (it == models_.end() || it->second.serving.empty()) return false;
    bool any_ready = false;
    for (const auto& [v, sv] : it->second.serving) any_ready |= sv->Ready();
    if (!any_ready) return false;
  }
  return true;
}

Result<std::shared_ptr<ModelVersion>> ModelManager::Find(const std::string& model, const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);
  return FindLocked(model, version, /*record_use=*/false);
}

Result<std::shared_ptr<ModelVersion>> ModelManager::FindForRequest(const std::string& model, const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);  // one lock for the lookup and the last-use stamp (hot path)
  return FindLocked(model, version, /*record_use=*/true);
}

Result<std::shared_ptr<ModelVersion>> ModelManager::FindLocked(const std::string& model, const std::string& version,
                                                               bool record_use) {
  auto it = models_.find(model);
  if (it == models_.end() || (it->second.serving.empty() && it->second.versions.empty())) {
    if (it != models_.end() && !it->second.model_reason.empty())
      return Status::Unavailable("model '" + model + "' is not available: " + it->second.model_reason);
    return Status::NotFound("unknown model '" + NameForMessage(model) + "'");
  }
  ModelEntry& e = it->second;
  if (version.empty()) {
    if (e.serving.empty()) {
      std::string why = e.model_reason;
      for (const auto& [v, st] : e.versions)
        if (why.empty() || st.state == "LOADING") why = "version " + std::to_string(v) + " " + st.state + (st.reason.empty() ? "" : ": " + st.reason);
      return Status::Unavailable("model '" + model + "' is not ready (" + why + ")");
    }
    if (record_use) e.last_used = Clock::now();
    return e.serving.rbegin()->second;
  }
  int64_t v = 0;
  if (!ParseVersion(version, &v))
    return Status::NotFound("model '" + model + "' has no version '" + NameForMessage(version) + "'");
  auto sv = e.serving.find(v);
  if (sv != e.serving.end()) {
    if (record_use) e.last_used = Clock::now();
    return sv->second;
  }
  auto st = e.versions.find(v);
  if (st != e.versions.end())
    return Status::Unavailable("model '" + model + "' version " + version + " is " + st->second.state +
                               (st->second.reason.empty() ? "" : ": " + st->second.reason));
  return Status::NotFound("model '" + model + "' has no version " + version + " being served");
}

bool ModelManager::LoadOnDemand(const std::string& model, const std::string& version, FoundCallback done) {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    if (it == models_.end() || !it->second.idle_unloaded) return false;
    ModelEntry& e = it->second;
    if (!e.serving.empty()) {
      post = false;  // loaded again since the caller looked: answer below, outside the lock
    } else {
      if (e.waiting.empty()) {
        e.first_waited = Clock::now();
        post = true;
      }
      e.waiting.push_back({version, std::move(done)});
      done = nullptr;
    }
  }
  if (done) {
    done(FindForRequest(model, version));
    return true;
  }
  if (post) Post([this, model] { RunOnDemandLoad(model); });
  return true;
}

void ModelManager::RunOnDemandLoad(const std::string& model) {
  const auto t0 = Clock::now();
  Status st = DoLoad(model);
  std::vector<ModelEntry::Waiter> waiting;
  Clock::time_point first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    if (it != models_.end()) {
      waiting.swap(it->second.waiting);
      first = it->second.first_waited;
      // A failed load is not retried by every request: the index says why, as for any load.
      it->second.idle_unloaded = false;
    }
  }
  const auto now = Clock::now();
  const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(now - first);
  auto ms = [](auto d) { return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()); };
  if (st.ok()) {
    LogInfo("model_loaded_on_demand", {{"model", model}, {"wait_ms", ms(waited)}, {"load_ms", ms(now - t0)},
                                       {"requests", std::to_string(waiting.size())}});
    if (options_.on_demand_loaded) options_.on_demand_loaded(model, waited);
  } else {
    LogError("model_load_on_demand_failed", {{"model", model}, {"reason", st.message()},
                                             {"requests", std::to_string(waiting.size())}});
  }
  for (auto& w : waiting) w.done(st.ok() ? FindForRequest(model, w.version) : Result<std::shared_ptr<ModelVersion>>(st));
}

void ModelManager::UnloadIdle(const std::string& model, Clock::time_point last_used_seen) {
  Post([this, model, last_used_seen] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = models_.find(model);
      if (it == models_.end() || it->second.serving.empty() || it->second.hot || it->second.loading ||
          it->second.last_used != last_used_seen)
        return;
      it->second.idle_unloaded = true;  // from now on requests wait for the on-demand load
    }
    (void)DoUnload(model, "idle");
    if (options_.on_idle_unloaded) options_.on_idle_unloaded(model);
  });
}

std::vector<ModelUsage> ModelManager::Usage() {
  std::vector<std::pair<ModelUsage, std::vector<std::shared_ptr<ModelVersion>>>> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, e] : models_) {
      ModelUsage u;
      u.model = n;
      u.last_used = e.last_used;
      u.serving = !e.serving.empty();
      u.hot = e.hot;
      std::vector<std::shared_ptr<ModelVersion>> versions;
      for (const auto& [v, sv] : e.serving) versions.push_back(sv);
      rows.emplace_back(std::move(u), std::move(versions));
    }
  }
  // Memory and dependencies are asked outside the lock (a version may take its own locks).
  std::set<std::string> needed;
  for (auto& [u, versions] : rows)
    for (const auto& v : versions) {
      u.memory_bytes += v->MemoryBytes();
      for (const auto& d : v->Dependencies())
        if (d != u.model) needed.insert(d);
    }
  std::vector<ModelUsage> out;
  for (auto& [u, versions] : rows) {
    u.needed = needed.count(u.model) > 0;
    out.push_back(std::move(u));
  }
  return out;
}

bool ModelManager::ConfigSaysHot(const std::string& model) {
  bool hot = false;
  ScanModelFolder(options_.repository + "/" + model,
                  [&](const ModelConfig& c, const std::vector<std::string>& files) -> Result<std::string> {
                    hot = SaysHot(c);
                    IL_ASSIGN_OR_RETURN(ModelBackend * b, options_.backends->ForModel(c, files));
                    return b->default_model_filename();
                  });
  return hot;
}

std::vector<std::shared_ptr<ModelVersion>> ModelManager::Serving(const std::string& model) {
  std::vector<std::shared_ptr<ModelVersion>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [n, e] : models_) {
    if (!model.empty() && n != model) continue;
    for (const auto& [v, sv] : e.serving) out.push_back(sv);
  }
  return out;
}

std::vector<ModelIndexEntry> ModelManager::Index(bool ready_only) {
  // The index rescans the repository, so models added since the last load show up (unloaded).
  const std::vector<std::string> present = ListModelFolders();
  std::vector<ModelIndexEntry> out;
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> names(present.begin(), present.end());
  for (const auto& [n, e] : models_) names.insert(n);
  for (const auto& n : names) {
    auto it = models_.find(n);
    if (it == models_.end() || (it->second.versions.empty() && it->second.serving.empty())) {
      if (ready_only) continue;
      std::string reason = it == models_.end() ? "not loaded" : it->second.model_reason;
      if (reason.empty()) reason = "not loaded";
      out.push_back({n, "", "UNAVAILABLE", reason});
      continue;
    }
    const ModelEntry& e = it->second;
    for (const auto& [v, st] : e.versions) {
      std::string state = st.state, reason = st.reason;
      auto sv = e.serving.find(v);
      if (sv != e.serving.end() && st.state == "READY" && !sv->second->Ready()) {
        state = "UNAVAILABLE";
        reason = sv->second->NotReadyReason();
      }
      if (ready_only && state != "READY") continue;
      out.push_back({n, std::to_string(v), state, reason});
    }
  }
  return out;
}

void ModelManager::DrainAll() {
  std::vector<std::shared_ptr<ModelVersion>> all = Serving();
  for (auto& v : all) v->Drain();
}

std::chrono::steady_clock::duration ModelManager::MaxStall() {
  auto worst = std::chrono::steady_clock::duration::zero();
  for (const auto& v : Serving()) worst = std::max(worst, v->StallTime());
  return worst;
}

}  // namespace inferloop::serve
