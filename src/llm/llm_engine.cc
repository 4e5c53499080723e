#include "llm/llm_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>

#include "base/thread_pool.h"
#include "llm/prefix_cache.h"

namespace inferloop::llm {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: break;
  }
  return "error";
}

namespace {

// What the choices of one request share.
struct RequestState {
  EngineRequest req;
  std::shared_ptr<std::atomic<bool>> cancelled;
  uint64_t arrival = 0;
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
};

struct Sequence {
  std::shared_ptr<RequestState> rs;
  int index = 0;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int prompt_len = 0;
  int generated = 0;
  int computed = 0;             // leading tokens whose keys/values are in `kv`
  int inserted_blocks = 0;      // full blocks already offered to the prefix cache
  int cached_prompt_tokens = 0;
  int preemptions = 0;
  int pending_forks = 0;        // choices still to fork off after the prefill
  bool counted_prompt = false;
  double queue_seconds = -1;    // set when first admitted
  KvSequence kv;
  Sampler sampler;
  Sequence(std::shared_ptr<RequestState> r, int idx, KvBlockPool* pool, const SamplingParams& p)
      : rs(std::move(r)), index(idx), kv(pool), sampler(p) {}
};

using SeqPtr = std::unique_ptr<Sequence>;

// Larger priority first, then earlier arrival, then choice index.
bool RunsBefore(const Sequence& a, const Sequence& b) {
  if (a.rs->req.priority != b.rs->req.priority) return a.rs->req.priority > b.rs->req.priority;
  if (a.rs->arrival != b.rs->arrival) return a.rs->arrival < b.rs->arrival;
  return a.index < b.index;
}

void FillLogprobs(std::span<const float> logits, int32_t chosen, int top, GeneratedToken* out) {
  float mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - mx));
  const float lse = mx + static_cast<float>(std::log(sum));
  out->logprob = logits[chosen] - lse;
  if (top <= 0) return;
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t k = std::min<size_t>(top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (size_t i = 0; i < k; ++i) out->top.push_back({ids[i], logits[ids[i]] - lse});
}

}  // namespace

struct LlmEngine::Impl {
  std::shared_ptr<const LlamaModel> model;
  EngineOptions opt;
  KvBlockPool pool;
  std::unique_ptr<PrefixCache> cache;
  ThreadPool* threads = nullptr;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<RequestState>> inbox;
  bool stopping = false;
  bool draining = false;  // Submit refuses (Drain was called)
  // No request is queued, waiting or running and every callback has returned. Set by the worker
  // after a step, cleared by Submit; Drain waits on idle_cv for it.
  bool quiet = true;
  std::condition_variable idle_cv;
  uint64_t next_arrival = 0;
  EngineStats stats;
  std::function<void(const EngineStats&)> step_observer;
  std::thread worker;

  // Owned by the worker thread.
  std::vector<SeqPtr> waiting;  // kept sorted by RunsBefore
  std::vector<SeqPtr> running;

  Impl(std::shared_ptr<const LlamaModel> m, EngineOptions o, KvBlockPool p)
      : model(std::move(m)), opt(o), pool(std::move(p)) {}

  int BlocksFor(int64_t tokens) const { return static_cast<int>((tokens + opt.block_tokens - 1) / opt.block_tokens); }

  void Finish(SeqPtr s, FinishReason reason, Status error = Status::Ok()) {
    SequenceResult r;
    r.index = s->index;
    r.reason = reason;
    r.error = std::move(error);
    r.prompt_tokens = s->prompt_len;
    r.cached_prompt_tokens = s->cached_prompt_tokens;
    r.generated_tokens = s->generated;
    r.preemptions = s->preemptions;
    r.queue_seconds = s->queue_seconds < 0
                          ? std::chrono::duration<double>(std::chrono::steady_clock::now() - s->rs->submitted).count()
                          : s->queue_seconds;
    // Forks not made yet finish with the parent (cancel / error before the prefill ended).
    const int forks = s->pending_forks;
    s->kv.Reset();
    if (cache) cache->Trim();
    auto rs = s->rs;
    s.reset();
    PublishStats();  // before the callback, so a caller woken by it sees the blocks returned
    if (rs->req.on_finish) {
      rs->req.on_finish(r);
      for (int i = 0; i < forks; ++i) {
        SequenceResult f = r;
        f.index = s->index + 1 + i;
        f.generated_tokens = 0;
        rs->req.on_finish(f);
      }
    }
  }

