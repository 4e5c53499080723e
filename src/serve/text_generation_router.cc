#include "serve/text_generation_router.h"

#include <map>
#include <thread>

#include "serve/model_repository_layout.h"

namespace inferloop::serve {

TextGenerationRouter::TextGenerationRouter(FindFn find, ServingFn serving)
    : find_(std::move(find)), serving_(std::move(serving)) {}

std::vector<TextGenerationService::ModelInfo> TextGenerationRouter::ListModels() const {
  std::map<std::string, ModelInfo> by_name;  // the highest serving version of each model
  for (const auto& v : serving_()) {
    TextGenerationService* tg = v->TextGeneration();
    if (tg == nullptr) continue;
    for (auto& info : tg->ListModels()) by_name[info.name] = std::move(info);
  }
  std::vector<ModelInfo> out;
  for (auto& [name, info] : by_name) out.push_back(std::move(info));
  return out;
}

Status TextGenerationRouter::Generate(TextGenerationRequest req, std::function<void(const TextPiece&)> on_piece,
                                      std::function<void(const TextGenerationResult&)> on_done) {
  auto running = running_;
  auto done = [running, on_done = std::move(on_done)](const TextGenerationResult& r) {
    on_done(r);
    running->fetch_sub(1);
  };
  for (int attempt = 0;; ++attempt) {
    auto found = find_(req.model);
    if (!found.ok()) {
      if (found.status().code() == StatusCode::kNotFound)
        return Status::NotFound("model '" + NameForMessage(req.model) + "' does not exist");
      return found.status();
    }
    std::shared_ptr<ModelVersion> v = std::move(found).value();
    TextGenerationService* tg = v->TextGeneration();
    if (tg == nullptr)
      return Status::InvalidArgument("model '" + req.model + "' does not generate text (infer with POST /v2/models/" +
                                     req.model + "/infer)");
    running->fetch_add(1);
    Status st = tg->Generate(req, on_piece, done);
    if (st.ok()) return st;
    running->fetch_sub(1);
    // A reload swapped the version out between Find and Generate: go to the one serving now.
    if (st.code() != StatusCode::kUnavailable || attempt >= 3) return st;
    auto now = find_(req.model);
    if (!now.ok() || now.value() == v) return st;
  }
}

bool TextGenerationRouter::WaitIdle(std::chrono::steady_clock::time_point deadline) const {
  while (running_->load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace inferloop::serve
