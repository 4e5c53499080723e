#include "llm/generation.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "base/status_macros.h"
#include "base/thread_pool.h"

namespace inferloop::llm {

Status ValidateGeneration(const LlamaModel& model, const std::vector<int32_t>& prompt,
                          const GenerationOptions& o) {
  const int32_t vocab = model.tokenizer().vocab_size();
  IL_RETURN_IF_ERROR(ValidateSamplingParams(o.sampling, vocab));
  if (prompt.empty()) return Status::InvalidArgument("the prompt has no tokens");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      return Status::InvalidArgument("prompt token " + std::to_string(i) + " (" + std::to_string(prompt[i]) +
                                     ") is not a token id of this model (0.." + std::to_string(vocab - 1) + ")");
  if (o.max_tokens < 0) return Status::InvalidArgument("max_tokens must be >= 0");
  const int64_t total = static_cast<int64_t>(prompt.size()) + o.max_tokens;
  const int64_t ctx = model.hparams().n_ctx_train;
  if (total > ctx) {
    return Status::InvalidArgument("prompt (" + std::to_string(prompt.size()) + " tokens) plus max_tokens (" +
                                   std::to_string(o.max_tokens) + ") asks for " + std::to_string(total) +
                                   " tokens, which exceeds the model's context of " +
                                   std::to_string(ctx) + " tokens");
  }
  return Status::Ok();
}

Result<GenerationStats> Generate(const LlamaModel& model, const std::vector<int32_t>& prompt,
                                 const GenerationOptions& o, const TokenCallback& on_token) {
  IL_RETURN_IF_ERROR(ValidateGeneration(model, prompt, o));
  const int64_t total = static_cast<int64_t>(prompt.size()) + o.max_tokens;
  const KvCacheShape shape = model.kv_shape(16, o.kv_type);
  const int blocks = static_cast<int>((total + shape.block_tokens - 1) / shape.block_tokens);
  IL_ASSIGN_OR_RETURN(KvBlockPool pool, KvBlockPool::Create(shape, blocks));
  KvSequence seq(&pool);
  IL_RETURN_IF_ERROR(seq.Reserve(static_cast<int>(total)));
  ThreadPool* threads = SharedThreadPool(o.threads);
  std::vector<float> logits(model.hparams().n_vocab);
  ForwardScratch scratch;
  GenerationStats st;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  // Prefill in steps of up to 256 tokens, each one batched forward pass.
  constexpr size_t kChunk = 256;
  std::vector<BatchToken> batch;
  for (size_t start = 0; start < prompt.size(); start += kChunk) {
    const size_t end = std::min(prompt.size(), start + kChunk);
    batch.clear();
    for (size_t i = start; i < end; ++i) batch.push_back({&seq, static_cast<int>(i), prompt[i], i + 1 == prompt.size()});
    IL_RETURN_IF_ERROR(model.Forward(batch, logits.data(), threads, nullptr, &scratch));
  }
  auto t1 = Clock::now();
  st.prompt_tokens = static_cast<int>(prompt.size());
  st.prompt_seconds = std::chrono::duration<double>(t1 - t0).count();
  Sampler sampler(o.sampling, prompt);
  int pos = static_cast<int>(prompt.size());
  for (int n = 0; n < o.max_tokens; ++n) {
    const int32_t tok = sampler.Sample(logits);
    ++st.generated_tokens;
    const bool eog = o.stop_at_eog && model.tokenizer().IsEndOfGeneration(tok);
    if (eog) {
      st.stopped_at_eog = true;
      break;
    }
    if (!on_token(tok)) break;
    if (n + 1 == o.max_tokens) break;  // the last token needs no forward pass
    IL_RETURN_IF_ERROR(model.Forward(tok, pos++, seq, logits.data(), threads, &scratch));
  }
  st.generate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return st;
}

}  // namespace inferloop::llm
