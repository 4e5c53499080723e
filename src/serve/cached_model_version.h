// CachedModelVersion: a model version whose answers go through the server's response cache
// (config.pbtxt `response_cache { enable: true }`, as Triton reads it; the store is
// serve/response_cache.h). The ModelManager wraps the version a backend loaded when its config
// enables the cache and the server has one, so every path to the model goes through it: KServe
// requests, and ensemble steps found through the ModelResolver (cached per step, as Triton; an
// ensemble with the flag is cached at the top too). The OpenAI path of a GGUF model
// (TextGeneration) is forwarded and never cached.
//
// A request's key (MakeResponseCacheKey) covers the model, the version, the version's
// fingerprint (its config.pbtxt and files: see VersionFingerprint), every input, the requested
// outputs and the parameters that change the result.
// - Hit: answered on the caller's thread with the stored outputs and the request's id, model
//   name and version. Statistics: success and cache_hit (count; lookup + copy time) move;
//   inference_count, execution_count, queue and compute_* do not (Triton's semantics). Metrics:
//   VersionMetricsSink::OnCacheHit.
// - Miss: the wrapped version computes it; a successful answer is inserted. cache_miss counts the
//   lookup and insert time; OnCacheMiss. A failed answer is never stored.
// - Coalescing: while a request is being computed, identical requests (same key) arriving at
//   this version wait for it instead of computing again, and are answered from its result (they
//   count as cache hits: they were not computed; their success time includes the wait). If it
//   fails, each waiting request is then computed on its own (and inserted when it succeeds).
// Thread-safe. Drain() refuses new requests (Infer returns false, consuming nothing) and
// returns once every request it accepted, waiting ones included, has been answered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inferloop/status.h"
#include "serve/model_backend.h"
#include "serve/response_cache.h"

namespace inferloop::serve {

// The identity of a loaded version's files: XXH3-128 (hex) over the bytes of `config_path`
// ("" or absent: none) and, for every regular file under `version_dir` (recursively, sorted by
// relative path), its relative path, size and modification time in ns. Files replaced in place
// change it, so a cache never answers for files it did not compute with. Error: the folder
// cannot be listed.
Result<std::string> VersionFingerprint(const std::string& config_path, const std::string& version_dir);

class CachedModelVersion final : public ModelVersion {
 public:
  // `inner`, `cache`: not null. `fingerprint`: VersionFingerprint of the version's files.
  // `metrics`: the sink `inner` reports to (may be null).
  CachedModelVersion(std::shared_ptr<ModelVersion> inner, std::shared_ptr<ResponseCache> cache,
                     std::string fingerprint, std::shared_ptr<VersionMetricsSink> metrics);
  ~CachedModelVersion() override;

  bool Infer(InferRequest&& request, RequestContext&& context, InferCallback&& done,
             AdmissionTicket&& server_ticket) override;
  void Drain() override;
  // The wrapped version's, with cache_hit and cache_miss filled and hits added to success.
  ModelStatistics Statistics() const override;

  // Forwarded to the wrapped version.
  const std::string& name() const override { return inner_->name(); }
  int64_t version() const override { return inner_->version(); }
  const ModelConfig& config() const override { return inner_->config(); }
  ModelMetadata Metadata() const override { return inner_->Metadata(); }
  int64_t MemoryBytes() const override { return inner_->MemoryBytes(); }
  bool Ready() const override { return inner_->Ready(); }
  std::string NotReadyReason() const override { return inner_->NotReadyReason(); }
  std::chrono::steady_clock::duration StallTime() const override { return inner_->StallTime(); }
  int64_t QueueDepth() const override { return inner_->QueueDepth(); }
  TextGenerationService* TextGeneration() override { return inner_->TextGeneration(); }
  std::vector<std::string> Dependencies() const override { return inner_->Dependencies(); }
  // The wrapped version's, plus ("response_cache", "on").
  std::vector<std::pair<std::string, std::string>> LoadDetails() const override;
  AdaptiveControl* Adaptive() override { return inner_->Adaptive(); }
  void ReleaseIdleMemory() override { inner_->ReleaseIdleMemory(); }

  ModelVersion& inner() { return *inner_; }
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  struct Waiter;
  struct Flight;
  using Clock = std::chrono::steady_clock;

  // Admits one request (false while draining); every admitted one is Released once answered.
  bool Admit();
  void Release();
  // Answers `done` from `outputs` (a hit, or a coalesced wait) and records it.
  void AnswerFromCache(const InferRequest& request, const RequestContext& context, const std::vector<InferOutput>& outputs,
                       std::chrono::nanoseconds lookup, const InferCallback& done);
  // The leader of a flight answered: insert on success, answer it and every waiter.
  void Land(const ResponseCacheKey& key, const std::shared_ptr<Flight>& flight, Result<InferResponse> result);
  // Runs a request on the wrapped version without coalescing (a waiter whose leader failed);
  // inserts a success. Answers Unavailable when the wrapped version is draining.
  void ComputeAlone(const ResponseCacheKey& key, Waiter w);
  void RecordMiss(std::chrono::nanoseconds lookup_and_insert);
  // Inserts a copy of a successful response's outputs; the time it took.
  std::chrono::nanoseconds InsertTimed(const ResponseCacheKey& key, const InferResponse& response);

  const std::shared_ptr<ModelVersion> inner_;
  const std::shared_ptr<ResponseCache> cache_;
  const std::string fingerprint_;
  const std::shared_ptr<VersionMetricsSink> metrics_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable idle_cv_;
  bool draining_ = false;
  int64_t outstanding_ = 0;  // admitted, not yet answered
  std::unordered_map<ResponseCacheKey, std::shared_ptr<Flight>, ResponseCacheKeyHash> flights_;
  DurationStat hit_success_, cache_hit_, cache_miss_;
  uint64_t last_hit_ms_ = 0;
};

}  // namespace inferloop::serve
