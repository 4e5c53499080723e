#include "backends/gguf/gguf_model_version.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "base/status_macros.h"
#include "llm/text_stream.h"
#include "serve/version_statistics.h"

namespace inferloop::backends {

using Clock = std::chrono::steady_clock;

struct GgufModelVersion::Stats : serve::VersionStatistics {};

namespace {

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// Per request: the text streams of its choices and what on_done will report.
struct Generation {
  LlmModelSeries* series = nullptr;
  std::shared_ptr<GgufModelVersion::Stats> stats;
  std::function<void(const serve::TextPiece&)> on_piece;
  std::function<void(const serve::TextGenerationResult&)> on_done;
  std::vector<llm::TextStream> streams;
  std::vector<serve::TextPiece> pending;  // tokens seen since the last emitted piece, per choice
  std::vector<Clock::time_point> first_token;
  std::vector<int> tokens;
  Clock::time_point start = Clock::now();
  double queue_seconds = 0;
  serve::TextGenerationResult result;
  int disk_cached_prompt_tokens = 0;  // of result.cached_prompt_tokens
  int remaining = 0;
  bool want_logprobs = false;
};

void OnToken(Generation& g, const llm::Tokenizer& tok, int index, const llm::GeneratedToken& t) {
  if (g.first_token[index] == Clock::time_point{}) g.first_token[index] = Clock::now();
  ++g.tokens[index];
  const std::string piece = tok.Piece(t.token);
  serve::TextPiece& p = g.pending[index];
  if (g.want_logprobs) {
    serve::TextTokenLogprob lp{piece, t.logprob, {}};
    for (const auto& a : t.top) lp.top.emplace_back(tok.Piece(a.token), a.logprob);
    p.tokens.push_back(std::move(lp));
  }
  llm::TextStream& s = g.streams[index];
  p.text += s.Push(piece);
  if (!p.text.empty() || s.stopped()) {
    if (!p.text.empty() || !p.tokens.empty()) g.on_piece(p);
    p.text.clear();
    p.tokens.clear();
  }
}

void OnFinish(Generation& g, const llm::SequenceResult& r) {
  LlmModelSeries& m = *g.series;
  serve::TextPiece& p = g.pending[r.index];
  p.text += g.streams[r.index].Finish();
  if (!p.text.empty() || !p.tokens.empty()) g.on_piece(p);
  p.text.clear();
  p.tokens.clear();
  serve::TextChoiceEnd& end = g.result.choices[r.index];
  end.index = r.index;
  end.completion_tokens = r.generated_tokens;
  end.finish_reason = r.reason == llm::FinishReason::kLength ? "length" : "stop";
  g.result.completion_tokens += r.generated_tokens;
  if (r.index == 0) {
    g.result.cached_prompt_tokens = r.cached_prompt_tokens;
    g.disk_cached_prompt_tokens = r.disk_cached_prompt_tokens;
  }
  switch (r.reason) {
    case llm::FinishReason::kStop: m.finished_stop.Increment(); break;
    case llm::FinishReason::kLength: m.finished_length.Increment(); break;
    case llm::FinishReason::kCancelled:
      m.finished_cancelled.Increment();
      if (g.result.status.ok()) g.result.status = Status(StatusCode::kCancelled, "the request was cancelled");
      break;
    case llm::FinishReason::kError:
      m.finished_error.Increment();
      if (g.result.status.ok()) g.result.status = r.error;
      break;
  }
  m.generation_tokens.Increment(r.generated_tokens);
  m.queue.Observe(r.queue_seconds);
  g.queue_seconds = std::max(g.queue_seconds, r.queue_seconds);
  if (g.first_token[r.index] != Clock::time_point{}) {
    m.ttft.Observe(std::chrono::duration<double>(g.first_token[r.index] - g.start).count());
    if (g.tokens[r.index] > 1) {
      m.tpot.Observe(std::chrono::duration<double>(Clock::now() - g.first_token[r.index]).count() /
                     (g.tokens[r.index] - 1));
    }
  }
  if (--g.remaining > 0) return;
  m.prompt_tokens.Increment(g.result.prompt_tokens);
  m.prefix_hits_memory.Increment(g.result.cached_prompt_tokens - g.disk_cached_prompt_tokens);
  m.prefix_hits_disk.Increment(g.disk_cached_prompt_tokens);
  const auto total = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - g.start);
  const auto queue = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(g.queue_seconds));
  if (g.result.status.ok()) {
    g.stats->RecordSuccess(1, queue, total - queue, total);
  } else {
    g.stats->RecordFailure(total);
  }
  g.on_done(g.result);
}

}  // namespace

GgufModelVersion::GgufModelVersion(std::string name, int64_t version)
    : name_(std::move(name)), version_(version), stats_(std::make_shared<Stats>()) {}

GgufModelVersion::~GgufModelVersion() {
  engine_.reset();  // cancels what is left; its callbacks use the members below
  if (metrics_) metrics_->Release(name_);
}

