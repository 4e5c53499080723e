// Scheduler: the LlmEngine's running and waiting sequences, and which of them the next step
// computes, within the step's token budget and the KV cache's blocks (policy: llm_engine.h).
//
// PlanStep sorts the running set (RunsBefore), then plans (1) every running sequence's next
// tokens (one for a decode, a chunk for a prompt being prefilled), reserving its blocks, and
// (2) admits waiting sequences (prefix cache hits adopted) while the budget, max_running and
// the free blocks allow. Where blocks run out, the running sequence that runs last is preempted
// (its blocks freed, its planned work dropped, back to waiting, recomputed later): for a running
// sequence that needs blocks, and for a waiting one that runs before it. Owned and called by
// the engine's worker thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "inferloop/status.h"
#include "llm/engine_sequence.h"
#include "llm/prefix_cache.h"

namespace inferloop::llm {

// One sequence's share of a step: tokens [from, from + count) computed, logits of the last
// wanted when it reaches the end of the sequence's tokens. A sequence with a draft
// (Sequence::draft) is planned whole, and wants the logits of its last draft + 1 tokens.
struct ScheduledWork {
  Sequence* seq;
  int from;
  int count;
  bool logits;
};

// What the scheduler reports to the engine as it plans (on the worker thread).
class SchedulerEvents {
 public:
  virtual ~SchedulerEvents() = default;
  virtual void OnPreempted() = 0;
  // A sequence left waiting for running: prompt tokens counted for the first time, and the
  // tokens whose keys/values it did not need to compute (`disk_hit_tokens` of them read from
  // the prefix cache's disk tier).
  virtual void OnAdmitted(int64_t prompt_tokens, int64_t prefix_hit_tokens, int64_t disk_hit_tokens) = 0;
  // An admitted sequence whose blocks could not be prepared (should not happen): it ends.
  virtual void OnAdmitFailed(SeqPtr s, const Status& error) = 0;
};

class Scheduler {
 public:
  // `pool` and `events` outlive the scheduler.
  Scheduler(const EngineOptions& options, KvBlockPool* pool, SchedulerEvents* events)
      : opt_(options), pool_(pool), events_(events) {}
  // The prefix cache blocks are offered to and matched in (null: none).
  void SetPrefixCache(PrefixCache* cache) { cache_ = cache; }

  std::vector<ScheduledWork> PlanStep();
  // KV blocks that hold `tokens` positions.
  int BlocksFor(int64_t tokens) const { return static_cast<int>((tokens + opt_.block_tokens - 1) / opt_.block_tokens); }

  // Drops the unverified draft at the end of `s`'s tokens.
  static void DropDraft(Sequence& s);

  // Into `waiting` at its place (RunsBefore).
  void InsertWaiting(SeqPtr s);
  // Full blocks of `s` whose keys/values are computed go to the prefix cache.
  void OfferFullBlocks(Sequence& s);

  std::vector<SeqPtr> waiting;  // kept sorted by RunsBefore
  std::vector<SeqPtr> running;

 private:
  // Index in `running` of the sequence to preempt: the one that runs last.
  size_t LowestRunning() const;
  // Frees running[index]'s blocks and sends it back to waiting.
  void Preempt(size_t running_index);
  // Preempts running[victim] for another sequence's blocks: its planned work is dropped and
  // its tokens go back to the budget.
  void PreemptPlanned(size_t victim, std::vector<ScheduledWork>& plan, int& budget);
  void PlanRunning(std::vector<ScheduledWork>& plan, int& budget);
  void AdmitWaiting(std::vector<ScheduledWork>& plan, int& budget);
  // Takes blocks of the prefix cache for `w`'s prompt and makes room for the rest; false (and
  // the matched blocks given back) when they do not fit.
  bool FitWaiting(Sequence& w, std::vector<ScheduledWork>& plan, int& budget);

  const EngineOptions opt_;
  KvBlockPool* pool_;
  PrefixCache* cache_ = nullptr;
  SchedulerEvents* events_;
};

}  // namespace inferloop::llm
