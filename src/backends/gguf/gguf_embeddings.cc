// GgufModelVersion::Embed: POST /v1/embeddings over the version's LlmEngine. Each input is one
// engine request (embed = true) submitted together, so the inputs of a request are computed in
// the same steps (batched with any generation running).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>

#include "backends/gguf/gguf_model_version.h"
#include "base/status_macros.h"
#include "serve/version_statistics.h"

namespace inferloop::backends {

struct GgufModelVersion::Stats : serve::VersionStatistics {};

namespace {

using Clock = std::chrono::steady_clock;

// The pooling of a file's <arch>.pooling_type (-1: the key is absent: mean, documented).
Result<llm::Pooling> PoolingOf(const std::string& model, int64_t type) {
  switch (type) {
    case -1:
    case 1: return llm::Pooling::kMean;
    case 2: return llm::Pooling::kCls;
    case 3: return llm::Pooling::kLast;
    default: break;
  }
  const std::string what = type == 0 ? "none (one vector per token)" : type == 4 ? "rank (a reranker's score)"
                                                                                 : std::to_string(type);
  return Status::InvalidArgument("'model': model '" + model + "' has pooling type " + what +
                                 " in its GGUF metadata, which gives no single embedding per input");
}

// The token ids of every input, checked: no empty input, ids in the vocab, each within the context.
Result<std::vector<std::vector<int32_t>>> InputTokens(const llm::LlamaModel& model,
                                                      const serve::EmbeddingRequest& req) {
  if (req.inputs.empty()) return Status::InvalidArgument("'input' must hold at least one input");
  const int64_t vocab = model.hparams().n_vocab, ctx = model.hparams().n_ctx_train;
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const serve::TextPrompt& p = req.inputs[i];
    const std::string which = req.inputs.size() > 1 ? "input " + std::to_string(i) : "the input";
    if (!p.is_tokens) {
      if (p.text.empty()) return Status::InvalidArgument("'input': " + which + " is an empty string");
      out.push_back(model.tokenizer().Encode(p.text, /*add_bos=*/true, /*parse_special=*/false));
    } else {
      for (size_t j = 0; j < p.tokens.size(); ++j) {
        if (p.tokens[j] < 0 || p.tokens[j] >= vocab) {
          return Status::InvalidArgument("'input': token id " + std::to_string(p.tokens[j]) + " (" + which +
                                         ", position " + std::to_string(j) + ") is not in the model's vocabulary of " +
                                         std::to_string(vocab) + " tokens (ids 0.." + std::to_string(vocab - 1) + ")");
        }
      }
      out.push_back(p.tokens);
    }
    if (out.back().empty()) return Status::InvalidArgument("'input': " + which + " has no tokens");
    if (static_cast<int64_t>(out.back().size()) > ctx) {
      return Status::InvalidArgument("'input' is too long: " + which + " has " + std::to_string(out.back().size()) +
                                     " tokens, the model's context allows " + std::to_string(ctx));
    }
  }
  return out;
}

// What the engine's callbacks of one embeddings request share.
struct Embedding {
  LlmModelSeries* series = nullptr;
  std::shared_ptr<GgufModelVersion::Stats> stats;
  std::function<void(const serve::EmbeddingResult&)> on_done;
  std::mutex mu;
  serve::EmbeddingResult result;
  int dimensions = 0;
  int remaining = 0;
  double queue_seconds = 0;
  Clock::time_point start = Clock::now();
  std::atomic<bool> abandoned{false};  // a later input's Submit failed: report nothing
};

// The first `dims` values of `v`, L2-normalised again.
void Truncate(std::vector<float>& v, int dims) {
  if (dims <= 0 || dims >= static_cast<int>(v.size())) return;
  v.resize(dims);
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  norm = std::sqrt(norm);
  if (norm > 0)
    for (float& x : v) x = static_cast<float>(x / norm);
}

void OnInputDone(Embedding& e, const llm::SequenceResult& r) {
  std::lock_guard<std::mutex> l(e.mu);
  if (r.reason == llm::FinishReason::kCancelled && e.result.status.ok())
    e.result.status = Status(StatusCode::kCancelled, "the request was cancelled");
  if (r.reason == llm::FinishReason::kError && e.result.status.ok()) e.result.status = r.error;
  e.series->queue.Observe(r.queue_seconds);
  e.queue_seconds = std::max(e.queue_seconds, r.queue_seconds);
  if (--e.remaining > 0) return;
  for (auto& v : e.result.embeddings) Truncate(v, e.dimensions);
  e.series->prompt_tokens.Increment(e.result.prompt_tokens);
  e.series->embedding_inputs.Increment(static_cast<double>(e.result.embeddings.size()));
  const auto total = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - e.start);
  const auto queue = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(e.queue_seconds));
  if (e.result.status.ok()) {
    e.stats->RecordSuccess(1, queue, total - queue, total);
  } else {
    e.stats->RecordFailure(total);
  }
  e.on_done(e.result);
}

}  // namespace

Status GgufModelVersion::Embed(serve::EmbeddingRequest req, std::function<void(const serve::EmbeddingResult&)> on_done) {
  if (draining_.load()) return Status::Unavailable("model '" + name_ + "' version " + std::to_string(version_) + " is draining");
  IL_ASSIGN_OR_RETURN(const llm::Pooling pooling, PoolingOf(name_, pooling_type_));
  const int n_embd = static_cast<int>(model_->hparams().n_embd);
  if (req.dimensions < 0 || req.dimensions > n_embd) {
    return Status::InvalidArgument("'dimensions' must be between 1 and the model's " + std::to_string(n_embd) +
                                   ", got " + std::to_string(req.dimensions));
  }
  IL_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> inputs, InputTokens(*model_, req));
  int64_t total = 0;
  for (const auto& t : inputs) total += static_cast<int64_t>(t.size());
  const llm::EngineStats stats = engine_->stats();
  if (stats.token_backlog + total > options_.max_token_backlog && stats.token_backlog > 0) {
    return Status::ResourceExhausted("the server has " + std::to_string(stats.token_backlog) +
                                     " prompt tokens waiting (limit " + std::to_string(options_.max_token_backlog) +
                                     "); retry later");
  }
  auto e = std::make_shared<Embedding>();
  e->series = &series_;
  e->stats = stats_;
  e->on_done = std::move(on_done);
  e->dimensions = req.dimensions;
  e->remaining = static_cast<int>(inputs.size());
  e->result.embeddings.resize(inputs.size());
  e->result.prompt_tokens = static_cast<int>(total);
  std::vector<llm::RequestHandle> handles;
  for (size_t i = 0; i < inputs.size(); ++i) {
    llm::EngineRequest er;
    er.prompt = std::move(inputs[i]);
    er.embed = true;
    er.pooling = pooling;
    er.cancel_flag = req.cancelled;
    er.on_embedding = [e, i](std::vector<float> v) {
      std::lock_guard<std::mutex> l(e->mu);
      e->result.embeddings[i] = std::move(v);
    };
    er.on_finish = [e](const llm::SequenceResult& r) {
      if (!e->abandoned.load()) OnInputDone(*e, r);
    };
    auto h = engine_->Submit(std::move(er));
    if (!h.ok()) {
      e->abandoned.store(true);
      for (llm::RequestHandle& x : handles) x.Cancel();
      return h.status();
    }
    handles.push_back(*h);
  }
  return Status::Ok();
}

}  // namespace inferloop::backends
