// The LlmEngine's unit of work (internal to the engine and its scheduler): one choice of one
// request, with its tokens, its KV blocks and its sampler, and the order sequences run in.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "llm/grammar_matcher.h"
#include "llm/kv_block_pool.h"
#include "llm/llm_engine.h"
#include "llm/sampler.h"
#include "llm/token_mask.h"

namespace inferloop::llm {

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
  int disk_cached_prompt_tokens = 0;  // of cached_prompt_tokens, read from the disk tier
  int disk_hit_tokens = 0;            // tokens the last prefix match read from the disk tier
  int preemptions = 0;
  int pending_forks = 0;        // choices still to fork off after the prefill
  int draft = 0;                // the last `draft` tokens are a speculative draft, not yet verified
  bool counted_prompt = false;
  double queue_seconds = -1;    // set when first admitted
  std::vector<double> pooled;   // embedding requests: the sum of the pooled hidden states so far
  KvSequence kv;
  Sampler sampler;
  std::unique_ptr<GrammarMatcher> matcher;  // constrained decoding: the grammar state so far
  Sequence(std::shared_ptr<RequestState> r, int idx, KvBlockPool* pool, const SamplingParams& p)
      : rs(std::move(r)), index(idx), kv(pool), sampler(p, rs->req.prompt) {
    if (rs->req.constraint) matcher = std::make_unique<GrammarMatcher>(&rs->req.constraint->grammar);
  }
};

using SeqPtr = std::unique_ptr<Sequence>;

// Larger priority first, then earlier arrival, then choice index.
inline bool RunsBefore(const Sequence& a, const Sequence& b) {
  if (a.rs->req.priority != b.rs->req.priority) return a.rs->req.priority > b.rs->req.priority;
  if (a.rs->arrival != b.rs->arrival) return a.rs->arrival < b.rs->arrival;
  return a.index < b.index;
}

}  // namespace inferloop::llm
