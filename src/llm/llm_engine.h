// LlmEngine: continuous batching of many generation requests over one model and one paged KV
// cache, on one scheduler thread.
//
// Every step the scheduler builds one batch within a token budget: first one token for every
// sequence that is decoding (so running decodes are never stalled by a long prompt), then the
// next chunk of prompts being prefilled, then new requests (highest priority first, then
// arrival). KV blocks are taken on demand; a new request is admitted when blocks for its whole
// prompt are free. When a running sequence needs a block and none is free, the lowest-priority,
// most recently admitted sequence is preempted: its blocks are freed and it waits to be
// recomputed later (its full blocks stay in the prefix cache, so that is usually cheap). It is
// never failed. A request that could not fit even alone is refused up front by Submit.
//
// Full blocks enter the prefix cache as soon as they are computed, so requests sharing a prompt
// prefix reuse its blocks; `n` > 1 choices of one request share the prompt's blocks (copy on
// write) after one prefill.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "inferloop/status.h"
#include "llm/llama_model.h"
#include "llm/ngram_draft.h"
#include "llm/sampler.h"

namespace inferloop::llm {

struct EngineOptions {
  // KV cache size: `kv_blocks` blocks of `block_tokens` positions, or (kv_blocks = 0) as many
  // as fit in kv_cache_bytes.
  int kv_blocks = 0;
  size_t kv_cache_bytes = size_t{256} << 20;
  int block_tokens = 16;
  // Element type of the cached keys and values (Q8_0: ~1.9x the positions in the same bytes).
  KvType kv_type = KvType::kF16;
  // Tokens computed per step at most (decodes count one each; prompts are cut into chunks).
  int max_batch_tokens = 512;
  // Sequences in the running set at most.
  int max_running = 64;
  // Idle blocks the prefix cache keeps (-1: up to the whole pool; 0: no prefix cache).
  int prefix_cache_blocks = -1;
  // The prefix cache's disk tier (kv_disk_tier.h), "" for none: blocks evicted from memory are
  // written to prefix_cache_dir/<model identity>/ (and every cached block when the engine is
  // destroyed), within prefix_cache_disk_bytes, and read back for a later prompt when that is
  // cheaper than computing them (kv_tier_cost.h) or, with prefix_cache_disk_always_read, whenever
  // they are there (tests, benchmarks).
  std::string prefix_cache_dir;
  int64_t prefix_cache_disk_bytes = int64_t{4096} << 20;
  bool prefix_cache_disk_always_read = false;
  int threads = 0;  // compute threads; 0: the CPUs this process may use
  // Speculative decoding by prompt lookup (ngram_draft.h); draft.max_draft = 0: off. A decoding
  // sequence's draft is computed in the same forward pass as its next token; the sampler then
  // chooses token by token over the draft's logits and keeps the draft while it agrees, so the
  // tokens are the ones decoding without a draft chooses (same seed, same sampling parameters;
  // greedy included), up to the last bits of the logits where the batched matrix products round
  // differently from the one-token ones.
  NgramDraftOptions draft;
};

struct EngineStats;
struct GrammarConstraint;  // token_mask.h

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

struct GeneratedToken {
  int32_t token = 0;
  float logprob = 0;               // log-probability of `token` under the model (raw logits)
  std::vector<TokenLogprob> top;   // the `top_logprobs` most likely tokens, when asked
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", "cancelled", "error"

struct SequenceResult {
  int index = 0;              // choice index (0 .. n-1)
  FinishReason reason = FinishReason::kStop;
  Status error;               // set when reason is kError
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // prompt tokens taken from the prefix cache (not recomputed)
  int disk_cached_prompt_tokens = 0;  // of those, read from its disk tier
  int generated_tokens = 0;
  int preemptions = 0;
  double queue_seconds = 0;   // from Submit to the first step that computed any of it
};

// How an embedding request pools the final hidden states of its prompt's tokens (GGUF
// `<arch>.pooling_type` 1, 2, 3): their mean, the first token's, or the last token's.
enum class Pooling { kMean, kCls, kLast };

struct EngineRequest {
  std::vector<int32_t> prompt;  // non-empty token ids
  int max_tokens = 16;
  int n = 1;                    // independent choices sharing the prompt
  SamplingParams sampling;      // choice i samples with seed + i
  int priority = 0;             // larger runs first and is preempted last
  bool stop_at_eog = true;      // end at EOS / EOT (the token is not emitted)
  std::vector<int32_t> stop_token_ids;  // these end a choice too, with kStop (not emitted)
  int top_logprobs = -1;        // -1: no logprobs; k >= 0: chosen token's logprob + k alternatives
  // Called on the engine thread for each generated token of choice `index`; returning false
  // ends that choice with reason kStop (e.g. a stop string was seen). Must not block.
  std::function<bool(int index, const GeneratedToken&)> on_token;
  // Called once per choice when it ends (on the engine thread). Must not block.
  std::function<void(const SequenceResult&)> on_finish;
  // Optional: constrained decoding (token_mask.h). Each step, tokens the grammar refuses get a
  // logit of -inf before the sampler sees the logits (the reported logprobs are those of the
  // masked distribution, the one sampled from), and end-of-generation is allowed only where
  // the grammar can end. A state with no allowed token ends the choice with kError. Null: the
  // logits go to the sampler untouched.
  std::shared_ptr<GrammarConstraint> constraint;
  // Optional: setting it cancels the request too (e.g. the HTTP request's "client left" flag).
  std::shared_ptr<std::atomic<bool>> cancel_flag;
  // An embedding request: the prompt is computed (in chunks, batched with other work, never
  // matched in nor offered to the prefix cache: its blocks are freed at the end) and nothing is
  // generated; on_embedding gets the pooled final hidden states, L2-normalised (n_embd floats),
  // then on_finish reports kStop with generated_tokens 0. n must be 1; max_tokens and sampling
  // are not used. Called on the engine thread; must not block.
  bool embed = false;
  Pooling pooling = Pooling::kMean;
  std::function<void(std::vector<float> embedding)> on_embedding;
};

// Lets the submitter cancel a request (all its choices): its blocks are freed at the next step
// and on_finish reports kCancelled.
class RequestHandle {
 public:
  void Cancel() { cancelled_->store(true); }
  bool cancelled() const { return cancelled_->load(); }
  std::shared_ptr<std::atomic<bool>> flag() const { return cancelled_; }

