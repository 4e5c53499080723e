#include "serve/llm_text_service.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "llm/chat_template.h"
#include "llm/text_stream.h"

namespace inferloop::serve {

using Clock = std::chrono::steady_clock;

struct LlmTextService::Families {
  HistogramFamily* ttft = nullptr;
  HistogramFamily* tpot = nullptr;
  HistogramFamily* queue = nullptr;
  CounterFamily* prompt_tokens = nullptr;
  CounterFamily* generation_tokens = nullptr;
  CounterFamily* prefix_hits = nullptr;
  CounterFamily* requests = nullptr;
  GaugeFamily* blocks_used = nullptr;
  GaugeFamily* blocks_free = nullptr;
  GaugeFamily* blocks_cached = nullptr;
  GaugeFamily* running = nullptr;
  GaugeFamily* waiting = nullptr;
  GaugeFamily* backlog = nullptr;

  void RemoveModel(const std::string& name);  // every series of model `name`
};

struct LlmTextService::Loaded {
  ~Loaded() { engine.reset(); }  // the engine's callbacks use the members below: stop it first

  std::string name;
  std::string path;
  int64_t created = 0;
  std::shared_ptr<const llm::LlamaModel> model;
  std::unique_ptr<llm::LlmEngine> engine;
  llm::ChatFormat chat = llm::ChatFormat::kPlain;
  Histogram ttft, tpot, queue;
  Counter prompt_tokens, generation_tokens, prefix_hits;
  Counter finished_stop, finished_length, finished_cancelled, finished_error;
};

namespace {

template <typename T>
T Child(T fallback, auto* family, const std::vector<std::string>& labels) {
  if (family == nullptr) return fallback;
  auto r = family->WithLabels(labels);
  return r.ok() ? *r : fallback;
}

std::vector<double> LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

LlmTextService::LlmTextService(LlmServiceOptions options, MetricsRegistry* registry)
    : options_(std::move(options)), registry_(registry), families_(std::make_unique<Families>()) {
  retirer_ = std::thread([this] { RetireLoop(); });
  if (registry_ == nullptr) return;
  auto& f = *families_;
  auto h = [&](const char* name, const char* help) {
    auto r = registry_->AddHistogram(name, help, {"model"}, LatencyBuckets());
    return r.ok() ? *r : nullptr;
  };
  auto c = [&](const char* name, const char* help, std::vector<std::string> labels = {"model"}) {
    auto r = registry_->AddCounter(name, help, std::move(labels));
    return r.ok() ? *r : nullptr;
  };
  auto g = [&](const char* name, const char* help) {
    auto r = registry_->AddGauge(name, help, {"model"});
    return r.ok() ? *r : nullptr;
  };
  f.ttft = h("inferloop_llm_time_to_first_token_seconds", "Time from request to its first generated token.");
  f.tpot = h("inferloop_llm_time_per_output_token_seconds", "Mean time between generated tokens of a choice.");
  f.queue = h("inferloop_llm_queue_time_seconds", "Time from request to the first step that computed it.");
  f.prompt_tokens = c("inferloop_llm_prompt_tokens_total", "Prompt tokens of finished requests.");
  f.generation_tokens = c("inferloop_llm_generation_tokens_total", "Generated tokens.");
  f.prefix_hits = c("inferloop_llm_prefix_cache_hit_tokens_total",
                    "Prompt tokens whose keys and values were reused from the prefix cache instead of computed.");
  f.requests = c("inferloop_llm_requests_total", "Finished choices by finish reason.", {"model", "finish_reason"});
  f.blocks_used = g("inferloop_llm_kv_blocks_used", "KV cache blocks in use (by sequences or the prefix cache).");
  f.blocks_free = g("inferloop_llm_kv_blocks_free", "Free KV cache blocks.");
  f.blocks_cached = g("inferloop_llm_kv_blocks_cached_idle", "KV cache blocks held only by the prefix cache (evictable).");
  f.running = g("inferloop_llm_running_sequences", "Sequences being computed.");
  f.waiting = g("inferloop_llm_waiting_sequences", "Sequences waiting to be scheduled.");
  f.backlog = g("inferloop_llm_token_backlog", "Prompt tokens waiting to be computed.");
}

void LlmTextService::Families::RemoveModel(const std::string& name) {
  for (auto* h : {ttft, tpot, queue}) {
    if (h) h->RemoveWhere("model", name);
  }
  for (auto* c : {prompt_tokens, generation_tokens, prefix_hits, requests}) {
    if (c) c->RemoveWhere("model", name);
  }
  for (auto* g : {blocks_used, blocks_free, blocks_cached, running, waiting, backlog}) {
    if (g) g->RemoveWhere("model", name);
  }
}

LlmTextService::~LlmTextService() {
  {
    std::lock_guard<std::mutex> l(retire_mu_);
    stopping_ = true;
  }
  retire_cv_.notify_all();
  if (retirer_.joinable()) retirer_.join();
  // Engines stop (cancelling what they still run) as their Loaded goes.
  retiring_.clear();
  std::lock_guard<std::mutex> l(mu_);
  models_.clear();
}

Status LlmTextService::LoadModel(const std::string& name, const std::string& path) {
  IL_ASSIGN_OR_RETURN(std::unique_ptr<llm::LlamaModel> model, llm::LlamaModel::Load(path));
  auto loaded = std::make_shared<Loaded>();
  loaded->name = name;
  loaded->path = path;
  loaded->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto chat = llm::ChatFormatOf(model->file());
  if (!chat.ok()) return chat.status().WithContext("'" + path + "'");
  loaded->chat = *chat;
  loaded->model = std::move(model);
  llm::EngineOptions eo = options_.engine;
  if (options_.prefix_cache_bytes >= 0) {
    const llm::KvCacheShape shape = loaded->model->kv_shape(eo.block_tokens, eo.kv_type);
    const int64_t block_bytes = static_cast<int64_t>(shape.block_bytes());
    eo.prefix_cache_blocks = static_cast<int>(std::min<int64_t>(options_.prefix_cache_bytes / block_bytes, 1 << 30));
  }
  IL_ASSIGN_OR_RETURN(loaded->engine, llm::LlmEngine::Create(loaded->model, eo));
  std::shared_ptr<Loaded> old;
  {
    // Under mu_, so that the retire thread's removal of an unloaded model's series cannot race
    // with binding them here.
    std::lock_guard<std::mutex> lock(mu_);
    const Families& f = *families_;
    const std::vector<std::string> l = {name};
    loaded->ttft = Child(Histogram(), f.ttft, l);
    loaded->tpot = Child(Histogram(), f.tpot, l);
    loaded->queue = Child(Histogram(), f.queue, l);
    loaded->prompt_tokens = Child(Counter(), f.prompt_tokens, l);
    loaded->generation_tokens = Child(Counter(), f.generation_tokens, l);
    loaded->prefix_hits = Child(Counter(), f.prefix_hits, l);
    loaded->finished_stop = Child(Counter(), f.requests, {name, "stop"});
    loaded->finished_length = Child(Counter(), f.requests, {name, "length"});
    loaded->finished_cancelled = Child(Counter(), f.requests, {name, "cancelled"});
    loaded->finished_error = Child(Counter(), f.requests, {name, "error"});
    Gauge used = Child(Gauge(), f.blocks_used, l), free_blocks = Child(Gauge(), f.blocks_free, l),
          cached = Child(Gauge(), f.blocks_cached, l), running = Child(Gauge(), f.running, l),
          waiting = Child(Gauge(), f.waiting, l), backlog = Child(Gauge(), f.backlog, l);
    auto publish = [=](const llm::EngineStats& s) mutable {
      used.Set(s.kv_blocks_used);
      free_blocks.Set(s.kv_blocks_total - s.kv_blocks_used);
      cached.Set(s.kv_blocks_cached_idle);
      running.Set(s.running);
      waiting.Set(s.waiting);
      backlog.Set(static_cast<double>(s.token_backlog));
    };
    publish(loaded->engine->stats());
    loaded->engine->SetStepObserver(std::move(publish));
    std::shared_ptr<Loaded>& slot = models_[name];
    old = std::move(slot);
    slot = loaded;
    // The gauges follow the serving engine from now on.
    if (old) old->engine->SetStepObserver(nullptr);
  }
  if (old) Retire(std::move(old));
  return Status::Ok();
}

Status LlmTextService::UnloadModel(const std::string& name) {
  std::shared_ptr<Loaded> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return Status::NotFound("LLM model '" + name + "' is not loaded");
    old = std::move(it->second);
    models_.erase(it);
    old->engine->SetStepObserver(nullptr);
  }
  Retire(std::move(old));
  return Status::Ok();
}

void LlmTextService::Retire(std::shared_ptr<Loaded> old) {
  if (options_.log) {
    const llm::EngineStats s = old->engine->stats();
    options_.log->Info("llm_model_draining", {{"model", old->name},
                                              {"path", old->path},
                                              {"running", std::to_string(s.running)},
                                              {"waiting", std::to_string(s.waiting)}});
  }
  {
    std::lock_guard<std::mutex> l(retire_mu_);
    retiring_.push_back(std::move(old));
  }
  retire_cv_.notify_all();
}

void LlmTextService::RetireLoop() {
  for (;;) {
    std::shared_ptr<Loaded> m;
    {
      std::unique_lock<std::mutex> l(retire_mu_);
      retire_cv_.wait(l, [&] { return stopping_ || !retiring_.empty(); });
      if (stopping_) return;
      m = retiring_.front();
    }
    const auto t0 = Clock::now();
    // Every accepted request finishes; checked in short waits so that shutdown is not held up.
    while (!m->engine->Drain(Clock::now() + std::chrono::milliseconds(100))) {
      std::lock_guard<std::mutex> l(retire_mu_);
      if (stopping_) return;
    }
    const llm::EngineStats s = m->engine->stats();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!models_.count(m->name)) families_->RemoveModel(m->name);
    }
    if (options_.log) {
      options_.log->Info("llm_model_unloaded",
                         {{"model", m->name},
                          {"path", m->path},
                          {"drain_seconds", std::to_string(std::chrono::duration<double>(Clock::now() - t0).count())},
                          {"generated_tokens", std::to_string(s.generated_tokens)}});
    }
    {
      std::lock_guard<std::mutex> l(retire_mu_);
      retiring_.pop_front();
    }
    m.reset();  // frees the engine and the model (a Generate racing the swap may hold it briefly)
  }
}

