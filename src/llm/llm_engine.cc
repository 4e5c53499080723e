#include "llm/llm_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>

#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "llm/engine_sequence.h"
#include "llm/kv_disk_tier.h"
#include "llm/kv_tier_cost.h"
#include "llm/prefix_cache.h"
#include "llm/scheduler.h"
#include "llm/token_mask.h"

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
  for (size_t i = 0; i < k && std::isfinite(logits[ids[i]]); ++i) out->top.push_back({ids[i], logits[ids[i]] - lse});
}

// A planned piece of work that wants next-token logits (an embedding never does).
bool WantsLogits(const ScheduledWork& p) { return p.logits && !p.seq->rs->req.embed; }

// Whether position `pos` of an embedding of `len` tokens contributes to its pooled vector.
bool Pooled(Pooling pooling, int pos, int len) {
  switch (pooling) {
    case Pooling::kMean: return true;
    case Pooling::kCls: return pos == 0;
    case Pooling::kLast: return pos == len - 1;
  }
  return false;
}

// The pooled sum of `count` rows, averaged and L2-normalised (a zero vector stays zero).
std::vector<float> Normalised(const std::vector<double>& sum, int count) {
  double norm = 0;
  for (double v : sum) norm += (v / count) * (v / count);
  norm = std::sqrt(norm);
  std::vector<float> out(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) out[i] = norm > 0 ? static_cast<float>(sum[i] / count / norm) : 0.f;
  return out;
}

}  // namespace

struct LlmEngine::Impl : SchedulerEvents {
  std::shared_ptr<const LlamaModel> model;
  EngineOptions opt;
  KvBlockPool pool;
  std::unique_ptr<KvDiskTier> disk;  // the prefix cache's disk tier (null: none); outlives `cache`
  std::unique_ptr<PrefixCache> cache;
  PrefillSpeed prefill;  // measured on the worker thread, read by the prefix cache there
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

  // Owned by the worker thread: the running and waiting sequences.
  Scheduler sched;
  std::vector<float> masked;  // a constrained sequence's logits after its token mask
  std::vector<std::pair<Sequence*, Status>> grammar_failed;  // this step's sequences with no allowed token
  ForwardScratch forward_scratch;  // the forward passes' buffers, kept between steps
  std::vector<float> step_logits, step_hidden;  // a step's logit rows and pooled hidden states

  Impl(std::shared_ptr<const LlamaModel> m, EngineOptions o, KvBlockPool p)
      : model(std::move(m)), opt(o), pool(std::move(p)), sched(opt, &pool, this) {}

  void OnPreempted() override {
    std::lock_guard<std::mutex> l(mu);
    ++stats.preemptions;
  }
  void OnAdmitted(int64_t prompt_tokens, int64_t prefix_hit_tokens, int64_t disk_hit_tokens) override {
    std::lock_guard<std::mutex> l(mu);
    stats.prompt_tokens += prompt_tokens;
    stats.prefix_hit_tokens += prefix_hit_tokens;
    stats.prefix_hit_tokens_disk += disk_hit_tokens;
  }
  void OnAdmitFailed(SeqPtr s, const Status& error) override { Finish(std::move(s), FinishReason::kError, error); }


