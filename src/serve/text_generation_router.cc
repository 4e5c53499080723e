#include "serve/text_generation_router.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "serve/best_of.h"
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
  if (req.best_of > req.n) {  // generate the candidates; the selector returns the best n
    auto sel = std::make_shared<BestOfSelector>(req, std::move(on_piece), std::move(on_done));
    on_piece = [sel](const TextPiece& p) { sel->OnPiece(p); };
    on_done = [sel](const TextGenerationResult& r) { sel->OnDone(r); };
  }
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

Status TextGenerationRouter::Embed(EmbeddingRequest req, std::function<void(const EmbeddingResult&)> on_done) {
  auto running = running_;
  auto done = [running, on_done](const EmbeddingResult& r) {
    on_done(r);
    running->fetch_sub(1);
  };
  for (int attempt = 0;; ++attempt) {
    auto found = find_(req.model);
    if (!found.ok() && found.status().code() == StatusCode::kUnavailable && load_on_demand_ && attempt < 3) {
      // Unloaded while idle: load it, then embed from the load's completion (or look again when
      // the load answered at once).
      auto inline_answer = std::make_shared<std::atomic<int>>(0);  // 0 pending, 1 returned, 2 inline
      running->fetch_add(1);
      const bool accepted = load_on_demand_(req.model, [this, req, on_done, running, inline_answer](
                                                           Result<std::shared_ptr<ModelVersion>> v) {
        int expected = 0;
        if (inline_answer->compare_exchange_strong(expected, 2)) return;  // answered before returning
        Status st = v.ok() ? Embed(req, on_done) : v.status();
        if (!st.ok()) on_done(EmbeddingResult{st, {}, 0});
        running->fetch_sub(1);
      });
      int expected = 0;
      const bool waiting = accepted && inline_answer->compare_exchange_strong(expected, 1);
      if (!waiting) running->fetch_sub(1);
      if (waiting) return Status::Ok();
      if (accepted) continue;
    }
    if (!found.ok()) {
      if (found.status().code() == StatusCode::kNotFound)
        return Status::NotFound("model '" + NameForMessage(req.model) + "' does not exist");
      return found.status();
    }
    std::shared_ptr<ModelVersion> v = std::move(found).value();
    TextGenerationService* tg = v->TextGeneration();
    if (tg == nullptr)
      return Status::InvalidArgument("'model': model '" + req.model +
                                     "' is not a GGUF language model and computes no embeddings (infer with POST "
                                     "/v2/models/" + req.model + "/infer)");
    running->fetch_add(1);
    Status st = tg->Embed(req, done);
    if (st.ok()) return st;
    running->fetch_sub(1);
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