std::shared_ptr<LlmTextService::Loaded> LlmTextService::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : it->second;
}

std::vector<TextGenerationService::ModelInfo> LlmTextService::ListModels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelInfo> out;
  for (const auto& [name, m] : models_) out.push_back({m->name, m->created, m->model->hparams().n_ctx_train});
  return out;
}

bool LlmTextService::WaitIdle(std::chrono::steady_clock::time_point deadline) const {
  for (;;) {
    bool idle = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [name, m] : models_) {
        const llm::EngineStats s = m->engine->stats();
        if (s.running > 0 || s.waiting > 0) idle = false;
      }
    }
    {
      std::lock_guard<std::mutex> l(retire_mu_);
      if (!retiring_.empty()) idle = false;
    }
    if (idle) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::shared_ptr<const llm::LlmEngine> LlmTextService::Engine(const std::string& name) const {
  std::shared_ptr<Loaded> m = Find(name);
  if (m == nullptr) return nullptr;
  const llm::LlmEngine* e = m->engine.get();
  return std::shared_ptr<const llm::LlmEngine>(std::move(m), e);
}

namespace {

// Per request: the text streams of its choices and what on_done will report.
struct Generation {
  LlmTextService::Loaded* model = nullptr;
  std::function<void(const TextPiece&)> on_piece;
  std::function<void(const TextGenerationResult&)> on_done;
  std::vector<llm::TextStream> streams;
  std::vector<TextPiece> pending;  // tokens seen since the last emitted piece, per choice
  std::vector<Clock::time_point> first_token;
  std::vector<int> tokens;
  Clock::time_point start = Clock::now();
  TextGenerationResult result;
  int remaining = 0;
  bool want_logprobs = false;
};

}  // namespace