Result<std::shared_ptr<GgufModelVersion>> GgufModelVersion::Load(const serve::VersionLoadRequest& r,
                                                                 const GgufBackendOptions& options, LlmMetrics* metrics) {
  if (r.progress) r.progress("reading " + r.model_path);
  IL_ASSIGN_OR_RETURN(std::unique_ptr<llm::LlamaModel> model, llm::LlamaModel::Load(r.model_path));
  auto v = std::make_shared<GgufModelVersion>(r.model_name, r.version);
  v->path_ = r.model_path;
  v->config_ = r.partial_config;
  if (v->config_.backend().empty()) v->config_.set_backend("gguf");
  v->options_ = options;
  v->created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  v->file_bytes_ = FileBytes(r.model_path);
  auto chat = llm::ChatFormatOf(model->file());
  if (!chat.ok()) return chat.status().WithContext("'" + r.model_path + "'");
  v->chat_ = *chat;
  v->model_ = std::move(model);
  llm::EngineOptions eo = options.engine;
  const llm::KvCacheShape shape = v->model_->kv_shape(eo.block_tokens, eo.kv_type);
  const int64_t block_bytes = static_cast<int64_t>(shape.block_bytes());
  if (options.prefix_cache_bytes >= 0)
    eo.prefix_cache_blocks = static_cast<int>(std::min<int64_t>(options.prefix_cache_bytes / block_bytes, 1 << 30));
  eo.prefix_cache_dir = options.prefix_cache_dir;
  eo.prefix_cache_disk_bytes = options.prefix_cache_disk_bytes;
  if (r.progress) r.progress("starting the engine");
  IL_ASSIGN_OR_RETURN(v->engine_, llm::LlmEngine::Create(v->model_, eo));
  v->kv_bytes_ = block_bytes * v->engine_->kv_blocks();
  v->metrics_ = metrics;
  v->series_ = metrics->Acquire(r.model_name);
  v->series_.publish(v->engine_->stats());
  v->engine_->SetStepObserver(v->series_.publish);  // the gauges follow the newest version
  return v;
}

std::vector<std::pair<std::string, std::string>> GgufModelVersion::LoadDetails() const {
  return {{"path", path_},
          {"kv_blocks", std::to_string(engine_->kv_blocks())},
          {"kv_block_tokens", std::to_string(engine_->options().block_tokens)},
          {"kv_type", llm::KvTypeName(engine_->options().kv_type)}};
}

bool GgufModelVersion::Infer(serve::InferRequest&&, serve::RequestContext&&, serve::InferCallback&& done,
                             serve::AdmissionTicket&& ticket) {
  ticket.Release();
  done(Status::InvalidArgument("model '" + name_ +
                               "' is a GGUF text-generation model: use POST /v1/completions or /v1/chat/completions"));
  return true;
}

void GgufModelVersion::Drain() {
  if (draining_.exchange(true)) return;
  engine_->SetStepObserver(nullptr);
  if (options_.log) {
    const llm::EngineStats s = engine_->stats();
    options_.log->Info("llm_engine_draining", {{"model", name_}, {"version", std::to_string(version_)},
                                               {"running", std::to_string(s.running)},
                                               {"waiting", std::to_string(s.waiting)}});
  }
  // Every accepted request finishes (streams in flight complete).
  while (!engine_->Drain(Clock::now() + std::chrono::milliseconds(100))) {
  }
}

serve::ModelMetadata GgufModelVersion::Metadata() const {
  serve::ModelMetadata m;
  m.name = name_;
  m.versions = {std::to_string(version_)};
  m.platform = "gguf";
  m.memory_bytes = MemoryBytes();
  return m;
}

serve::ModelStatistics GgufModelVersion::Statistics() const { return stats_->Snapshot(name_, version_, MemoryBytes()); }

int64_t GgufModelVersion::MemoryBytes() const { return file_bytes_ + kv_bytes_; }

int64_t GgufModelVersion::QueueDepth() const {
  const llm::EngineStats s = engine_->stats();
  return s.waiting;
}

std::vector<serve::TextGenerationService::ModelInfo> GgufModelVersion::ListModels() const {
  return {{name_, created_, model_->hparams().n_ctx_train}};
}

Status GgufModelVersion::Generate(serve::TextGenerationRequest req,
                                  std::function<void(const serve::TextPiece&)> on_piece,
                                  std::function<void(const serve::TextGenerationResult&)> on_done) {
  if (draining_.load()) return Status::Unavailable("model '" + name_ + "' version " + std::to_string(version_) + " is draining");
  const llm::Tokenizer& tok = model_->tokenizer();
  std::vector<int32_t> prompt;
  if (req.chat) {
    std::vector<llm::ChatMessage> msgs;
    for (const auto& x : req.messages) msgs.push_back({x.role, x.content});
    bool has_bos = false;
    IL_ASSIGN_OR_RETURN(std::string text, llm::RenderChat(chat_, msgs, &has_bos));
    prompt = tok.Encode(text, /*add_bos=*/!has_bos, /*parse_special=*/true);
  } else {
    prompt = tok.Encode(req.prompt, /*add_bos=*/true, /*parse_special=*/false);
  }
  if (prompt.empty()) return Status::InvalidArgument("the prompt is empty");
  const llm::EngineStats stats = engine_->stats();
  if (stats.token_backlog + static_cast<int64_t>(prompt.size()) > options_.max_token_backlog && stats.token_backlog > 0) {
    return Status::ResourceExhausted("the server has " + std::to_string(stats.token_backlog) +
                                     " prompt tokens waiting (limit " + std::to_string(options_.max_token_backlog) +
                                     "); retry later");
  }
  auto g = std::make_shared<Generation>();
  g->series = &series_;
  g->stats = stats_;
  g->on_piece = std::move(on_piece);
  g->on_done = std::move(on_done);
  g->remaining = req.n;
  g->want_logprobs = req.logprobs >= 0;
  for (int i = 0; i < req.n; ++i) {
    g->streams.emplace_back(req.stop);
    g->pending.push_back(serve::TextPiece{i, "", {}});
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
    OnToken(*g, tok, index, t);
    return !g->streams[index].stopped();
  };
  er.on_finish = [g](const llm::SequenceResult& r) { OnFinish(*g, r); };
  auto h = engine_->Submit(std::move(er));
  if (!h.ok()) return h.status();
  return Status::Ok();
}

}  // namespace inferloop::backends
