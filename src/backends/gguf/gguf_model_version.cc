#include "backends/gguf/gguf_model_version.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

#include "base/json_string.h"
#include "base/status_macros.h"
#include "llm/json_schema_grammar.h"
#include "llm/tool_calls.h"
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
  std::vector<std::string> echo;  // per choice: text to put before its first piece ("" once sent)
  std::atomic<bool> abandoned{false};  // a later prompt's Submit failed: report nothing
  bool tools = false;                      // chat with tools: answers may be tool calls
  std::vector<llm::ToolCallStream> calls;  // per choice, when `tools`
};

std::string NewCallId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof(buf), "call_%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

// Moves `p.text` through the choice's tool call stream: text stays text, a call becomes call pieces.
void ApplyToolEvents(const std::vector<llm::ToolCallStream::Event>& events, serve::TextPiece& p) {
  using Kind = llm::ToolCallStream::Event::Kind;
  for (const auto& e : events) {
    if (e.kind == Kind::kText) {
      p.text += e.text;
    } else if (e.kind == Kind::kCallStart) {
      p.call_id = NewCallId();
      p.call_name = e.text;
    } else {
      p.call_arguments += e.text;
    }
  }
}

void RouteToolCall(Generation& g, int index, serve::TextPiece& p) {
  if (!g.tools || p.text.empty()) return;
  std::string fresh = std::move(p.text);
  p.text.clear();
  ApplyToolEvents(g.calls[index].Push(fresh), p);
}

void ClearPiece(serve::TextPiece& p) {
  p.text.clear();
  p.tokens.clear();
  p.call_id.clear();
  p.call_name.clear();
  p.call_arguments.clear();
}

// Moves the echo text of choice `index` (if not yet sent) to the front of `p`.
void TakeEcho(Generation& g, int index, serve::TextPiece& p) {
  if (g.echo.empty() || g.echo[index].empty()) return;
  p.text.insert(0, g.echo[index]);
  g.echo[index].clear();
}

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
  RouteToolCall(g, index, p);
  if (!p.text.empty() || s.stopped()) TakeEcho(g, index, p);
  if (!p.text.empty() || p.has_call() || s.stopped()) {
    if (!p.text.empty() || p.has_call() || !p.tokens.empty()) g.on_piece(p);
    ClearPiece(p);
  }
}

