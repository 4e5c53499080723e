#include "llm/scheduler.h"

#include <algorithm>
#include <chrono>

namespace inferloop::llm {

void Scheduler::InsertWaiting(SeqPtr s) {
  auto pos = std::upper_bound(waiting.begin(), waiting.end(), s,
                              [](const SeqPtr& a, const SeqPtr& b) { return RunsBefore(*a, *b); });
  waiting.insert(pos, std::move(s));
}

void Scheduler::OfferFullBlocks(Sequence& s) {
  if (!cache_ || s.rs->req.embed) return;  // an embedding's blocks are freed when it ends
  const int full = s.computed / opt_.block_tokens;
  for (int b = s.inserted_blocks; b < full && b < static_cast<int>(s.kv.blocks().size()); ++b) {
    cache_->Insert(s.tokens, b, s.kv.blocks()[b]);
  }
  s.inserted_blocks = std::max(s.inserted_blocks, full);
}

void Scheduler::DropDraft(Sequence& s) {
  s.tokens.resize(s.tokens.size() - s.draft);
  s.draft = 0;
}

size_t Scheduler::LowestRunning() const {
  size_t worst = 0;
  for (size_t i = 1; i < running.size(); ++i) {
    if (RunsBefore(*running[worst], *running[i])) worst = i;
  }
  return worst;
}

void Scheduler::Preempt(size_t running_index) {
  SeqPtr s = std::move(running[running_index]);
  running.erase(running.begin() + running_index);
  DropDraft(*s);
  OfferFullBlocks(*s);
  s->kv.Reset();
  s->computed = 0;
  s->inserted_blocks = 0;
  ++s->preemptions;
  events_->OnPreempted();
  if (cache_) cache_->Trim();
  InsertWaiting(std::move(s));
}

void Scheduler::PreemptPlanned(size_t victim, std::vector<ScheduledWork>& plan, int& budget) {
  const Sequence* v = running[victim].get();
  plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const ScheduledWork& p) {
               if (p.seq == v) budget += p.count;
               return p.seq == v;
             }),
             plan.end());
  Preempt(victim);
}

std::vector<ScheduledWork> Scheduler::PlanStep() {
  std::sort(running.begin(), running.end(), [](const SeqPtr& a, const SeqPtr& b) { return RunsBefore(*a, *b); });
  std::vector<ScheduledWork> plan;
  int budget = opt_.max_batch_tokens;
  PlanRunning(plan, budget);
  AdmitWaiting(plan, budget);
  return plan;
}

// Sequences already running: decodes (one token) and prompts being prefilled (a chunk).
void Scheduler::PlanRunning(std::vector<ScheduledWork>& plan, int& budget) {
  for (size_t i = 0; i < running.size() && budget > 0;) {
    Sequence& s = *running[i];
    // A draft is verified whole or not at all: cut it to what the budget leaves.
    if (s.draft > 0 && 1 + s.draft > budget) {
      const int keep = std::max(0, budget - 1);
      s.tokens.resize(s.tokens.size() - (s.draft - keep));
      s.draft = keep;
    }
    const int need = static_cast<int>(s.tokens.size()) - s.computed;
    const int k = std::min(need, budget);
    Status st = s.kv.Reserve(s.computed + k);
    while (!st.ok() && running.size() > 1) {
      const size_t victim = LowestRunning();
      if (victim == i) break;
      PreemptPlanned(victim, plan, budget);
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
}

bool Scheduler::FitWaiting(Sequence& w, std::vector<ScheduledWork>& plan, int& budget) {
  const int len = static_cast<int>(w.tokens.size());
  if (cache_ && w.kv.blocks().empty() && !w.rs->req.embed) {  // an embedding computes every token
    // Whole blocks of the prefix, never the last token (its logits are needed).
    int from_disk = 0;
    std::vector<int> hit = cache_->Match(w.tokens, (len - 1) / opt_.block_tokens, &from_disk);
    w.disk_hit_tokens = from_disk * opt_.block_tokens;
    w.computed = static_cast<int>(hit.size()) * opt_.block_tokens;
    w.inserted_blocks = static_cast<int>(hit.size());
    w.kv.Adopt(std::move(hit));
  }
  const int blocks_needed = BlocksFor(len + 1) - static_cast<int>(w.kv.blocks().size());
  bool fits = pool_->EnsureFree(blocks_needed);
  // A more important request may take the blocks of less important running ones.
  while (!fits && !running.empty() && RunsBefore(w, *running[LowestRunning()])) {
    PreemptPlanned(LowestRunning(), plan, budget);
    fits = pool_->EnsureFree(blocks_needed);
  }
  if (!fits) {
    w.kv.Reset();  // give matched blocks back; retry next step
    w.computed = 0;
    w.inserted_blocks = 0;
    w.disk_hit_tokens = 0;
  }
  return fits;
}

// Waiting sequences, admitted while the budget and the blocks allow.
void Scheduler::AdmitWaiting(std::vector<ScheduledWork>& plan, int& budget) {
  while (budget > 0 && !waiting.empty() && static_cast<int>(running.size()) < opt_.max_running) {
    if (!FitWaiting(*waiting.front(), plan, budget)) break;
    SeqPtr s = std::move(waiting.front());
    waiting.erase(waiting.begin());
    const int len = static_cast<int>(s->tokens.size());
    if (s->queue_seconds < 0) {
      s->queue_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s->rs->submitted).count();
    }
    if (!s->counted_prompt) {
      s->counted_prompt = true;
      s->cached_prompt_tokens = s->computed;
      s->disk_cached_prompt_tokens = s->disk_hit_tokens;
      events_->OnAdmitted(s->prompt_len, std::min(s->computed, s->prompt_len), s->disk_hit_tokens);
    } else {
      events_->OnAdmitted(0, s->computed, s->disk_hit_tokens);  // recompute after preemption skipped this much
    }
    const int k = std::min(len - s->computed, budget);
    Status st = s->kv.Reserve(s->computed + k);
    if (st.ok()) st = s->kv.PrepareWrite(s->computed);
    if (!st.ok()) {  // cannot happen after EnsureFree, but never fail silently
      events_->OnAdmitFailed(std::move(s), st);
      continue;
    }
    plan.push_back({s.get(), s->computed, k, s->computed + k == len});
    budget -= k;
    running.push_back(std::move(s));
  }
}

}  // namespace inferloop::llm