  void InsertWaiting(SeqPtr s) {
    auto pos = std::upper_bound(waiting.begin(), waiting.end(), s,
                                [](const SeqPtr& a, const SeqPtr& b) { return RunsBefore(*a, *b); });
    waiting.insert(pos, std::move(s));
  }

  void Preempt(size_t running_index) {
    SeqPtr s = std::move(running[running_index]);
    running.erase(running.begin() + running_index);
    OfferFullBlocks(*s);
    s->kv.Reset();
    s->computed = 0;
    s->inserted_blocks = 0;
    ++s->preemptions;
    {
      std::lock_guard<std::mutex> l(mu);
      ++stats.preemptions;
    }
    if (cache) cache->Trim();
    InsertWaiting(std::move(s));
  }

  // Full blocks whose keys/values are computed go to the prefix cache.
  void OfferFullBlocks(Sequence& s) {
    if (!cache) return;
    const int full = s.computed / opt.block_tokens;
    for (int b = s.inserted_blocks; b < full && b < static_cast<int>(s.kv.blocks().size()); ++b) {
      cache->Insert(s.tokens, b, s.kv.blocks()[b]);
    }
    s.inserted_blocks = std::max(s.inserted_blocks, full);
  }

  // Index in `running` of the sequence to preempt: the one that runs last.
  size_t LowestRunning() const {
    size_t worst = 0;
    for (size_t i = 1; i < running.size(); ++i) {
      if (RunsBefore(*running[worst], *running[i])) worst = i;
    }
    return worst;
  }

  void DrainInbox() {
    std::deque<std::shared_ptr<RequestState>> in;
    {
      std::lock_guard<std::mutex> l(mu);
      in.swap(inbox);
    }
    for (auto& rs : in) {
      auto s = std::make_unique<Sequence>(rs, 0, &pool, rs->req.sampling);
      s->tokens = rs->req.prompt;
      s->prompt_len = static_cast<int>(rs->req.prompt.size());
      s->pending_forks = rs->req.n - 1;
      InsertWaiting(std::move(s));
    }
  }

  void DropCancelled() {
    for (auto* list : {&running, &waiting}) {
      for (size_t i = 0; i < list->size();) {
        const RequestState& rs = *(*list)[i]->rs;
        if (rs.cancelled->load() || (rs.req.cancel_flag && rs.req.cancel_flag->load())) {
          SeqPtr s = std::move((*list)[i]);
          list->erase(list->begin() + i);
          Finish(std::move(s), FinishReason::kCancelled);
        } else {
          ++i;
        }
      }
    }
  }

