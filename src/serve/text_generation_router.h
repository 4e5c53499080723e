// TextGenerationRouter: the OpenAI-compatible API's TextGenerationService over the model
// manager's versions: the models listed are those whose serving version generates text
// (ModelVersion::TextGeneration: GGUF models today), and a generation goes to the version
// serving its model now. A version that began draining between the lookup and the submit
// (a hot reload) refuses with Unavailable; the request is then sent to its replacement, so a
// reload loses no request. Thread-safe.
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
  // `find`: the version serving a model now (ModelManager::Find semantics); `serving`: every
  // serving version.
  TextGenerationRouter(FindFn find, ServingFn serving);

  std::vector<ModelInfo> ListModels() const override;
  // Errors: NotFound for an unknown model; InvalidArgument for a model that does not generate
  // text; the version's own errors.
  Status Generate(TextGenerationRequest request, std::function<void(const TextPiece&)> on_piece,
                  std::function<void(const TextGenerationResult&)> on_done) override;

  // Waits until no generation started here is running (or `deadline` passes); true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) const;

 private:
  FindFn find_;
  ServingFn serving_;
  std::shared_ptr<std::atomic<int64_t>> running_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace inferloop::serve