Status LlmTextService::Generate(TextGenerationRequest req, std::function<void(const TextPiece&)> on_piece,
                                std::function<void(const TextGenerationResult&)> on_done) {
  for (int attempt = 0;; ++attempt) {
    std::shared_ptr<Loaded> m = Find(req.model);
    if (m == nullptr) return Status::NotFound("model '" + req.model + "' does not exist");
    Status st = SubmitTo(m, req, on_piece, on_done);
    // A reload or unload swapped the engine out between Find and Submit (it refuses once
    // draining): the request goes to what serves the name now.
    if (st.code() != StatusCode::kUnavailable || attempt >= 3 || Find(req.model) == m) return st;
  }
}

Status LlmTextService::SubmitTo(const std::shared_ptr<Loaded>& loaded, const TextGenerationRequest& req,
                                const std::function<void(const TextPiece&)>& on_piece,
                                const std::function<void(const TextGenerationResult&)>& on_done) {
  Loaded* m = loaded.get();
  const llm::Tokenizer& tok = m->model->tokenizer();
  std::vector<int32_t> prompt;
  if (req.chat) {
    std::vector<llm::ChatMessage> msgs;
    for (const auto& x : req.messages) msgs.push_back({x.role, x.content});
    bool has_bos = false;
    IL_ASSIGN_OR_RETURN(std::string text, llm::RenderChat(m->chat, msgs, &has_bos));
    prompt = tok.Encode(text, /*add_bos=*/!has_bos, /*parse_special=*/true);
  } else {
    prompt = tok.Encode(req.prompt, /*add_bos=*/true, /*parse_special=*/false);
  }
  if (prompt.empty()) return Status::InvalidArgument("the prompt is empty");
  const llm::EngineStats stats = m->engine->stats();
  if (stats.token_backlog + static_cast<int64_t>(prompt.size()) > options_.max_token_backlog && stats.token_backlog > 0) {
    return Status::ResourceExhausted("the server has " + std::to_string(stats.token_backlog) +
                                     " prompt tokens waiting (limit " + std::to_string(options_.max_token_backlog) +
                                     "); retry later");
  }
  auto g = std::make_shared<Generation>();
  g->model = m;
  g->on_piece = on_piece;
  g->on_done = on_done;
  g->remaining = req.n;
  g->want_logprobs = req.logprobs >= 0;
  for (int i = 0; i < req.n; ++i) {
    g->streams.emplace_back(req.stop);
    g->pending.push_back(TextPiece{i, "", {}});
  }
  g->first_token.assign(req.n, Clock::time_point{});
  g->tokens.assign(req.n, 0);
  g->result.choices.resize(req.n);
  g->result.prompt_tokens = static_cast<int>(prompt.size());

  llm::EngineRequest er;
  er.prompt = std::move(prompt);
  er.max_tokens = req.max_tokens;
  er.n = req.n;
  er.sampling.temperature = req.temperature;
  er.sampling.top_k = req.top_k;
  er.sampling.top_p = req.top_p;
  er.sampling.seed = req.seed ? *req.seed : std::random_device{}();
  er.priority = req.priority;
  er.top_logprobs = req.logprobs;
  er.cancel_flag = req.cancelled;
  er.on_token = [g, &tok](int index, const llm::GeneratedToken& t) {
    if (g->first_token[index] == Clock::time_point{}) g->first_token[index] = Clock::now();
    ++g->tokens[index];
    const std::string piece = tok.Piece(t.token);
    TextPiece& p = g->pending[index];
    if (g->want_logprobs) {
      TextTokenLogprob lp{piece, t.logprob, {}};
      for (const auto& a : t.top) lp.top.emplace_back(tok.Piece(a.token), a.logprob);
      p.tokens.push_back(std::move(lp));
    }
    llm::TextStream& s = g->streams[index];
    p.text += s.Push(piece);
    if (!p.text.empty() || s.stopped()) {
      if (!p.text.empty() || !p.tokens.empty()) g->on_piece(p);
      p.text.clear();
      p.tokens.clear();
    }
    return !s.stopped();
  };
  er.on_finish = [g](const llm::SequenceResult& r) {
    Loaded* m = g->model;
    TextPiece& p = g->pending[r.index];
    p.text += g->streams[r.index].Finish();
    if (!p.text.empty() || !p.tokens.empty()) g->on_piece(p);
    p.text.clear();
    p.tokens.clear();
    TextChoiceEnd& end = g->result.choices[r.index];
    end.index = r.index;
    end.completion_tokens = r.generated_tokens;
    end.finish_reason = r.reason == llm::FinishReason::kLength ? "length" : "stop";
    g->result.completion_tokens += r.generated_tokens;
    if (r.index == 0) g->result.cached_prompt_tokens = r.cached_prompt_tokens;
    switch (r.reason) {
      case llm::FinishReason::kStop: m->finished_stop.Increment(); break;
      case llm::FinishReason::kLength: m->finished_length.Increment(); break;
      case llm::FinishReason::kCancelled:
        m->finished_cancelled.Increment();
        if (g->result.status.ok()) g->result.status = Status(StatusCode::kCancelled, "the request was cancelled");
        break;
      case llm::FinishReason::kError:
        m->finished_error.Increment();
        if (g->result.status.ok()) g->result.status = r.error;
        break;
    }
    m->generation_tokens.Increment(r.generated_tokens);
    m->queue.Observe(r.queue_seconds);
    if (g->first_token[r.index] != Clock::time_point{}) {
      m->ttft.Observe(std::chrono::duration<double>(g->first_token[r.index] - g->start).count());
      if (g->tokens[r.index] > 1) {
        m->tpot.Observe(std::chrono::duration<double>(Clock::now() - g->first_token[r.index]).count() /
                        (g->tokens[r.index] - 1));
      }
    }
    if (--g->remaining == 0) {
      m->prompt_tokens.Increment(g->result.prompt_tokens);
      m->prefix_hits.Increment(g->result.cached_prompt_tokens);
      g->on_done(g->result);
    }
  };
  auto h = m->engine->Submit(std::move(er));
  if (!h.ok()) return h.status();
  return Status::Ok();
}

}  // namespace inferloop::serve
