// ModelBackend: one kind of model the ModelManager serves (ONNX, GGUF, ensemble, image and DICOM
// processing: src/backends/<kind>/), and ModelVersion: a version of a model one of them loaded.
//
// The manager owns everything that is the same for every kind (docs/ARCHITECTURE.md, "Model
// backends"): the repository scan and version policy, the control modes (none, poll, explicit:
// the repository API loads and unloads every kind), loading on the loader thread with the
// version's memory measured around it, hot reload (the new version is built beside the serving
// one, swapped in, and the old one drained), readiness, the repository index, statistics and
// metrics hooks. A backend only turns a version folder into a ModelVersion.
//
// Adding a backend: a folder src/backends/<kind>/ with a ModelBackend, added to the registry in
// the composition root (src/server/server_builder.cc). Nothing in serve/ changes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "serve/adaptive_control.h"
#include "serve/admission_control.h"
#include "serve/cpu_share_scheduler.h"
#include "serve/dynamic_batcher.h"
#include "serve/inference_service.h"
#include "serve/model_config.h"
#include "serve/text_generation_service.h"

namespace inferloop::serve {

class VersionMetricsSink;
class ModelVersion;

// What a version reports as it serves (the server's per-version metrics). Thread-safe and cheap.
class VersionMetricsSink {
 public:
  virtual ~VersionMetricsSink() = default;
  virtual void OnQueueDepth(int64_t depth) {}
  virtual void OnBatch(int64_t rows, DispatchReason reason) {}
  // A request answered: status, time queued, computing (its batch's run), and end to end.
  virtual void OnRequestDone(const Status& status, std::chrono::nanoseconds queue,
                             std::chrono::nanoseconds compute, std::chrono::nanoseconds total) {}
  // A batch ran under a CPU-share grant (cpu_share_scheduler.h): how long it waited for the
  // slot, and the time charged to the model (the slot held).
  virtual void OnCpuShare(std::chrono::nanoseconds waited, std::chrono::nanoseconds charged) {}
  // Response cache (cached_model_version.h). A request answered from the cache: the time to
  // look it up and copy the stored response, and end to end. It counts as a success, not as
  // queued or computed (OnRequestDone is not called for it).
  virtual void OnCacheHit(std::chrono::nanoseconds lookup, std::chrono::nanoseconds total) {}
  // A request the cache did not hold (the model computed it): the time to look it up and insert
  // the response (OnRequestDone is called for it as for any computed request).
  virtual void OnCacheMiss(std::chrono::nanoseconds lookup_and_insert) {}
};

// How an ensemble (or any backend that calls other models) reaches the models it uses: the
// version serving a model now. The caller then runs a request through that version's own
// scheduler (ModelVersion::Infer, with its per-model admission), looking again when it answers
// false (a hot reload swapped it out). Thread-safe.
class ModelResolver {
 public:
  virtual ~ModelResolver() = default;
  // version <= 0: the highest serving one. Errors as ModelManager::Find.
  virtual Result<std::shared_ptr<ModelVersion>> Find(const std::string& model, int64_t version) = 0;
};

// Runs `request` on the version of `model` serving now (version <= 0: the highest), through that
// version's own scheduler (its per-model admission; no server-wide ticket: the caller's own
// request was admitted already), looking again when the version found is draining (a hot reload:
// it consumed nothing). OK: `done` will be called exactly once. An error (the lookup's, or
// Unavailable when the model kept being replaced): `done` is not called and `request` is not
// consumed meaningfully; the caller answers. The one home of "call another model" for backends
// (ensemble steps, sliding windows, saliency passes).
Status InferOnServingVersion(ModelResolver& models, const std::string& model, int64_t version, InferRequest&& request,
                             RequestContext&& context, InferCallback&& done);

// One version folder to load.
struct VersionLoadRequest {
  std::string model_name;
  int64_t version = 0;
  std::string model_dir;    // DIR/<model>
  std::string version_dir;  // DIR/<model>/<version>
  std::string model_path;   // the version's model file (<version_dir>/<default_model_filename>), or ""
  ModelConfig partial_config;  // as parsed from config.pbtxt (or only the name); the backend completes it
  SessionOptions session;      // the server's session options (ONNX; others may ignore them)
  AdmissionLimits limits;      // per model version; 0 = unlimited
  // Human-readable progress while loading ("creating session", "warmup 2/4"); may be empty.
  std::function<void(const std::string&)> progress;
  std::shared_ptr<VersionMetricsSink> metrics;  // may be null
  // Shared by every version of a server: caller threads that may run a fast request inline.
  std::shared_ptr<std::atomic<int>> inline_slots;
  // Shared by every version of a server: the execution slots shared by CPU share (config.pbtxt
  // adaptive { cpu_share }; cpu_share_scheduler.h). Null: batches run as soon as an instance is free.
  std::shared_ptr<CpuShareScheduler> cpu_share;
  ModelResolver* models = nullptr;  // the server's models (for ensembles); never null when loading
};

class ModelVersion : public std::enable_shared_from_this<ModelVersion> {
 public:
  virtual ~ModelVersion() = default;

