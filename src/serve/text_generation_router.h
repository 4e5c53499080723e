// TextGenerationRouter: the OpenAI-compatible API's TextGenerationService over the model
// manager's versions: the models listed are those whose serving version generates text
// (ModelVersion::TextGeneration: GGUF models today), and a generation goes to the version
// serving its model now. A version that began draining between the lookup and the submit
// (a hot reload) refuses with Unavailable; the request is then sent to its replacement, so a
// reload loses no request. A model the idle policy unloaded is loaded on demand first (the
// generation starts from the load's completion; no thread waits). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/model_backend.h"
#include "serve/text_generation_service.h"

namespace inferloop::serve {

class TextGenerationRouter final : public TextGenerationService {
 public:
  using FindFn = std::function<Result<std::shared_ptr<ModelVersion>>(const std::string& model)>;
  using ServingFn = std::function<std::vector<std::shared_ptr<ModelVersion>>()>;
  using LoadOnDemandFn = std::function<bool(const std::string& model,
                                            std::function<void(Result<std::shared_ptr<ModelVersion>>)> done)>;
  // `find`: the version serving a model now (ModelManager::Find semantics); `serving`: every
  // serving version; `load_on_demand` (may be empty): ModelManager::LoadOnDemand semantics.
  TextGenerationRouter(FindFn find, ServingFn serving, LoadOnDemandFn load_on_demand = nullptr);

  std::vector<ModelInfo> ListModels() const override;
  // Errors: NotFound for an unknown model; InvalidArgument for a model that does not generate
  // text; the version's own errors.
  Status Generate(TextGenerationRequest request, std::function<void(const TextPiece&)> on_piece,
                  std::function<void(const TextGenerationResult&)> on_done) override;

  // The same routing for embeddings (a model the idle policy unloaded is loaded first).
  Status Embed(EmbeddingRequest request, std::function<void(const EmbeddingResult&)> on_done) override;

  // Waits until no generation started here is running (or `deadline` passes); true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) const;

 private:
  // Starts one request on a version's service; calls `finished` once the request has ended (after
  // the caller's own completion callback).
  using StartFn = std::function<Status(TextGenerationService& service, std::function<void()> finished)>;
  // Reports a failure that happens after Route has returned (a failed load on demand).
  using FailFn = std::function<void(const Status&)>;
  // The routing both request kinds share: the version serving `model` now (loaded on demand
  // first when the idle policy unloaded it; resent to the replacement when a reload swaps it
  // out between the lookup and `start`). `not_text`: the error for a model that is no LLM.
  Status Route(const std::string& model, Status (*not_text)(const std::string& model), const StartFn& start,
               const FailFn& fail);

  enum class LoadWait { kNotUnloaded, kLoadedAlready, kWaiting };
  // The model was unloaded while idle: LoadOnDemand, and Route again from its completion
  // (`fail` with the load's or the new Route's error).
  LoadWait WaitForLoad(const std::string& model, Status (*not_text)(const std::string& model), const StartFn& start,
                       const FailFn& fail);

  FindFn find_;
  ServingFn serving_;
  LoadOnDemandFn load_on_demand_;
  std::shared_ptr<std::atomic<int64_t>> running_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace inferloop::serve