// `r.index` is the choice's index in the whole request; `first_of_prompt`: it is choice 0 of its
// prompt (whose cached prompt tokens count).
void OnFinish(Generation& g, const llm::SequenceResult& r, bool first_of_prompt) {
  LlmModelSeries& m = *g.series;
  serve::TextPiece& p = g.pending[r.index];
  p.text += g.streams[r.index].Finish();
  RouteToolCall(g, r.index, p);
  bool called = false;
  if (g.tools) ApplyToolEvents(g.calls[r.index].Finish(r.reason == llm::FinishReason::kStop, &called), p);
  TakeEcho(g, r.index, p);
  if (!p.text.empty() || p.has_call() || !p.tokens.empty()) g.on_piece(p);
  ClearPiece(p);
  serve::TextChoiceEnd& end = g.result.choices[r.index];
  end.index = r.index;
  end.completion_tokens = r.generated_tokens;
  end.finish_reason = called ? "tool_calls" : r.reason == llm::FinishReason::kLength ? "length" : "stop";
  g.result.completion_tokens += r.generated_tokens;
  if (first_of_prompt) {
    g.result.cached_prompt_tokens += r.cached_prompt_tokens;
    g.disk_cached_prompt_tokens += r.disk_cached_prompt_tokens;
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
  auto chat = llm::ChatTemplate::FromGguf(model->file(), model->tokenizer());
  if (!chat.ok()) return chat.status().WithContext("'" + r.model_path + "'");
  v->chat_ = std::move(*chat);
  if (options.log) options.log->Info("chat_template", {{"model", r.model_name}, {"prompt_format", v->chat_.description()}});
  if (auto arch = model->file().GetString("general.architecture"); arch.ok()) {
    auto pooling = model->file().GetUnsigned(std::string(*arch) + ".pooling_type");
    if (pooling.ok()) v->pooling_type_ = static_cast<int64_t>(*pooling);
  }
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
  return {{name_, created_, model_->hparams().n_ctx_train, static_cast<int64_t>(model_->hparams().n_vocab)}};
}

namespace {

// The conversation a chat request renders. A model's own (Jinja) template gets the messages with
// their tool calls and, unless tool_choice is "none", the tools, as transformers passes them. The
// built-in fallback formats have no tool syntax: tool calls, results and (for "auto") the tools
// are written in the convention of src/llm/tool_calls.h.
Result<llm::ChatInput> ChatInputFor(const llm::ChatTemplate& chat, const serve::TextGenerationRequest& req) {
  using Choice = serve::TextGenerationRequest::ToolChoice;
  const bool show_tools = !req.tools.empty() && req.tool_choice != Choice::kNone;
  llm::ChatInput input;
  if (chat.uses_jinja()) {
    for (const auto& x : req.messages) {
      llm::ChatMessage m{x.role, x.content};
      if (!x.tool_calls.empty()) {
        m.content_is_null = x.content.empty();
        m.tool_calls_json = "[";
        for (size_t i = 0; i < x.tool_calls.size(); ++i) {
          const serve::TextToolCall& c = x.tool_calls[i];
          m.tool_calls_json += (i ? ",{\"id\":" : "{\"id\":") + JsonString(c.id) +
                               ",\"type\":\"function\",\"function\":{\"name\":" + JsonString(c.name) +
                               ",\"arguments\":" + JsonString(c.arguments) + "}}";
        }
        m.tool_calls_json += "]";
      }
      m.tool_call_id = x.tool_call_id;
      input.messages.push_back(std::move(m));
    }
    if (show_tools) {
      input.tools_json = "[";
      for (size_t i = 0; i < req.tools.size(); ++i) {
        const serve::TextTool& t = req.tools[i];
        input.tools_json += (i ? ",{\"type\":\"function\",\"function\":{\"name\":" : "{\"type\":\"function\",\"function\":{\"name\":") +
                            JsonString(t.name) + ",\"description\":" + JsonString(t.description) +
                            ",\"parameters\":" + t.parameters + "}}";
      }
      input.tools_json += "]";
    }
    return input;
  }
  bool tool_messages = show_tools;
  for (const auto& x : req.messages) tool_messages = tool_messages || x.role == "tool" || !x.tool_calls.empty();
  if (!tool_messages) {
    for (const auto& x : req.messages) input.messages.push_back({x.role, x.content});
    return input;
  }
  std::vector<llm::ToolChatMessage> tm;
  for (const auto& x : req.messages) {
    llm::ToolChatMessage m{x.role, x.content, {}, x.tool_call_id};
    for (const auto& c : x.tool_calls) m.tool_calls.push_back({c.id, c.name, c.arguments});
    tm.push_back(std::move(m));
  }
  std::vector<llm::ToolSpec> specs;
  if (req.tool_choice == Choice::kAuto) {  // (required / named: the grammar shapes the call)
    for (const auto& t : req.tools) specs.push_back({t.name, t.description, t.parameters});
  }
  input.messages = llm::ToolChatToPlain(tm, specs);
  return input;
}

// The token ids of each prompt (chat: the rendered conversation). InvalidArgument naming the
// field for no prompt, a prompt without tokens, or a token id outside the vocabulary.
Result<std::vector<std::vector<int32_t>>> PromptTokens(const llm::LlamaModel& model, const llm::ChatTemplate& chat,
                                                       const serve::TextGenerationRequest& req) {
  const llm::Tokenizer& tok = model.tokenizer();
  std::vector<std::vector<int32_t>> out;
  if (req.chat) {
    IL_ASSIGN_OR_RETURN(llm::ChatInput input, ChatInputFor(chat, req));
    bool add_bos = false;
    IL_ASSIGN_OR_RETURN(std::string text, chat.Render(input, &add_bos));
    out.push_back(tok.Encode(text, add_bos, /*parse_special=*/true));
    if (out.back().empty()) return Status::InvalidArgument("'messages' give an empty prompt");
    return out;
  }
  if (req.prompts.empty()) return Status::InvalidArgument("'prompt' must hold at least one prompt");
  const int64_t vocab = model.hparams().n_vocab;
  for (size_t i = 0; i < req.prompts.size(); ++i) {
    const serve::TextPrompt& p = req.prompts[i];
    const std::string which = req.prompts.size() > 1 ? "prompt " + std::to_string(i) : "the prompt";
    if (!p.is_tokens) {
      out.push_back(tok.Encode(p.text, /*add_bos=*/true, /*parse_special=*/false));
    } else {
      for (size_t j = 0; j < p.tokens.size(); ++j) {
        if (p.tokens[j] < 0 || p.tokens[j] >= vocab) {
          return Status::InvalidArgument("'prompt': token id " + std::to_string(p.tokens[j]) + " (" + which +
                                         ", position " + std::to_string(j) + ") is not in the model's vocabulary of " +
                                         std::to_string(vocab) + " tokens (ids 0.." + std::to_string(vocab - 1) + ")");
        }
      }
      out.push_back(p.tokens);
    }
    if (out.back().empty()) return Status::InvalidArgument("'prompt': " + which + " has no tokens");
  }
  return out;
}

// max_tokens checked against the context (`room`: the most tokens one sequence may hold), or
// resolved (asked < 0: as many as fit after the longest prompt).
Result<int> ResolveMaxTokens(int asked, size_t longest, int64_t ctx, int64_t room, bool chat) {
  const auto n = static_cast<int64_t>(longest);
  if (n >= ctx) {
    return Status::InvalidArgument(std::string("'") + (chat ? "messages" : "prompt") + "' is too long: " +
                                   std::to_string(n) + " tokens asked for, the model's context allows " +
                                   std::to_string(ctx) + " tokens in all (at most " + std::to_string(ctx - 1) +
                                   " prompt tokens, to leave room for one generated token)");
  }
  if (asked < 0) return static_cast<int>(std::max<int64_t>(1, std::min(ctx, room) - n));
  if (n + asked > ctx) {
    return Status::InvalidArgument("'max_tokens' is too large: the prompt (" + std::to_string(n) + " tokens) plus max_tokens (" +
                                   std::to_string(asked) + ") asks for " + std::to_string(n + asked) +
                                   " tokens, the model's context allows " + std::to_string(ctx) + " (at most " +
                                   std::to_string(ctx - n) + " new tokens after this prompt)");
  }
  return asked;
}

}  // namespace

Result<std::shared_ptr<llm::GrammarConstraint>> GgufModelVersion::Constraint(const serve::TextGenerationRequest& req) {
  using Format = serve::TextGenerationRequest::Format;
  using Choice = serve::TextGenerationRequest::ToolChoice;
  const bool tools = req.chat && req.tool_choice != Choice::kNone;
  if (req.format == Format::kText && !tools) return std::shared_ptr<llm::GrammarConstraint>();
  std::string key = req.format == Format::kJsonObject ? std::string("object")
                                                      : (req.json_schema_strict ? "strict:" : "schema:") + req.json_schema;
  std::vector<llm::ToolSpec> specs;
  bool strict = true;
  if (tools) {
    key = req.tool_choice == Choice::kAuto ? "tools-auto" : "tools";
    for (size_t i = 0; i < req.tools.size(); ++i) {
      const serve::TextTool& t = req.tools[i];
      if (req.tool_choice == Choice::kFunction && t.name != req.tool_choice_name) continue;
      if (auto g = llm::JsonSchemaToGrammar(t.parameters, {t.strict}); !g.ok()) {
        return Status::InvalidArgument("'tools[" + std::to_string(i) + "].function.parameters': " + g.status().message());
      }
      specs.push_back({t.name, t.description, t.parameters});
      strict = strict && t.strict;
      key += "\n" + t.name + "\n" + t.parameters;
    }
    key += strict ? "\nstrict" : "";
  }
  {
    std::lock_guard<std::mutex> l(grammar_mu_);
    if (auto it = grammars_.find(key); it != grammars_.end()) return it->second;
  }
  llm::Grammar grammar;
  if (tools) {
    auto g = llm::ToolCallGrammar(specs, strict, req.tool_choice == Choice::kAuto);
    if (!g.ok()) return Status::InvalidArgument("'tools': " + g.status().message());
    grammar = std::move(*g);
  } else if (req.format == Format::kJsonObject) {
    grammar = llm::JsonObjectGrammar();
  } else {
    auto g = llm::JsonSchemaToGrammar(req.json_schema, {req.json_schema_strict});
    if (!g.ok()) return Status::InvalidArgument("'response_format.json_schema.schema': " + g.status().message());
    grammar = std::move(*g);
  }
  std::lock_guard<std::mutex> l(grammar_mu_);
  if (!vocab_) vocab_ = llm::TokenVocabulary::FromTokenizer(model_->tokenizer());
  auto c = std::make_shared<llm::GrammarConstraint>(std::move(grammar), vocab_);
  if (grammars_.size() >= 16) grammars_.clear();
  grammars_[key] = c;
  return c;
}

Status GgufModelVersion::Generate(serve::TextGenerationRequest req,
                                  std::function<void(const serve::TextPiece&)> on_piece,
                                  std::function<void(const serve::TextGenerationResult&)> on_done) {
  if (draining_.load()) return Status::Unavailable("model '" + name_ + "' version " + std::to_string(version_) + " is draining");
  const llm::Tokenizer& tok = model_->tokenizer();
  IL_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> prompts, PromptTokens(*model_, chat_, req));
  size_t longest = 0, total_prompt = 0;
  for (const auto& p : prompts) {
    longest = std::max(longest, p.size());
    total_prompt += p.size();
  }
  // What the KV cache holds for one sequence of n choices, roughly (the engine checks exactly).
  const int64_t room = static_cast<int64_t>(engine_->kv_blocks() / req.n - 2) * engine_->options().block_tokens;
  IL_ASSIGN_OR_RETURN(req.max_tokens, ResolveMaxTokens(req.max_tokens, longest, model_->hparams().n_ctx_train, room, req.chat));
  llm::SamplingParams sp;
  sp.temperature = req.temperature;
  sp.top_k = req.top_k;
  sp.top_p = req.top_p;
  sp.min_p = req.min_p;
  sp.presence_penalty = req.presence_penalty;
  sp.frequency_penalty = req.frequency_penalty;
  sp.repetition_penalty = req.repetition_penalty;
  sp.logit_bias = req.logit_bias;
  sp.seed = req.seed ? *req.seed : std::random_device{}();
  if (Status st = llm::ValidateSamplingParams(sp, model_->hparams().n_vocab); !st.ok()) {
    const std::string& m = st.message();  // "<parameter> ...": quote the parameter for the frontend
    const size_t space = std::min(m.find(' '), m.size());
    return Status::InvalidArgument("'" + m.substr(0, space) + "'" + m.substr(space));
  }
  IL_ASSIGN_OR_RETURN(std::shared_ptr<llm::GrammarConstraint> constraint, Constraint(req));
  for (int32_t t : req.stop_token_ids) {
    if (t >= static_cast<int64_t>(model_->hparams().n_vocab)) {
      return Status::InvalidArgument("'stop_token_ids': token id " + std::to_string(t) +
                                     " is not in the model's vocabulary of " + std::to_string(model_->hparams().n_vocab) +
                                     " tokens (ids 0.." + std::to_string(model_->hparams().n_vocab - 1) + ")");
    }
  }
  const llm::EngineStats stats = engine_->stats();
  if (stats.token_backlog + static_cast<int64_t>(total_prompt) > options_.max_token_backlog && stats.token_backlog > 0) {
    return Status::ResourceExhausted("the server has " + std::to_string(stats.token_backlog) +
                                     " prompt tokens waiting (limit " + std::to_string(options_.max_token_backlog) +
                                     "); retry later");
  }
  const int choices = static_cast<int>(prompts.size()) * req.n;
  auto g = std::make_shared<Generation>();
  g->series = &series_;
  g->stats = stats_;
  g->on_piece = std::move(on_piece);
  g->on_done = std::move(on_done);
  g->remaining = choices;
  g->want_logprobs = req.logprobs >= 0;
  g->tools = req.chat && req.tool_choice != serve::TextGenerationRequest::ToolChoice::kNone;
  g->calls.resize(g->tools ? choices : 0);
  for (int i = 0; i < choices; ++i) {
    g->streams.emplace_back(req.stop);
    g->pending.push_back(serve::TextPiece{i, "", {}});
    if (req.echo) {
      const serve::TextPrompt& p = req.prompts[i / req.n];
      g->echo.push_back(p.is_tokens ? tok.DecodeText(p.tokens) : p.text);
    }
  }
  g->first_token.assign(choices, Clock::time_point{});
  g->tokens.assign(choices, 0);
  g->result.choices.resize(choices);
  g->result.prompt_tokens = static_cast<int>(total_prompt);

  // One engine request per prompt (its n choices share the prompt's blocks); all run concurrently.
  std::vector<llm::RequestHandle> handles;
  for (size_t pi = 0; pi < prompts.size(); ++pi) {
    const int base = static_cast<int>(pi) * req.n;
    llm::EngineRequest er;
    er.prompt = std::move(prompts[pi]);
    er.max_tokens = req.max_tokens;
    er.n = req.n;
    er.sampling = sp;
    er.sampling.seed = sp.seed + static_cast<uint64_t>(base);  // choice i of the request samples with seed + i
    er.priority = req.priority;
    er.top_logprobs = req.logprobs;
    er.stop_token_ids = req.stop_token_ids;
    er.cancel_flag = req.cancelled;
    er.constraint = constraint;
    er.on_token = [g, &tok, base](int index, const llm::GeneratedToken& t) {
      if (g->abandoned.load()) return false;
      OnToken(*g, tok, base + index, t);
      return !g->streams[base + index].stopped();
    };
    er.on_finish = [g, base](const llm::SequenceResult& r) {
      if (g->abandoned.load()) return;
      llm::SequenceResult c = r;
      c.index += base;
      OnFinish(*g, c, r.index == 0);
    };
    auto h = engine_->Submit(std::move(er));
    if (!h.ok()) {
      // Nothing is reported for the prompts already submitted: they are cancelled.
      g->abandoned.store(true);
      for (llm::RequestHandle& x : handles) x.Cancel();
      return h.status();
    }
    handles.push_back(*h);
  }
  return Status::Ok();
}

}  // namespace inferloop::backends
