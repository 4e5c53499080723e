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

namespace {

Status DoesNotGenerateText(const std::string& model) {
  return Status::InvalidArgument("model '" + model + "' does not generate text (infer with POST /v2/models/" + model +
                                 "/infer)");
}

Status ComputesNoEmbeddings(const std::string& model) {
  return Status::InvalidArgument("'model': model '" + model +
                                 "' is not a GGUF language model and computes no embeddings (infer with POST "
                                 "/v2/models/" + model + "/infer)");
}

}  // namespace

Status TextGenerationRouter::Generate(TextGenerationRequest req, std::function<void(const TextPiece&)> on_piece,
                                      std::function<void(const TextGenerationResult&)> on_done) {
  if (req.best_of > req.n) {  // generate the candidates; the selector returns the best n
    auto sel = std::make_shared<BestOfSelector>(req, std::move(on_piece), std::move(on_done));
    on_piece = [sel](const TextPiece& p) { sel->OnPiece(p); };
    on_done = [sel](const TextGenerationResult& r) { sel->OnDone(r); };
  }
  const std::string model = req.model;
  auto start = [req = std::move(req), on_piece, on_done](TextGenerationService& tg, std::function<void()> finished) {
    return tg.Generate(req, on_piece, [on_done, finished](const TextGenerationResult& r) {
      on_done(r);
      finished();
    });
  };
  auto fail = [on_done](const Status& st) {
    TextGenerationResult r;
    r.status = st;
    on_done(r);
  };
  return Route(model, DoesNotGenerateText, start, fail);
}

Status TextGenerationRouter::Embed(EmbeddingRequest req, std::function<void(const EmbeddingResult&)> on_done) {
  const std::string model = req.model;
  auto start = [req = std::move(req), on_done](TextGenerationService& tg, std::function<void()> finished) {
    return tg.Embed(req, [on_done, finished](const EmbeddingResult& r) {
      on_done(r);
      finished();
    });
  };
  auto fail = [on_done](const Status& st) { on_done(EmbeddingResult{st, {}, 0}); };
  return Route(model, ComputesNoEmbeddings, start, fail);
}

Status TextGenerationRouter::Route(const std::string& model, Status (*not_text)(const std::string& model),
                                   const StartFn& start, const FailFn& fail) {
  auto running = running_;
  for (int attempt = 0;; ++attempt) {
    auto found = find_(model);
    if (!found.ok() && found.status().code() == StatusCode::kUnavailable && load_on_demand_ && attempt < 3) {
      switch (WaitForLoad(model, not_text, start, fail)) {
        case LoadWait::kNotUnloaded: break;
        case LoadWait::kLoadedAlready: continue;
        case LoadWait::kWaiting: return Status::Ok();
      }
    }
    if (!found.ok()) {
      if (found.status().code() == StatusCode::kNotFound)
        return Status::NotFound("model '" + NameForMessage(model) + "' does not exist");
      return found.status();
    }
    std::shared_ptr<ModelVersion> v = std::move(found).value();
    TextGenerationService* tg = v->TextGeneration();
    if (tg == nullptr) return not_text(model);
    running->fetch_add(1);
    Status st = start(*tg, [running] { running->fetch_sub(1); });
    if (st.ok()) return st;
    running->fetch_sub(1);
    // A reload swapped the version out between Find and the start: go to the one serving now.
    if (st.code() != StatusCode::kUnavailable || attempt >= 3) return st;
    auto now = find_(model);
    if (!now.ok() || now.value() == v) return st;
  }
}

TextGenerationRouter::LoadWait TextGenerationRouter::WaitForLoad(const std::string& model,
                                                                 Status (*not_text)(const std::string& model),
                                                                 const StartFn& start, const FailFn& fail) {
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
  const bool accepted = load_on_demand_(model, [this, call, running, model, not_text, start, fail](
                                                   Result<std::shared_ptr<ModelVersion>> v) {
    {
      std::lock_guard<std::mutex> lock(call->mu);
      if (!call->returned) {
        call->answered_inline = true;
        return;
      }
    }
    Status st = v.ok() ? Route(model, not_text, start, fail) : v.status();
    if (!st.ok()) fail(st);
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
