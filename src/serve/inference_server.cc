#include "serve/inference_server.h"

#include <google/protobuf/util/json_util.h>

#include <thread>

#include "base/status_macros.h"
#include "inferloop/version.h"
#include "serve/adaptive_config.h"
#include "serve/model_repository_layout.h"

namespace inferloop::serve {

InferenceServer::InferenceServer(InferenceServerOptions options, EventLog* log)
    : options_(std::move(options)), log_(log), gate_(AdmissionGate::Create("server", options_.global_limits)), fair_(gate_) {}

Result<std::unique_ptr<InferenceServer>> InferenceServer::Create(InferenceServerOptions options, EventLog* log) {
  std::unique_ptr<InferenceServer> s(new InferenceServer(std::move(options), log));
  ModelManagerOptions mo = s->options_.manager;
  InferenceServer* self = s.get();
  mo.metrics_for = [self](const std::string& model, int64_t version) { return self->metrics_.ForVersion(model, version); };
  mo.on_version_removed = [self](const std::string& model, int64_t version) { self->metrics_.RemoveVersion(model, version); };
  mo.log = log;
  mo.resolver = self;
  mo.on_idle_unloaded = [self](const std::string& model) { self->metrics_.OnIdleUnload(model); };
  mo.on_demand_loaded = [self](const std::string& model, std::chrono::nanoseconds waited) {
    self->metrics_.OnDemandLoad(model, waited);
  };
  if (s->options_.response_cache) {
    ResponseCacheOptions co = *s->options_.response_cache;
    if (co.log == nullptr) co.log = log;
    auto cache = ResponseCache::Create(std::move(co));
    if (!cache.ok()) {
      const std::string& why = cache.status().message();
      return Status(cache.status().code(), why.rfind("response cache", 0) == 0 ? why : "response cache: " + why);
    }
    s->response_cache_ = std::move(cache).value();
    s->metrics_.SetResponseCache(s->response_cache_);
    mo.response_cache = s->response_cache_;
    if (log) {
      const ResponseCacheOptions& co = s->response_cache_->options();
      log->Info("response_cache", {{"memory_bytes", std::to_string(co.memory_bytes)},
                                   {"disk_dir", co.disk_dir},
                                   {"disk_bytes", co.disk_dir.empty() ? "0" : std::to_string(co.disk_bytes)}});
    }
  }
  if (s->options_.inline_slots > 0) mo.inline_slots = std::make_shared<std::atomic<int>>(s->options_.inline_slots);
  auto m = ModelManager::Create(std::move(mo));
  if (!m.ok()) return m.status();
  s->manager_ = std::move(m).value();
  return s;
}

InferenceServer::~InferenceServer() {
  // The manager drains every version (its queued requests are answered) before it goes.
  manager_.reset();
}

Status InferenceServer::LoadStartupModels() { return manager_->LoadStartupModels(); }

void InferenceServer::BeginShutdown() {
  if (!shutting_down_.exchange(true) && log_)
    log_->Info("shutdown_started", {{"inflight", std::to_string(gate_->inflight_requests())}});
}

bool InferenceServer::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  while (gate_->inflight_requests() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool InferenceServer::Live() { return manager_->MaxStall() < options_.liveness_stall_limit; }

bool InferenceServer::Ready() { return !shutting_down_.load() && manager_->AllRequestedReady(); }

ServerMetadata InferenceServer::GetServerMetadata() {
  ServerMetadata m;
  m.name = "inferloop";
  m.version = INFERLOOP_VERSION_STRING;
  m.extensions = {"binary_tensor_data", "model_repository", "statistics", "model_configuration"};
  return m;
}

Result<bool> InferenceServer::ModelReady(const std::string& model, const std::string& version) {
  auto v = manager_->Find(model, version);
  if (!v.ok()) {
    if (v.status().code() == StatusCode::kNotFound) return v.status();
    return false;  // loading or unavailable
  }
  return v.value()->Ready();
}

Result<ModelMetadata> InferenceServer::GetModelMetadata(const std::string& model, const std::string& version) {
  auto v = manager_->Find(model, version);
  if (!v.ok()) return v.status();
  ModelMetadata m = v.value()->Metadata();
  if (version.empty()) {
    // Every version being served, and their memory together.
    m.versions.clear();
    m.memory_bytes = 0;
    for (const auto& sv : manager_->Serving(model)) {
      m.versions.push_back(std::to_string(sv->version()));
      m.memory_bytes += sv->MemoryBytes();
    }
  }
  return m;
}

Result<std::string> InferenceServer::GetModelConfigJson(const std::string& model, const std::string& version) {
  auto v = manager_->Find(model, version);
  if (!v.ok()) return v.status();
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  auto st = google::protobuf::util::MessageToJsonString(v.value()->config(), &json, opts);
  if (!st.ok()) return Status::Internal("cannot encode the config of '" + model + "' as JSON");
  return json;
}

// A request admitted and not yet handed to a version.
struct InferenceServer::PendingInfer {
  InferRequest request;
  RequestContext context;
  InferCallback done;
  AdmissionTicket ticket;
};

void InferenceServer::Infer(InferRequest request, RequestContext context, InferCallback done) {
  const std::string model = request.model_name;
  auto refuse = [&](Status st) {
    metrics_.OnRefused(model, st);
    done(std::move(st));
  };
  if (shutting_down_.load()) return refuse(Status::Unavailable("the server is shutting down"));
  auto found = manager_->FindForRequest(model, request.model_version);
  // Weighted fair admission: a model found is counted under its cpu_share (a flooded model
  // cannot fill the server's in-flight limit while another waits).
  const double weight = found.ok() ? CpuShareWeight(found.value()->config()) : 1.0;
  auto ticket = fair_.TryAdmit(found.ok() && options_.fair_admission ? model : std::string(), weight,
                               context.request_bytes);
  if (!ticket.ok()) return refuse(ticket.status());
  Dispatch({std::move(request), std::move(context), std::move(done), std::move(ticket).value()}, std::move(found), 0);
}

void InferenceServer::Dispatch(PendingInfer p, Result<std::shared_ptr<ModelVersion>> found, int attempt) {
  const std::string model = p.request.model_name;
  // A version being replaced refuses new requests (and consumes nothing): look again, the
  // replacement is already serving by then.
  for (;; ++attempt) {
    if (!found.ok() && found.status().code() == StatusCode::kUnavailable && attempt < 4 &&
        !p.context.IsCancelled()) {
      // Unloaded while idle: continue once it is loaded again (on the loader thread), holding
      // no thread meanwhile.
      auto held = std::make_shared<PendingInfer>(std::move(p));
      const std::string version = held->request.model_version;
      if (manager_->LoadOnDemand(model, version, [this, held, attempt](Result<std::shared_ptr<ModelVersion>> v) {
            Dispatch(std::move(*held), std::move(v), attempt + 1);
          }))
        return;
      p = std::move(*held);
    }
    if (!found.ok()) {
      p.ticket.Release();
      metrics_.OnRefused(model, found.status());
      return p.done(found.status());
    }
    if (found.value()->Infer(std::move(p.request), std::move(p.context), std::move(p.done), std::move(p.ticket))) return;
    if (attempt >= 4) break;
    std::this_thread::yield();
    found = manager_->FindForRequest(model, p.request.model_version);
  }
  p.ticket.Release();
  Status st = Status::Unavailable("model '" + NameForMessage(model) + "' is being replaced; retry");
  metrics_.OnRefused(model, st);
  p.done(st);
}

Result<std::shared_ptr<ModelVersion>> InferenceServer::Find(const std::string& model, int64_t version) {
  return manager_->FindForRequest(model, version > 0 ? std::to_string(version) : "");
}

std::vector<ModelIndexEntry> InferenceServer::RepositoryIndex(bool ready_only) { return manager_->Index(ready_only); }

void InferenceServer::LoadModel(const std::string& model, StatusCallback done) { manager_->Load(model, std::move(done)); }

void InferenceServer::UnloadModel(const std::string& model, StatusCallback done) {
  manager_->Unload(model, std::move(done));
}

Result<std::vector<ModelStatistics>> InferenceServer::GetStatistics(const std::string& model, const std::string& version) {
  std::vector<ModelStatistics> out;
  if (!model.empty()) {
    if (!version.empty()) {
      auto v = manager_->Find(model, version);
      if (!v.ok()) return v.status();
      out.push_back(v.value()->Statistics());
      return out;
    }
    auto all = manager_->Serving(model);
    if (all.empty()) {
      auto v = manager_->Find(model, "");
      if (!v.ok()) return v.status();
    }
    for (const auto& sv : all) out.push_back(sv->Statistics());
    return out;
  }
  for (const auto& sv : manager_->Serving()) out.push_back(sv->Statistics());
  return out;
}

Result<AdaptiveControl*> InferenceServer::FindAdaptive(const std::string& model, const std::string& version,
                                                      std::shared_ptr<ModelVersion>& holder) {
  IL_ASSIGN_OR_RETURN(holder, manager_->Find(model, version));
  AdaptiveControl* control = holder->Adaptive();
  if (control == nullptr) {
    return Status::FailedPrecondition("model '" + NameForMessage(model) +
                                      "' has no adaptive variants (add adaptive { ... } to its config.pbtxt, "
                                      "docs/ADAPTIVE.md)");
  }
  return control;
}

Result<AdaptiveState> InferenceServer::GetAdaptiveState(const std::string& model, const std::string& version) {
  std::shared_ptr<ModelVersion> holder;
  IL_ASSIGN_OR_RETURN(AdaptiveControl * control, FindAdaptive(model, version, holder));
  return control->State();
}

Status InferenceServer::PinVariant(const std::string& model, const std::string& version, const std::string& variant) {
  std::shared_ptr<ModelVersion> holder;
  IL_ASSIGN_OR_RETURN(AdaptiveControl * control, FindAdaptive(model, version, holder));
  // The control logs the decision it leads to (the adaptive loop's "adaptive_decision" event).
  if (variant.empty()) {
    control->Free();
    return Status::Ok();
  }
  return control->Pin(variant);
}

std::string InferenceServer::MetricsText() { return metrics_.Text(manager_->Serving(), gate_->inflight_requests()); }

}  // namespace inferloop::serve
