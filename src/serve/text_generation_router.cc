#include "serve/text_generation_router.h"

#include <map>
#include <mutex>
#include <thread>

#include "serve/model_repository_layout.h"

namespace inferloop::serve {

TextGenerationRouter::TextGenerationRouter(FindFn find, ServingFn serving, LoadOnDemandFn load_on_demand)
    : find_(std::move(find)), serving_(std::move(serving)), load_on_demand_(std::move(load_on_demand)) {}

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
  // A copy: on_done itself is still needed when the model has to be loaded first (WaitForLoad).
  auto done = [running, on_done](const TextGenerationResult& r) {
    on_done(r);
    running->fetch_sub(1);
  };
  for (int attempt = 0;; ++attempt) {
    auto found = find_(req.model);
    if (!found.ok() && found.status().code() == StatusCode::kUnavailable && load_on_demand_ && attempt < 3) {
      switch (WaitForLoad(req, on_piece, on_done)) {
        case LoadWait::kNotUnloaded: break;
        case LoadWait::kLoadedAlready: continue;
        case LoadWait::kWaiting: return Status::Ok();
      }
    }
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

TextGenerationRouter::LoadWait TextGenerationRouter::WaitForLoad(
    const TextGenerationRequest& req, const std::function<void(const TextPiece&)>& on_piece,
    const std::function<void(const TextGenerationResult&)>& on_done) {
  // The load may answer before LoadOnDemand returns (loaded since we looked): then the caller
  // simply looks again, on its own thread.
  struct Call {
    std::mutex mu;
    bool returned = false;
    bool answered_inline = false;
  };
  auto call = std::make_shared<Call>();
  auto running = running_;
  running->fetch_add(1);
  const bool accepted = load_on_demand_(req.model, [this, call, running, req, on_piece, on_done](
                                                       Result<std::shared_ptr<ModelVersion>> v) {
    {
      std::lock_guard<std::mutex> lock(call->mu);
      if (!call->returned) {
        call->answered_inline = true;
        return;
      }
    }
    Status st = v.ok() ? Generate(req, on_piece, on_done) : v.status();
    if (!st.ok()) {
      TextGenerationResult r;
      r.status = st;
      on_done(r);
    }
    running->fetch_sub(1);
  });
  std::lock_guard<std::mutex> lock(call->mu);
  call->returned = true;
  if (!accepted || call->answered_inline) running->fetch_sub(1);
  if (!accepted) return LoadWait::kNotUnloaded;
  return call->answered_inline ? LoadWait::kLoadedAlready : LoadWait::kWaiting;
}

bool TextGenerationRouter::WaitIdle(std::chrono::steady_clock::time_point deadline) const {
  while (running_->load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace inferloop::serve