  // One scheduling step. Returns false when there was nothing to do.
  bool Step() {
    DrainInbox();
    DropCancelled();
    if (running.empty() && waiting.empty()) return false;
    std::sort(running.begin(), running.end(), [](const SeqPtr& a, const SeqPtr& b) { return RunsBefore(*a, *b); });

    struct Planned {
      Sequence* seq;
      int from;
      int count;
      bool logits;
    };
    std::vector<Planned> plan;
    int budget = opt.max_batch_tokens;
    // 1. Sequences already running: decodes (one token) and prompts being prefilled (a chunk).
    for (size_t i = 0; i < running.size() && budget > 0;) {
      Sequence& s = *running[i];
      const int need = static_cast<int>(s.tokens.size()) - s.computed;
      const int k = std::min(need, budget);
      Status st = s.kv.Reserve(s.computed + k);
      while (!st.ok() && running.size() > 1) {
        const size_t victim = LowestRunning();
        if (victim == i) break;
        // Planned work of the victim is dropped with it.
        Sequence* v = running[victim].get();
        plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const Planned& p) {
                     if (p.seq == v) budget += p.count;
                     return p.seq == v;
                   }),
                   plan.end());
        Preempt(victim);
        if (victim < i) --i;
        st = s.kv.Reserve(s.computed + k);
      }
      if (!st.ok()) {  // this sequence is the lowest itself: it waits
        Preempt(i);
        continue;
      }
      st = s.kv.PrepareWrite(s.computed);
      if (!st.ok()) {
        Preempt(i);
        continue;
      }
      plan.push_back({&s, s.computed, k, s.computed + k == static_cast<int>(s.tokens.size())});
      budget -= k;
      ++i;
    }
    // 2. Admit waiting sequences while the budget and the blocks allow.
    while (budget > 0 && !waiting.empty() && static_cast<int>(running.size()) < opt.max_running) {
      Sequence& w = *waiting.front();
      const int len = static_cast<int>(w.tokens.size());
      if (cache && w.kv.blocks().empty()) {
        // Whole blocks of the prefix, never the last token (its logits are needed).
        std::vector<int> hit = cache->Match(w.tokens, (len - 1) / opt.block_tokens);
        w.computed = static_cast<int>(hit.size()) * opt.block_tokens;
        w.inserted_blocks = static_cast<int>(hit.size());
        w.kv.Adopt(std::move(hit));
      }
      const int blocks_needed = BlocksFor(len + 1) - static_cast<int>(w.kv.blocks().size());
      bool fits = pool.EnsureFree(blocks_needed);
      // A more important request may take the blocks of less important running ones.
      while (!fits && !running.empty() && RunsBefore(w, *running[LowestRunning()])) {
        const size_t victim = LowestRunning();
        Sequence* v = running[victim].get();
        plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const Planned& p) {
                     if (p.seq == v) budget += p.count;
                     return p.seq == v;
                   }),
                   plan.end());
        Preempt(victim);
        fits = pool.EnsureFree(blocks_needed);
      }
      if (!fits) {
        w.kv.Reset();  // give matched blocks back; retry next step
        w.computed = 0;
        w.inserted_blocks = 0;
        break;
      }
      SeqPtr s = std::move(waiting.front());
      waiting.erase(waiting.begin());
      if (s->queue_seconds < 0) {
        s->queue_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s->rs->submitted).count();
      }
      if (!s->counted_prompt) {
        s->counted_prompt = true;
        s->cached_prompt_tokens = s->computed;
        std::lock_guard<std::mutex> l(mu);
        stats.prompt_tokens += s->prompt_len;
        stats.prefix_hit_tokens += std::min(s->computed, s->prompt_len);
      } else {
        std::lock_guard<std::mutex> l(mu);
        stats.prefix_hit_tokens += s->computed;  // recompute after preemption skipped this much
      }
      const int k = std::min(len - s->computed, budget);
      Status st = s->kv.Reserve(s->computed + k);
      if (st.ok()) st = s->kv.PrepareWrite(s->computed);
      if (!st.ok()) {  // cannot happen after EnsureFree, but never fail silently
        Finish(std::move(s), FinishReason::kError, st);
        continue;
      }
      plan.push_back({s.get(), s->computed, k, s->computed + k == len});
      budget -= k;
      running.push_back(std::move(s));
    }
    if (plan.empty()) {
      PublishStats();
      return !running.empty() || !waiting.empty() ? WaitBriefly() : false;
    }

    // 3. One forward pass over the batch.
    std::vector<BatchToken> batch;
    int n_logits = 0;
    for (const Planned& p : plan) {
      for (int j = 0; j < p.count; ++j) {
        const bool last = j + 1 == p.count;
        batch.push_back({&p.seq->kv, p.from + j, p.seq->tokens[p.from + j], last && p.logits});
      }
      n_logits += p.logits ? 1 : 0;
    }
    const int V = static_cast<int>(model->hparams().n_vocab);
    std::vector<float> logits(static_cast<size_t>(n_logits) * V);
    Status st = model->Forward(batch, logits.data(), threads);
    if (!st.ok()) {
      for (const Planned& p : plan) FailRunning(p.seq, st);
      PublishStats();
      return true;
    }

    // 4. Sample, emit, finish.
    int li = 0;
    std::vector<Sequence*> done_stop, done_length;
    std::vector<SeqPtr> forks;
    for (const Planned& p : plan) {
      Sequence& s = *p.seq;
      s.computed = p.from + p.count;
      OfferFullBlocks(s);
      if (!p.logits) continue;
      std::span<const float> row(logits.data() + static_cast<size_t>(li++) * V, V);
      // n > 1: the other choices fork off here, sharing the prompt's blocks.
      for (int f = 0; f < s.pending_forks; ++f) {
        SamplingParams sp = s.rs->req.sampling;
        sp.seed += static_cast<uint64_t>(s.index + 1 + f);
        auto c = std::make_unique<Sequence>(s.rs, s.index + 1 + f, &pool, sp);
        c->tokens = s.tokens;
        c->prompt_len = s.prompt_len;
        c->computed = s.computed;
        c->inserted_blocks = s.inserted_blocks;
        c->cached_prompt_tokens = s.cached_prompt_tokens;
        c->counted_prompt = true;
        c->queue_seconds = s.queue_seconds;
        c->kv = s.kv.Fork();
        forks.push_back(std::move(c));
      }
      s.pending_forks = 0;
      EmitToken(s, row, &done_stop, &done_length);
    }
    for (SeqPtr& c : forks) {
      std::span<const float> row;
      // The fork samples from its parent's logits: find them again.
      int idx = 0;
      for (const Planned& p : plan) {
        if (!p.logits) continue;
        if (p.seq->rs == c->rs && p.seq->index == 0) {
          row = std::span<const float>(logits.data() + static_cast<size_t>(idx) * V, V);
          break;
        }
        ++idx;
      }
      Sequence* raw = c.get();
      running.push_back(std::move(c));
      if (!row.empty()) EmitToken(*raw, row, &done_stop, &done_length);
    }
    for (Sequence* s : done_stop) RemoveAndFinish(s, FinishReason::kStop);
    for (Sequence* s : done_length) RemoveAndFinish(s, FinishReason::kLength);
    {
      std::lock_guard<std::mutex> l(mu);
      ++stats.steps;
    }
    PublishStats();
    return true;
  }

  void EmitToken(Sequence& s, std::span<const float> row, std::vector<Sequence*>* stop, std::vector<Sequence*>* length) {
    const EngineRequest& req = s.rs->req;
    const int32_t tok = s.sampler.Sample(row);
    if (req.stop_at_eog && model->tokenizer().IsEndOfGeneration(tok)) {
      stop->push_back(&s);
      return;
    }
    GeneratedToken g;
    g.token = tok;
    if (req.top_logprobs >= 0) FillLogprobs(row, tok, req.top_logprobs, &g);
    s.tokens.push_back(tok);
    ++s.generated;
    {
      std::lock_guard<std::mutex> l(mu);
      ++stats.generated_tokens;
    }
    const bool go_on = !req.on_token || req.on_token(s.index, g);
    if (!go_on) {
      stop->push_back(&s);
    } else if (s.generated >= req.max_tokens) {
      length->push_back(&s);
    }
  }

  void RemoveAndFinish(Sequence* s, FinishReason reason) {
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].get() == s) {
        SeqPtr p = std::move(running[i]);
        running.erase(running.begin() + i);
        Finish(std::move(p), reason);
        return;
      }
    }
  }

  void FailRunning(Sequence* s, const Status& st) {
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].get() == s) {
        SeqPtr p = std::move(running[i]);
        running.erase(running.begin() + i);
        Finish(std::move(p), FinishReason::kError, st);
        return;
      }
    }
  }

  // Nothing could be scheduled although work exists (e.g. blocks held by the prefix cache are
  // pinned): wait for a submission or a cancellation rather than spin.
  bool WaitBriefly() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_for(l, std::chrono::milliseconds(5), [&] { return stopping || !inbox.empty(); });
    return true;
  }

  void PublishStats() {
    int64_t backlog = 0;
    for (const SeqPtr& s : waiting) backlog += static_cast<int64_t>(s->tokens.size()) - s->computed;
    for (const SeqPtr& s : running) backlog += std::max<int64_t>(0, static_cast<int64_t>(s->tokens.size()) - s->computed - 1);
    std::lock_guard<std::mutex> l(mu);
    stats.running = static_cast<int>(running.size());
    stats.waiting = static_cast<int>(waiting.size() + inbox.size());
    for (const auto& rs : inbox) backlog += static_cast<int64_t>(rs->req.prompt.size());
    stats.token_backlog = backlog;
    stats.kv_blocks_total = pool.num_blocks();
    stats.kv_blocks_used = pool.used_blocks();
    stats.kv_blocks_cached_idle = cache ? cache->idle_blocks() : 0;
    if (step_observer) step_observer(stats);
  }

  void Loop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return stopping || !inbox.empty() || !running.empty() || !waiting.empty(); });
        if (stopping) break;
      }
      Step();
      const bool empty = running.empty() && waiting.empty();
      {
        std::lock_guard<std::mutex> l(mu);
        quiet = empty && inbox.empty();
      }
      idle_cv.notify_all();
    }
    DrainInbox();
    for (auto* list : {&running, &waiting}) {
      while (!list->empty()) {
        SeqPtr s = std::move(list->back());
        list->pop_back();
        Finish(std::move(s), FinishReason::kCancelled);
      }
    }
    PublishStats();
  }
};