  void Finish(SeqPtr s, FinishReason reason, Status error = Status::Ok()) {
    SequenceResult r;
    r.index = s->index;
    r.reason = reason;
    r.error = std::move(error);
    r.prompt_tokens = s->prompt_len;
    r.cached_prompt_tokens = s->cached_prompt_tokens;
    r.disk_cached_prompt_tokens = s->disk_cached_prompt_tokens;
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
      sched.InsertWaiting(std::move(s));
    }
  }

  void DropCancelled() {
    for (auto* list : {&sched.running, &sched.waiting}) {
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
    if (sched.running.empty() && sched.waiting.empty()) return false;
    ProposeDrafts();
    const std::vector<ScheduledWork> plan = sched.PlanStep();
    // A sequence the plan left out keeps no draft (the budget ran out before it).
    for (const SeqPtr& s : sched.running) {
      if (s->draft > 0 && std::none_of(plan.begin(), plan.end(), [&](const ScheduledWork& p) { return p.seq == s.get(); }))
        Scheduler::DropDraft(*s);
    }
    if (plan.empty()) {
      PublishStats();
      return !sched.running.empty() || !sched.waiting.empty() ? WaitBriefly() : false;
    }
    Status st = Forward(plan, step_logits, step_hidden);
    if (!st.ok()) {
      for (const ScheduledWork& p : plan) FailRunning(p.seq, st);
      PublishStats();
      return true;
    }
    EmitAll(plan, step_logits, step_hidden);
    {
      std::lock_guard<std::mutex> l(mu);
      ++stats.steps;
    }
    PublishStats();
    return true;
  }

  // Speculative decoding: every decoding sequence (its keys and values computed up to its last
  // token) gets a prompt-lookup draft appended, within its max_tokens and the model's context.
  void ProposeDrafts() {
    if (opt.draft.max_draft <= 0) return;
    const int64_t n_ctx = model->hparams().n_ctx_train;
    for (const SeqPtr& sp : sched.running) {
      Sequence& s = *sp;
      const int len = static_cast<int>(s.tokens.size());
      if (s.rs->req.embed || s.draft != 0 || s.pending_forks > 0 || s.computed != len - 1) continue;
      // Room for the draft and the token after it.
      const int room = static_cast<int>(std::min<int64_t>(s.rs->req.max_tokens - s.generated, n_ctx - len)) - 1;
      if (room <= 0) continue;
      NgramDraftOptions o = opt.draft;
      o.max_draft = std::min(o.max_draft, room);
      std::vector<int32_t> d = ProposeNgramDraft(s.tokens, o);
      s.tokens.insert(s.tokens.end(), d.begin(), d.end());
      s.draft = static_cast<int>(d.size());
    }
  }

  // Logit rows a planned piece of work produces.
  static int LogitRows(const ScheduledWork& p) { return WantsLogits(p) ? 1 + p.seq->draft : 0; }

  // One forward pass over the planned tokens; `logits` gets LogitRows rows per planned work, in
  // plan order, `hidden` one row per token an embedding pools. A step that prefills (some
  // sequence computes more than one token of its own, not counting a draft) measures the
  // prefill speed.
  Status Forward(const std::vector<ScheduledWork>& plan, std::vector<float>& logits, std::vector<float>& hidden) {
    std::vector<BatchToken> batch;
    int n_logits = 0, n_hidden = 0, end_pos = 0;
    bool prefills = false;
    for (const ScheduledWork& p : plan) {
      const EngineRequest& req = p.seq->rs->req;
      const int len = static_cast<int>(p.seq->tokens.size());
      const int rows = LogitRows(p);
      for (int j = 0; j < p.count; ++j) {
        const bool pooled = req.embed && Pooled(req.pooling, p.from + j, len);
        batch.push_back({&p.seq->kv, p.from + j, p.seq->tokens[p.from + j], j >= p.count - rows, pooled});
        n_hidden += pooled ? 1 : 0;
      }
      n_logits += rows;
      prefills = prefills || p.count - p.seq->draft > 1;
      end_pos = std::max(end_pos, p.from + p.count);
    }
    const int V = static_cast<int>(model->hparams().n_vocab);
    logits.assign(static_cast<size_t>(n_logits) * V, 0.f);
    hidden.assign(static_cast<size_t>(n_hidden) * model->hparams().n_embd, 0.f);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = model->Forward(batch, logits.data(), threads, hidden.data(), &forward_scratch);
    if (st.ok() && prefills) {
      prefill.Record(end_pos, static_cast<int>(batch.size()),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return st;
  }

  // The n - 1 other choices of `s`, forked off after its prefill, sharing the prompt's blocks.
  void ForkChoices(Sequence& s, std::vector<SeqPtr>& forks) {
    for (int f = 0; f < s.pending_forks; ++f) {
      SamplingParams sp = s.rs->req.sampling;
      sp.seed += static_cast<uint64_t>(s.index + 1 + f);
      auto c = std::make_unique<Sequence>(s.rs, s.index + 1 + f, &pool, sp);
      c->tokens = s.tokens;
      c->prompt_len = s.prompt_len;
      c->computed = s.computed;
      c->inserted_blocks = s.inserted_blocks;
      c->cached_prompt_tokens = s.cached_prompt_tokens;
      c->disk_cached_prompt_tokens = s.disk_cached_prompt_tokens;
      c->counted_prompt = true;
      c->queue_seconds = s.queue_seconds;
      c->kv = s.kv.Fork();
      forks.push_back(std::move(c));
    }
    s.pending_forks = 0;
  }

  // After the forward pass: sample, emit, fork, finish; embeddings pool their hidden rows.
  void EmitAll(const std::vector<ScheduledWork>& plan, const std::vector<float>& logits,
               const std::vector<float>& hidden) {
    const int V = static_cast<int>(model->hparams().n_vocab);
    int li = 0;
    size_t hi = 0;
    std::vector<Sequence*> done_stop, done_length;
    std::vector<SeqPtr> forks;
    for (const ScheduledWork& p : plan) {
      Sequence& s = *p.seq;
      if (s.draft > 0) {
        const int rows = LogitRows(p);  // before VerifyDraft drops the draft
        VerifyDraft(s, p.from, std::span<const float>(logits.data() + static_cast<size_t>(li) * V,
                                                      static_cast<size_t>(rows) * V),
                    &done_stop, &done_length);
        li += rows;
        continue;
      }
      s.computed = p.from + p.count;
      sched.OfferFullBlocks(s);
      if (s.rs->req.embed) {
        if (PoolHidden(p, hidden, &hi)) done_stop.push_back(&s);
        continue;
      }
      if (!p.logits) continue;
      std::span<const float> row(logits.data() + static_cast<size_t>(li++) * V, V);
      ForkChoices(s, forks);
      EmitToken(s, row, &done_stop, &done_length);
    }
    for (SeqPtr& c : forks) {
      std::span<const float> row;
      // The fork samples from its parent's logits: find them again.
      int idx = 0;
      for (const ScheduledWork& p : plan) {
        if (WantsLogits(p) && p.seq->rs == c->rs && p.seq->index == 0) {
          row = std::span<const float>(logits.data() + static_cast<size_t>(idx) * V, V);
          break;
        }
        idx += LogitRows(p);
      }
      Sequence* raw = c.get();
      sched.running.push_back(std::move(c));
      if (!row.empty()) EmitToken(*raw, row, &done_stop, &done_length);
    }
    for (auto& [s, st] : grammar_failed) FailRunning(s, st);
    grammar_failed.clear();
    for (Sequence* s : done_stop) RemoveAndFinish(s, FinishReason::kStop);
    for (Sequence* s : done_length) RemoveAndFinish(s, FinishReason::kLength);
  }

  // `row` with the tokens the grammar refuses in `s`'s state at -inf (in `masked`), or an error
  // when it allows none.
  Status MaskRow(Sequence& s, std::span<const float> row) {
    const TokenMask& mask = s.rs->req.constraint->masker.Mask(*s.matcher);
    if (mask.allowed == 0) {
      return Status::InvalidArgument("constrained decoding: the grammar allows no token of this model's vocabulary here");
    }
    masked.assign(row.begin(), row.end());
    const size_t n = std::min(masked.size(), mask.bits.size() * 64);
    for (size_t i = 0; i < n; ++i) {
      if (!((mask.bits[i >> 6] >> (i & 63)) & 1)) masked[i] = -INFINITY;
    }
    for (size_t i = n; i < masked.size(); ++i) masked[i] = -INFINITY;
    return Status::Ok();
  }

  // `s` computed its pending token at `from` and its draft after it; `rows` holds the logits after
  // each of them. The sampler chooses from row 0, 1, ... as decoding would, and the draft token
  // at each place stands (its keys and values are then valid) while the choice equals it; the
  // first choice that differs is emitted and ends the step for `s`, as does the end of the
  // sequence (stop, length). The rest of the draft is dropped: its cache positions are simply
  // written again by later steps.
  void VerifyDraft(Sequence& s, int from, std::span<const float> rows, std::vector<Sequence*>* stop,
                   std::vector<Sequence*>* length) {
    const int V = static_cast<int>(model->hparams().n_vocab);
    const int drafted = s.draft;
    const std::vector<int32_t> draft(s.tokens.end() - drafted, s.tokens.end());
    Scheduler::DropDraft(s);
    s.computed = from + 1;
    int accepted = 0;
    for (int i = 0; i <= drafted; ++i) {
      const size_t ends = stop->size() + length->size();
      EmitToken(s, rows.subspan(static_cast<size_t>(i) * V, V), stop, length);
      if (stop->size() + length->size() != ends) break;  // the sequence ended
      if (i == drafted || s.tokens.back() != draft[i]) break;
      ++accepted;
      ++s.computed;
    }
    sched.OfferFullBlocks(s);
    std::lock_guard<std::mutex> l(mu);
    stats.draft_tokens += drafted;
    stats.draft_accepted_tokens += accepted;
  }

  // Adds the hidden rows of embedding work `p` (from *next on in `hidden`) to its pooled sum;
  // at the prompt's end, hands the embedding over and returns true (the sequence is done).
  bool PoolHidden(const ScheduledWork& p, const std::vector<float>& hidden, size_t* next) {
    Sequence& s = *p.seq;
    const EngineRequest& req = s.rs->req;
    const int E = static_cast<int>(model->hparams().n_embd);
    const int len = static_cast<int>(s.tokens.size());
    if (p.from == 0) s.pooled.assign(E, 0.0);  // a first chunk (again, after a preemption)
    for (int j = 0; j < p.count; ++j) {
      if (!Pooled(req.pooling, p.from + j, len)) continue;
      const float* row = hidden.data() + *next;
      for (int e = 0; e < E; ++e) s.pooled[e] += row[e];
      *next += E;
    }
    if (p.from + p.count < len) return false;
    if (req.on_embedding) req.on_embedding(Normalised(s.pooled, req.pooling == Pooling::kMean ? len : 1));
    return true;
  }

  void EmitToken(Sequence& s, std::span<const float> row, std::vector<Sequence*>* stop, std::vector<Sequence*>* length) {
    const EngineRequest& req = s.rs->req;
    if (s.matcher) {
      if (Status st = MaskRow(s, row); !st.ok()) {
        const bool listed = std::any_of(grammar_failed.begin(), grammar_failed.end(), [&](const auto& f) { return f.first == &s; });
        if (!listed) grammar_failed.emplace_back(&s, st);
        return;
      }
      row = masked;
    }
    const int32_t tok = s.sampler.Sample(row);
    if ((req.stop_at_eog && model->tokenizer().IsEndOfGeneration(tok)) ||
        std::find(req.stop_token_ids.begin(), req.stop_token_ids.end(), tok) != req.stop_token_ids.end()) {
      stop->push_back(&s);
      return;
    }
    if (s.matcher) s.matcher->Advance(req.constraint->masker.vocab().piece(tok));
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
    for (size_t i = 0; i < sched.running.size(); ++i) {
      if (sched.running[i].get() == s) {
        SeqPtr p = std::move(sched.running[i]);
        sched.running.erase(sched.running.begin() + i);
        Finish(std::move(p), reason);
        return;
      }
    }
  }

  void FailRunning(Sequence* s, const Status& st) {
    for (size_t i = 0; i < sched.running.size(); ++i) {
      if (sched.running[i].get() == s) {
        SeqPtr p = std::move(sched.running[i]);
        sched.running.erase(sched.running.begin() + i);
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
    for (const SeqPtr& s : sched.waiting) backlog += static_cast<int64_t>(s->tokens.size()) - s->computed;
    for (const SeqPtr& s : sched.running)
      backlog += std::max<int64_t>(0, static_cast<int64_t>(s->tokens.size()) - s->draft - s->computed - 1);
    std::lock_guard<std::mutex> l(mu);
    stats.running = static_cast<int>(sched.running.size());
    stats.waiting = static_cast<int>(sched.waiting.size() + inbox.size());
    for (const auto& rs : inbox) backlog += static_cast<int64_t>(rs->req.prompt.size());
    stats.token_backlog = backlog;
    stats.kv_blocks_total = pool.num_blocks();
    stats.kv_blocks_used = pool.used_blocks();
    stats.kv_blocks_cached_idle = cache ? cache->idle_blocks() : 0;
    FillDiskStats(stats);
    if (step_observer) step_observer(stats);
  }

  void FillDiskStats(EngineStats& st) const {
    if (!disk) return;
    const KvDiskTierStats d = disk->Stats();
    st.disk_bytes_read = d.bytes_read;
    st.disk_bytes_written = d.bytes_written;
    st.disk_bytes = d.bytes;
    st.disk_errors = d.corrupt + d.write_failures;
    st.disk_skipped_writes = d.skipped_writes;
  }

  // The prefix cache's disk tier for this model (EngineOptions::prefix_cache_dir).
  Status OpenDiskTier(const KvCacheShape& shape) {
    IL_ASSIGN_OR_RETURN(KvModelIdentity id, KvModelIdentityOfFile(model->path(), shape));
    KvDiskTierOptions o;
    o.dir = opt.prefix_cache_dir;
    o.budget_bytes = opt.prefix_cache_disk_bytes;
    IL_ASSIGN_OR_RETURN(disk, KvDiskTier::Open(o, id, shape.block_tokens, pool.bytes_per_block()));
    cache->SetDiskTier({disk.get(), &prefill, opt.prefix_cache_disk_always_read});
    return Status::Ok();
  }

  void Loop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return stopping || !inbox.empty() || !sched.running.empty() || !sched.waiting.empty(); });
        if (stopping) break;
      }
      Step();
      const bool empty = sched.running.empty() && sched.waiting.empty();
      {
        std::lock_guard<std::mutex> l(mu);
        quiet = empty && inbox.empty();
      }
      idle_cv.notify_all();
    }
    DrainInbox();
    for (auto* list : {&sched.running, &sched.waiting}) {
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
    impl->sched.SetPrefixCache(c);
    impl->pool.SetEvictor([c](int n) { return c->Evict(n); });
    if (!o.prefix_cache_dir.empty()) IL_RETURN_IF_ERROR(impl->OpenDiskTier(shape));
  } else if (!o.prefix_cache_dir.empty()) {
    return Status::InvalidArgument("a prefix cache disk tier needs the prefix cache (prefix_cache_blocks is 0)");
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
  // A graceful stop: the blocks cached in memory go to the disk tier too (written before the
  // tier's writer stops, when `impl_` is destroyed).
  if (impl_->cache) impl_->cache->WriteAllToDisk();
}

Result<RequestHandle> LlmEngine::Submit(EngineRequest r) {
  const LlamaModel& m = *impl_->model;
  if (r.prompt.empty()) return Status::InvalidArgument("the prompt has no tokens");
  for (int32_t t : r.prompt) {
    if (t < 0 || t >= static_cast<int32_t>(m.hparams().n_vocab)) {
      return Status::InvalidArgument("token id " + std::to_string(t) + " is outside the vocab (size " +
                                     std::to_string(m.hparams().n_vocab) + ")");
    }
  }
  for (int32_t t : r.stop_token_ids) {
    if (t < 0 || t >= static_cast<int32_t>(m.hparams().n_vocab)) {
      return Status::InvalidArgument("stop token id " + std::to_string(t) + " is outside the vocab (size " +
                                     std::to_string(m.hparams().n_vocab) + ")");
    }
  }
  if (r.n < 1 || r.n > 128) return Status::InvalidArgument("n must be in 1..128, got " + std::to_string(r.n));
  if (r.embed) {
    if (r.n != 1) return Status::InvalidArgument("an embedding request has one choice (n = 1), got n = " + std::to_string(r.n));
    r.max_tokens = 0;  // nothing is generated: the blocks and the context hold the prompt alone
  }
  if (r.max_tokens < 1 && !r.embed) return Status::InvalidArgument("max_tokens must be >= 1, got " + std::to_string(r.max_tokens));
  if (r.top_logprobs > 20) return Status::InvalidArgument("top_logprobs must be at most 20");
  IL_RETURN_IF_ERROR(ValidateSamplingParams(r.sampling, m.hparams().n_vocab));
  if (r.constraint && r.constraint->masker.vocab().size() != static_cast<int32_t>(m.hparams().n_vocab)) {
    return Status::InvalidArgument("the grammar constraint was built for another vocabulary");
  }
  const int64_t total = static_cast<int64_t>(r.prompt.size()) + r.max_tokens;
  if (total > m.hparams().n_ctx_train) {
    return Status::InvalidArgument("the prompt (" + std::to_string(r.prompt.size()) + " tokens) plus max_tokens (" +
                                   std::to_string(r.max_tokens) + ") asks for " + std::to_string(total) +
                                   " tokens, which exceeds the model's context of " +
                                   std::to_string(m.hparams().n_ctx_train) + " tokens");
  }
  // Blocks the request needs alone: the prompt once, each choice's own tail.
  const int bt = impl_->opt.block_tokens;
  const int64_t need = impl_->sched.BlocksFor(total + 1) + static_cast<int64_t>(r.n - 1) * ((r.max_tokens + 1) / bt + 2);
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
  EngineStats s;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    s = impl_->stats;
  }
  impl_->FillDiskStats(s);
  return s;
}

void LlmEngine::SetStepObserver(std::function<void(const EngineStats&)> observer) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->step_observer = std::move(observer);
}

const LlamaModel& LlmEngine::model() const { return *impl_->model; }
const EngineOptions& LlmEngine::options() const { return impl_->opt; }
int LlmEngine::kv_blocks() const { return impl_->pool.num_blocks(); }

}  // namespace inferloop::llm