  virtual const std::string& name() const = 0;
  virtual int64_t version() const = 0;
  // The completed configuration it serves with.
  virtual const ModelConfig& config() const = 0;

  // KServe v2 inference. Validates and queues; every outcome goes to `done` (exactly once,
  // possibly before return) and the arguments are consumed. Exception: a draining version (being
  // replaced or unloaded) returns false and consumes nothing, so the caller can send the request
  // to the version that replaces it. `server_ticket` (the server's admission of the request) is
  // released just before `done` runs, not after: a frontend may hand the answer to its client
  // before `done` returns (an HTTP answer given on the connection's own io thread is written at
  // once), and a client that has its answer must not find its request still counted in flight
  // (inferloop_inflight_requests, the admission limits, the drain on SIGTERM).
  virtual bool Infer(InferRequest&& request, RequestContext&& context, InferCallback&& done,
                     AdmissionTicket&& server_ticket) = 0;
  // Refuses new requests and returns once every accepted request has been answered.
  virtual void Drain() = 0;

  virtual ModelMetadata Metadata() const = 0;
  virtual ModelStatistics Statistics() const = 0;
  // Memory this version holds (what its load kept, plus what it allocated since: arenas, caches).
  virtual int64_t MemoryBytes() const = 0;
  virtual bool Ready() const = 0;
  virtual std::string NotReadyReason() const = 0;
  // How long its scheduler has made no progress with work waiting (liveness); 0 when fine.
  virtual std::chrono::steady_clock::duration StallTime() const { return {}; }
  virtual int64_t QueueDepth() const { return 0; }

  // Text generation (the OpenAI-compatible API) for models that generate text; null otherwise.
  // Generate returns Unavailable without starting anything while the version is draining.
  virtual TextGenerationService* TextGeneration() { return nullptr; }
  // Models this version calls (ensemble steps); the manager reloads nothing for them, but the
  // index and docs show them, and unloading one of them makes this version fail its requests
  // with a message naming the step.
  virtual std::vector<std::string> Dependencies() const { return {}; }
  // Kind-specific facts added to the "model_version_loaded" event (e.g. a GGUF model's KV cache).
  virtual std::vector<std::pair<std::string, std::string>> LoadDetails() const { return {}; }
  // The adaptive loop's view of this version (precision variants, knobs, pin/free); null when it
  // has no variants (docs/ADAPTIVE.md).
  virtual AdaptiveControl* Adaptive() { return nullptr; }
  // Frees what an idle version can rebuild on its next request (arenas, scratch, cached shape
  // plans) and returns free heap to the OS; requests in flight are not affected. Thread-safe.
  // Called by the idle policy (docs/ADAPTIVE.md) once a version has had no traffic for a while.
  virtual void ReleaseIdleMemory() {}
};

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // Short name used in logs and the index ("onnx", "gguf", "ensemble", "image_preprocess").
  virtual std::string kind() const = 0;
  // The file each version folder must hold ("model.onnx", "model.gguf"); "" when a version is a
  // folder with no model file (ensembles, processing steps).
  virtual std::string default_model_filename() const = 0;
  // Whether this backend serves a model with this (partial) configuration whose version folders
  // hold these file names (the highest version's). The registry asks backends in order.
  virtual bool Serves(const ModelConfig& config, const std::vector<std::string>& version_files) const = 0;
  // Loads one version. Errors name the file or the config field and the problem.
  virtual Result<std::shared_ptr<ModelVersion>> Load(const VersionLoadRequest& request) = 0;
  // Models a model with this config calls (an ensemble's steps): loaded before it at start.
  virtual std::vector<std::string> Dependencies(const ModelConfig& config) const { return {}; }
};

// The backends a server has, asked in the order added.
class BackendRegistry {
 public:
  void Add(std::shared_ptr<ModelBackend> backend);
  // The first backend that serves the model; NotFound naming the platform/backend fields and the
  // files found when none does.
  Result<ModelBackend*> ForModel(const ModelConfig& config, const std::vector<std::string>& version_files) const;
  const std::vector<std::shared_ptr<ModelBackend>>& backends() const { return backends_; }

 private:
  std::vector<std::shared_ptr<ModelBackend>> backends_;
};

}  // namespace inferloop::serve