LlmEngine::LlmEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<LlmEngine>> LlmEngine::Create(std::shared_ptr<const LlamaModel> model, EngineOptions o) {
  if (model == nullptr) return Status::InvalidArgument("no model");
  if (o.block_tokens < 1 || o.block_tokens > 1024) return Status::InvalidArgument("block_tokens must be in 1..1024");
  if (o.max_batch_tokens < 1) return Status::InvalidArgument("max_batch_tokens must be >= 1");
  if (o.max_running < 1) return Status::InvalidArgument("max_running must be >= 1");
  const KvCacheShape shape = model->kv_shape(o.block_tokens, o.kv_type);
  const size_t block_bytes = shape.block_bytes();
  int blocks = o.kv_blocks;
  if (blocks <= 0) blocks = static_cast<int>(std::min<size_t>(o.kv_cache_bytes / block_bytes, 1 << 22));
  if (blocks < 1) {
    return Status::InvalidArgument("the KV cache of " + std::to_string(o.kv_cache_bytes) + " bytes holds no block of " +
                                   std::to_string(block_bytes) + " bytes");
  }
  IL_ASSIGN_OR_RETURN(KvBlockPool pool, KvBlockPool::Create(shape, blocks));
  auto impl = std::make_unique<Impl>(std::move(model), o, std::move(pool));
  if (o.prefix_cache_blocks != 0) {
    impl->cache = std::make_unique<PrefixCache>(&impl->pool, o.prefix_cache_blocks < 0 ? blocks : o.prefix_cache_blocks);
    PrefixCache* c = impl->cache.get();
    impl->pool.SetEvictor([c](int n) { return c->Evict(n); });
  }
  impl->threads = SharedThreadPool(o.threads);
  impl->PublishStats();
  Impl* raw = impl.get();
  impl->worker = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<LlmEngine>(new LlmEngine(std::move(impl)));
}