 private:
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
};

struct EngineStats {
  int running = 0;
  int waiting = 0;
  int kv_blocks_total = 0;
  int kv_blocks_used = 0;       // held by sequences or the prefix cache
  int kv_blocks_cached_idle = 0;  // held only by the prefix cache (evictable)
  int64_t token_backlog = 0;    // prompt tokens of waiting requests not yet computed
  int64_t prompt_tokens = 0;    // totals since start
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_hit_tokens_disk = 0;  // of those, read from the disk tier
  // The prefix cache's disk tier (zeros without one): totals since the engine started, and the
  // bytes of block files it holds now.
  int64_t disk_bytes_read = 0;
  int64_t disk_bytes_written = 0;
  int64_t disk_bytes = 0;
  int64_t disk_errors = 0;  // damaged files found and failed writes
  int64_t disk_skipped_writes = 0;
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t draft_tokens = 0;           // speculative decoding: tokens drafted and verified
  int64_t draft_accepted_tokens = 0;  // of those, kept
};

class LlmEngine {
 public:
  static Result<std::unique_ptr<LlmEngine>> Create(std::shared_ptr<const LlamaModel> model, EngineOptions options);
  // Cancels everything still queued or running (on_finish with kCancelled) and stops. To end
  // without cancelling, Drain() first.
  ~LlmEngine();
  LlmEngine(const LlmEngine&) = delete;
  LlmEngine& operator=(const LlmEngine&) = delete;

  // Queues a request. InvalidArgument up front (nothing is called back) for an empty prompt,
  // token ids outside the vocab, n < 1, bad sampling parameters, a prompt plus max_tokens
  // beyond the model's context (an embedding request: the prompt beyond it), an embedding
  // request with n != 1, or a request whose blocks could not fit in the whole cache;
  // Unavailable once the engine is stopping.
  Result<RequestHandle> Submit(EngineRequest request);

  // Stops accepting requests (Submit: Unavailable from now on) and blocks until every request
  // already accepted has finished (its last on_finish has returned) or `deadline` passes; true
  // when all have. Requests end on their own terms (max_tokens, stop, or their cancel flag):
  // nothing accepted is cancelled by it. May be called again (e.g. in a loop with short deadlines).
  bool Drain(std::chrono::steady_clock::time_point deadline);

  EngineStats stats() const;
  // Called on the engine thread after every step with the current figures (for gauges). Set
  // before submitting work; must not block.
  void SetStepObserver(std::function<void(const EngineStats&)> observer);
  const LlamaModel& model() const;
  const EngineOptions& options() const;
  int kv_blocks() const;

  struct Impl;

 private:
  explicit LlmEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferloop::llm