LlmEngine::~LlmEngine() {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->idle_cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

Result<RequestHandle> LlmEngine::Submit(EngineRequest r) {
  const LlamaModel& m = *impl_->model;
  if (r.prompt.empty()) return Status::InvalidArgument("the prompt has no tokens");
  for (int32_t t : r.prompt) {
    if (t < 0 || t >= static_cast<int32_t>(m.hparams().n_vocab)) {
      return Status::InvalidArgument("token id " + std::to_string(t) + " is outside the vocab");
    }
  }
  if (r.n < 1 || r.n > 128) return Status::InvalidArgument("n must be in 1..128, got " + std::to_string(r.n));
  if (r.max_tokens < 1) return Status::InvalidArgument("max_tokens must be >= 1, got " + std::to_string(r.max_tokens));
  if (r.top_logprobs > 20) return Status::InvalidArgument("top_logprobs must be at most 20");
  IL_RETURN_IF_ERROR(ValidateSamplingParams(r.sampling));
  const int64_t total = static_cast<int64_t>(r.prompt.size()) + r.max_tokens;
  if (total > m.hparams().n_ctx_train) {
    return Status::InvalidArgument("the prompt (" + std::to_string(r.prompt.size()) + " tokens) plus max_tokens (" +
                                   std::to_string(r.max_tokens) + ") exceeds the model's context of " +
                                   std::to_string(m.hparams().n_ctx_train) + " tokens");
  }
  // Blocks the request needs alone: the prompt once, each choice's own tail.
  const int bt = impl_->opt.block_tokens;
  const int64_t need = impl_->BlocksFor(total + 1) + static_cast<int64_t>(r.n - 1) * ((r.max_tokens + 1) / bt + 2);
  if (need > impl_->pool.num_blocks()) {
    return Status::InvalidArgument("the request needs " + std::to_string(need) + " KV cache blocks of " +
                                   std::to_string(bt) + " tokens, more than the whole cache (" +
                                   std::to_string(impl_->pool.num_blocks()) + " blocks)");
  }
  auto rs = std::make_shared<RequestState>();
  RequestHandle h;
  rs->cancelled = h.flag();
  rs->req = std::move(r);
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    if (impl_->stopping) return Status::Unavailable("the engine is stopping");
    if (impl_->draining) return Status::Unavailable("the engine is draining (its model is being replaced or unloaded)");
    impl_->quiet = false;
    rs->arrival = impl_->next_arrival++;
    impl_->inbox.push_back(std::move(rs));
    impl_->stats.waiting += 1;
    impl_->stats.token_backlog += static_cast<int64_t>(impl_->inbox.back()->req.prompt.size());
  }
  impl_->cv.notify_all();
  return h;
}

bool LlmEngine::Drain(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(impl_->mu);
  impl_->draining = true;
  return impl_->idle_cv.wait_until(l, deadline, [&] { return impl_->quiet; });
}

EngineStats LlmEngine::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->stats;
}

void LlmEngine::SetStepObserver(std::function<void(const EngineStats&)> observer) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->step_observer = std::move(observer);
}

const LlamaModel& LlmEngine::model() const { return *impl_->model; }
const EngineOptions& LlmEngine::options() const { return impl_->opt; }
int LlmEngine::kv_blocks() const { return impl_->pool.num_blocks(); }

}  // namespace inferloop::llm
