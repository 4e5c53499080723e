// LlmEngine on the real stories260k model: continuous batching gives every request the tokens
// it gets alone (greedy), under chunked prefill, preemption, prefix reuse, forks, priorities and
// cancellation; bad requests are refused up front.
#include "llm/llm_engine.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llm/generation.h"
#include "llm/grammar_matcher.h"
#include "llm/json_schema_grammar.h"
#include "llm/token_mask.h"

namespace inferloop::llm {
namespace {

std::shared_ptr<const LlamaModel> Stories() {
  static std::shared_ptr<const LlamaModel> m = [] {
    std::shared_ptr<const LlamaModel> p;
    if (!std::filesystem::exists(INFERLOOP_STORIES260K_GGUF)) return p;
    auto r = LlamaModel::Load(INFERLOOP_STORIES260K_GGUF);
    if (r.ok()) p = std::move(*r);
    return p;
  }();
  return m;
}

#define REQUIRE_STORIES(m) \
  auto m = Stories();      \
  if (m == nullptr) GTEST_SKIP() << "test model not present: " INFERLOOP_STORIES260K_GGUF " (see shared/models/README.md)"

std::vector<int32_t> Alone(const LlamaModel& m, const std::vector<int32_t>& prompt, int n) {
  GenerationOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  std::vector<int32_t> out;
  auto st = Generate(m, prompt, o, [&](int32_t id) {
    out.push_back(id);
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  return out;
}

// Collects what the engine reports, per request and choice.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::vector<int32_t>> tokens;  // (request, choice) -> ids
  std::map<std::pair<int, int>, SequenceResult> results;
  std::vector<int> finish_order;

  EngineRequest Make(int id, std::vector<int32_t> prompt, int max_tokens) {
    EngineRequest r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.on_token = [this, id](int idx, const GeneratedToken& g) {
      std::lock_guard<std::mutex> l(mu);
      tokens[{id, idx}].push_back(g.token);
      return true;
    };
    r.on_finish = [this, id](const SequenceResult& res) {
      std::lock_guard<std::mutex> l(mu);
      results[{id, res.index}] = res;
      finish_order.push_back(id);
      cv.notify_all();
    };
    return r;
  }
  std::vector<int32_t> Tok(int id, int idx) {
    std::lock_guard<std::mutex> l(mu);
    return tokens[{id, idx}];
  }
  SequenceResult Res(int id, int idx) {
    std::lock_guard<std::mutex> l(mu);
    return results[{id, idx}];
  }
  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(60), [&] { return results.size() >= n; })) << "timed out";
  }
};

const char* kPrompts[16] = {"Once upon a time", "The dog", "Lily and Ben", "One day", "A big red ball",
                            "Tom was sad", "The sun", "She saw a bird", "They went to the park", "Mom said",
                            "The little cat", "He wanted to", "There was a tree", "Sue had a toy", "It was dark",
                            "The end"};

TEST(LlmEngine, SixteenConcurrentEqualAloneWithChunkedPrefill) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.max_batch_tokens = 7;  // prompts are prefilled in chunks across steps, next to decodes
  o.kv_blocks = 16 * 4;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Collector c;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE((*e)->Submit(c.Make(i, m->tokenizer().Encode(kPrompts[i], true), 30)).ok());
  c.WaitFor(16);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(c.Tok(i, 0), Alone(*m, m->tokenizer().Encode(kPrompts[i], true), 30)) << kPrompts[i];
    EXPECT_EQ(c.Res(i, 0).reason, FinishReason::kLength);
    EXPECT_EQ(c.Res(i, 0).generated_tokens, 30);
  }
  EXPECT_GT((*e)->stats().steps, 30);
}

TEST(LlmEngine, PreemptsWhenBlocksRunOutAndStillAnswersEveryone) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.block_tokens = 4;
  o.kv_blocks = 40;  // each request below needs ~17 blocks: at most two run at once
  o.prefix_cache_blocks = 0;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  Collector c;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE((*e)->Submit(c.Make(i, m->tokenizer().Encode(kPrompts[i], true), 60)).ok());
  c.WaitFor(6);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(c.Tok(i, 0), Alone(*m, m->tokenizer().Encode(kPrompts[i], true), 60)) << kPrompts[i];
    EXPECT_EQ(c.Res(i, 0).reason, FinishReason::kLength);
  }
  const EngineStats st = (*e)->stats();
  EXPECT_GT(st.preemptions, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);  // everything returned
}

TEST(LlmEngine, PrefixCacheSkipsSharedPromptBlocks) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.block_tokens = 4;
  o.kv_blocks = 64;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  const std::vector<int32_t> prompt = m->tokenizer().Encode("Once upon a time there was a big dog named Max. Max liked", true);
  ASSERT_GT(prompt.size(), 12u);
  Collector c;
  ASSERT_TRUE((*e)->Submit(c.Make(0, prompt, 10)).ok());
  c.WaitFor(1);
  ASSERT_TRUE((*e)->Submit(c.Make(1, prompt, 10)).ok());
  c.WaitFor(2);
  EXPECT_EQ(c.Res(0, 0).cached_prompt_tokens, 0);
  const int reusable = static_cast<int>((prompt.size() - 1) / 4 * 4);
  EXPECT_EQ(c.Res(1, 0).cached_prompt_tokens, reusable);
  EXPECT_EQ(c.Tok(1, 0), c.Tok(0, 0));
  EXPECT_EQ(c.Tok(0, 0), Alone(*m, prompt, 10));
  EXPECT_EQ((*e)->stats().prefix_hit_tokens, reusable);
  EXPECT_GT((*e)->stats().kv_blocks_cached_idle, 0);
}

TEST(LlmEngine, ForkedChoicesShareThePromptAndMatchAlone) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.block_tokens = 4;
  o.kv_blocks = 64;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  Collector c;
  const std::vector<int32_t> prompt = m->tokenizer().Encode("The little cat", true);
  EngineRequest r = c.Make(0, prompt, 20);
  r.n = 3;
  ASSERT_TRUE((*e)->Submit(std::move(r)).ok());
  c.WaitFor(3);
  const auto alone = Alone(*m, prompt, 20);
  for (int i = 0; i < 3; ++i) EXPECT_EQ((c.Tok(0, i)), alone) << "choice " << i;  // greedy: all equal
  // Sampled choices differ (seeds differ) and each reproduces with its seed.
  Collector s;
  EngineRequest r2 = s.Make(0, prompt, 20);
  r2.n = 3;
  r2.sampling.temperature = 1.0f;
  r2.sampling.top_k = 0;
  r2.sampling.top_p = 1.0f;
  r2.sampling.seed = 7;
  ASSERT_TRUE((*e)->Submit(std::move(r2)).ok());
  s.WaitFor(3);
  EXPECT_NE((s.Tok(0, 0)), (s.Tok(0, 1)));
  EXPECT_EQ((*e)->stats().kv_blocks_used, (*e)->stats().kv_blocks_cached_idle);
}

TEST(LlmEngine, HigherPriorityRunsFirst) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.max_running = 1;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  Collector c;
  // The first occupies the engine; among those queued behind it, the high-priority one wins.
  ASSERT_TRUE((*e)->Submit(c.Make(0, m->tokenizer().Encode(kPrompts[0], true), 80)).ok());
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE((*e)->Submit(c.Make(i, m->tokenizer().Encode(kPrompts[i], true), 5)).ok());
  EngineRequest hi = c.Make(9, m->tokenizer().Encode(kPrompts[9], true), 5);
  hi.priority = 5;
  ASSERT_TRUE((*e)->Submit(std::move(hi)).ok());
  c.WaitFor(5);
  // Request 0 may already have been admitted or been preempted by 9; either way 9 beats 1..3.
  const auto pos = [&](int id) { return std::find(c.finish_order.begin(), c.finish_order.end(), id) - c.finish_order.begin(); };
  EXPECT_LT(pos(9), pos(1));
  EXPECT_LT(pos(1), pos(2));
  EXPECT_LT(pos(2), pos(3));
}

TEST(LlmEngine, CancelFreesBlocks) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.prefix_cache_blocks = 0;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  Collector c;
  EngineRequest r = c.Make(0, m->tokenizer().Encode(kPrompts[0], true), 100);
  r.stop_at_eog = false;
  std::atomic<int> seen{0};
  auto inner = r.on_token;
  r.on_token = [&, inner](int idx, const GeneratedToken& g) {
    ++seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a slow consumer, so the cancel lands mid-way
    return inner(idx, g);
  };
  auto h = (*e)->Submit(std::move(r));
  ASSERT_TRUE(h.ok());
  while (seen.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  h->Cancel();
  c.WaitFor(1);
  EXPECT_EQ(c.Res(0, 0).reason, FinishReason::kCancelled);
  EXPECT_LT(c.Res(0, 0).generated_tokens, 100);
  EXPECT_EQ((*e)->stats().kv_blocks_used, 0);
  EXPECT_EQ((*e)->stats().running, 0);
}

TEST(LlmEngine, RefusesRequestsThatCannotRun) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.block_tokens = 16;
  o.kv_blocks = 4;  // 64 positions
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  EngineRequest r;
  r.prompt = m->tokenizer().Encode(kPrompts[0], true);
  r.max_tokens = 100;  // 105 positions > 64
  auto h = (*e)->Submit(r);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("more than the whole cache"), std::string::npos) << h.status().message();
  r.max_tokens = 500;
  EXPECT_NE((*e)->Submit(r).status().message().find("context of 128"), std::string::npos);
  r.max_tokens = 4;
  r.prompt = {1, 9999};
  EXPECT_FALSE((*e)->Submit(r).ok());
  r.prompt = {};
  EXPECT_FALSE((*e)->Submit(r).ok());
  r.prompt = {1};
  r.n = 0;
  EXPECT_FALSE((*e)->Submit(r).ok());
}

TEST(LlmEngine, LogprobsAreNormalized) {
  REQUIRE_STORIES(m);
  auto e = LlmEngine::Create(m, {});
  ASSERT_TRUE(e.ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<GeneratedToken> got;
  bool done = false;
  EngineRequest r;
  r.prompt = m->tokenizer().Encode(kPrompts[0], true);
  r.max_tokens = 5;
  r.sampling.temperature = 0;
  r.top_logprobs = 3;
  r.on_token = [&](int, const GeneratedToken& g) {
    std::lock_guard<std::mutex> l(mu);
    got.push_back(g);
    return true;
  };
  r.on_finish = [&](const SequenceResult&) {
    std::lock_guard<std::mutex> l(mu);
    done = true;
    cv.notify_all();
  };
  ASSERT_TRUE((*e)->Submit(std::move(r)).ok());
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30), [&] { return done; }));
  ASSERT_EQ(got.size(), 5u);
  for (const GeneratedToken& g : got) {
    ASSERT_EQ(g.top.size(), 3u);
    EXPECT_EQ(g.top[0].token, g.token);  // greedy picks the most likely
    EXPECT_FLOAT_EQ(g.top[0].logprob, g.logprob);
    EXPECT_LE(g.logprob, 0.0f);
    EXPECT_GE(g.top[0].logprob, g.top[1].logprob);
    EXPECT_LT(std::exp(g.top[0].logprob) + std::exp(g.top[1].logprob) + std::exp(g.top[2].logprob), 1.0001f);
  }
}

TEST(LlmEngine, DrainFinishesEveryAcceptedRequestThenRefuses) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.max_running = 1;  // one runs, the others wait: Drain must see the waiting ones through too
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Collector c;
  // Request 0 holds the engine at its first token until `open`, so that the others are
  // still queued when Drain starts (no timing assumption).
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  EngineRequest first = c.Make(0, m->tokenizer().Encode(kPrompts[0], true), 20);
  first.stop_at_eog = false;
  auto inner = first.on_token;
  first.on_token = [&, inner](int idx, const GeneratedToken& g) {
    std::unique_lock<std::mutex> l(gate_mu);
    gate_cv.wait(l, [&] { return open; });
    return inner(idx, g);
  };
  ASSERT_TRUE((*e)->Submit(std::move(first)).ok());
  for (int i = 1; i < 4; ++i) {
    EngineRequest r = c.Make(i, m->tokenizer().Encode(kPrompts[i], true), 20);
    r.stop_at_eog = false;
    ASSERT_TRUE((*e)->Submit(std::move(r)).ok());
  }
  // Held: not drained by a deadline already passed, and no new request is accepted any more.
  EXPECT_FALSE((*e)->Drain(std::chrono::steady_clock::now()));
  auto refused = (*e)->Submit(c.Make(9, m->tokenizer().Encode(kPrompts[9], true), 5));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  {
    std::lock_guard<std::mutex> l(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  EXPECT_TRUE((*e)->Drain(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  // Every accepted request ran to its end (none cancelled) with the tokens it gets alone, and
  // its on_finish returned before Drain did.
  {
    std::lock_guard<std::mutex> l(c.mu);
    ASSERT_EQ(c.results.size(), 4u);  // request 9 was never accepted
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.Res(i, 0).reason, FinishReason::kLength) << i;
    EXPECT_EQ(c.Tok(i, 0), Alone(*m, m->tokenizer().Encode(kPrompts[i], true), 20)) << i;
  }
  EXPECT_EQ((*e)->stats().running + (*e)->stats().waiting, 0);
  EXPECT_TRUE((*e)->Drain(std::chrono::steady_clock::now()));  // again: still drained
}

// Speculative decoding by prompt lookup: prompts that repeat themselves, so that drafts are
// found and (often) accepted.
const char* kRepetitive[4] = {
    "Once upon a time, there was a little girl named Lily. She loved to play outside. Once upon a time, there was",
    "The dog ran to the park. The dog ran to the park. The dog ran to the",
    "Tom had a big red ball. He liked the big red ball. One day, Tom",
    "Lily and Ben were friends. They liked to play. Lily and Ben were"};

// Every request alone with and without drafts: `sampling` for all, `n` tokens; the drafted
// engine's stats come back in `*stats`.
std::vector<std::vector<int32_t>> RunAll(std::shared_ptr<const LlamaModel> m, EngineOptions o, const SamplingParams& sp,
                                         int n, EngineStats* stats) {
  auto e = LlmEngine::Create(m, o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  Collector c;
  for (int i = 0; i < 4; ++i) {
    EngineRequest r = c.Make(i, m->tokenizer().Encode(kRepetitive[i], true), n);
    r.sampling = sp;
    r.sampling.seed = sp.seed + i;
    r.stop_at_eog = false;
    EXPECT_TRUE((*e)->Submit(std::move(r)).ok());
  }
  c.WaitFor(4);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < 4; ++i) {
    out.push_back(c.Tok(i, 0));
    EXPECT_EQ(c.Res(i, 0).reason, FinishReason::kLength);
    EXPECT_EQ(c.Res(i, 0).generated_tokens, n);
    EXPECT_EQ(static_cast<int>(out.back().size()), n);
  }
  if (stats) *stats = (*e)->stats();
  return out;
}

TEST(LlmEngineSpeculative, GreedyOutputEqualsDecodingAlone) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.draft.max_draft = 6;
  SamplingParams greedy;
  greedy.temperature = 0;
  EngineStats st;
  auto out = RunAll(m, o, greedy, 48, &st);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], Alone(*m, m->tokenizer().Encode(kRepetitive[i], true), 48)) << i;
  EXPECT_GT(st.draft_accepted_tokens, 20) << "drafted " << st.draft_tokens;
  EXPECT_LE(st.draft_accepted_tokens, st.draft_tokens);
  // Fewer steps than tokens: accepted drafts saved decoding steps.
  EXPECT_LT(st.steps, 48);
}

TEST(LlmEngineSpeculative, SeededSamplingWithPenaltiesEqualsNoDraft) {
  REQUIRE_STORIES(m);
  SamplingParams sp;
  sp.temperature = 0.7f;
  sp.top_k = 20;
  sp.seed = 42;
  sp.repetition_penalty = 1.05f;
  sp.frequency_penalty = 0.1f;
  EngineOptions plain;
  EngineOptions drafted;
  drafted.draft.max_draft = 8;
  EngineStats st;
  auto want = RunAll(m, plain, sp, 40, nullptr);
  auto got = RunAll(m, drafted, sp, 40, &st);
  EXPECT_EQ(got, want);
  EXPECT_GT(st.draft_accepted_tokens, 0) << "drafted " << st.draft_tokens;
}

TEST(LlmEngineSpeculative, SmallBudgetAndPreemptionKeepTheOutput) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.draft.max_draft = 8;
  o.max_batch_tokens = 5;  // drafts cut to the budget left, prompts chunked next to them
  o.block_tokens = 4;
  o.kv_blocks = 30;        // two sequences at most fit at once: preemption drops drafts
  o.prefix_cache_blocks = 0;
  SamplingParams greedy;
  greedy.temperature = 0;
  EngineStats st;
  auto out = RunAll(m, o, greedy, 40, &st);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], Alone(*m, m->tokenizer().Encode(kRepetitive[i], true), 40)) << i;
  EXPECT_GT(st.draft_accepted_tokens, 0);
  EXPECT_GT(st.preemptions, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);
}

TEST(LlmEngineSpeculative, StopInsideAnAcceptedDraftEndsThere) {
  REQUIRE_STORIES(m);
  EngineOptions o;
  o.draft.max_draft = 8;
  auto e = LlmEngine::Create(m, o);
  ASSERT_TRUE(e.ok());
  Collector c;
  const std::vector<int32_t> prompt = m->tokenizer().Encode(kRepetitive[1], true);
  const std::vector<int32_t> alone = Alone(*m, prompt, 30);
  for (int stop_at : {1, 3, 7, 12}) {
    EngineRequest r = c.Make(stop_at, prompt, 30);
    auto inner = r.on_token;
    auto count = std::make_shared<int>(0);
    r.on_token = [inner, count, stop_at](int idx, const GeneratedToken& g) {
      inner(idx, g);
      return ++*count < stop_at;  // the stop_at-th token is the last
    };
    ASSERT_TRUE((*e)->Submit(std::move(r)).ok());
  }
  c.WaitFor(4);
  for (int stop_at : {1, 3, 7, 12}) {
    EXPECT_EQ(c.Tok(stop_at, 0), std::vector<int32_t>(alone.begin(), alone.begin() + stop_at)) << stop_at;
    EXPECT_EQ(c.Res(stop_at, 0).reason, FinishReason::kStop);
    EXPECT_EQ(c.Res(stop_at, 0).generated_tokens, stop_at);
  }
  EXPECT_GT((*e)->stats().draft_accepted_tokens, 0);
}

}  // namespace
}  // namespace inferloop::llm

namespace inferloop::llm {
namespace {

// The embedding of each prompt from `e`, submitted together (next to `generations` greedy
// generations of 40 tokens).
std::vector<std::vector<float>> Embeddings(LlmEngine& e, const LlamaModel& m, Pooling pooling, int generations) {
  Collector c;
  std::mutex mu;
  std::vector<std::vector<float>> out(16);
  for (int i = 0; i < generations; ++i) EXPECT_TRUE(e.Submit(c.Make(100 + i, m.tokenizer().Encode(kPrompts[i], true), 40)).ok());
  for (int i = 0; i < 16; ++i) {
    EngineRequest r = c.Make(i, m.tokenizer().Encode(kPrompts[i], true), 0);
    r.embed = true;
    r.pooling = pooling;
    r.on_embedding = [&mu, &out, i](std::vector<float> v) {
      std::lock_guard<std::mutex> l(mu);
      out[i] = std::move(v);
    };
    EXPECT_TRUE(e.Submit(std::move(r)).ok());
  }
  c.WaitFor(16 + generations);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(c.Res(i, 0).reason, FinishReason::kStop);
    EXPECT_EQ(c.Res(i, 0).generated_tokens, 0);
    EXPECT_TRUE(c.Tok(i, 0).empty());
  }
  return out;
}

TEST(LlmEngine, EmbeddingsInChunksNextToGenerationsEqualOneBigBatch) {
  REQUIRE_STORIES(m);
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    EngineOptions big;
    auto whole = LlmEngine::Create(m, big);
    ASSERT_TRUE(whole.ok());
    const auto want = Embeddings(**whole, *m, pooling, 0);
    // Nothing kept: an embedding's blocks never enter the prefix cache (on by default).
    EXPECT_EQ((*whole)->stats().kv_blocks_used, 0);
    EngineOptions o;
    o.max_batch_tokens = 3;  // every prompt is cut into chunks, next to the generations' decodes
    o.block_tokens = 4;
    o.kv_blocks = 20;  // too few for everything at once: sequences are preempted
    auto e = LlmEngine::Create(m, o);
    ASSERT_TRUE(e.ok());
    const auto got = Embeddings(**e, *m, pooling, 4);
    for (int i = 0; i < 16; ++i) {
      ASSERT_EQ(got[i].size(), m->hparams().n_embd);
      double norm = 0;
      for (size_t k = 0; k < got[i].size(); ++k) {
        EXPECT_NEAR(got[i][k], want[i][k], 1e-5) << kPrompts[i] << " " << k;
        norm += static_cast<double>(got[i][k]) * got[i][k];
      }
      EXPECT_NEAR(norm, 1.0, 1e-5);
    }
    EXPECT_GT((*e)->stats().preemptions, 0);
  }
}

TEST(LlmEngine, RefusesEmbeddingsWithSeveralChoicesOrBeyondTheContext) {
  REQUIRE_STORIES(m);
  auto e = LlmEngine::Create(m, EngineOptions{});
  ASSERT_TRUE(e.ok());
  EngineRequest r;
  r.embed = true;
  r.prompt = {1, 2, 3};
  r.n = 2;
  EXPECT_EQ((*e)->Submit(r).status().code(), StatusCode::kInvalidArgument);
  r.n = 1;
  r.prompt.assign(m->hparams().n_ctx_train + 1, 5);
  EXPECT_EQ((*e)->Submit(r).status().code(), StatusCode::kInvalidArgument);
  r.prompt.assign(m->hparams().n_ctx_train, 5);  // the whole context: nothing is generated after it
  EXPECT_TRUE((*e)->Submit(r).ok());
}

}  // namespace
}  // namespace inferloop::llm

namespace inferloop::llm {
namespace {

// Constrained decoding in the engine: every choice (sampled, n = 4, with forks and next to an
// unconstrained request) writes only text the grammar accepts, ends where the grammar ends, and
// the unconstrained request gets exactly what it gets alone.
TEST(LlmEngine, GrammarConstraintHoldsForEveryChoice) {
  REQUIRE_STORIES(m);
  auto e = LlmEngine::Create(m, EngineOptions{});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  auto g = JsonSchemaToGrammar(R"({"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},
      "ok":{"type":"boolean"}},"required":["n","ok"]})", {true});
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto constraint = std::make_shared<GrammarConstraint>(std::move(*g), TokenVocabulary::FromTokenizer(m->tokenizer()));
  Collector c;
  const std::vector<int32_t> prompt = m->tokenizer().Encode("Once upon a time", true);
  EngineRequest r = c.Make(0, prompt, 60);
  r.n = 4;
  r.sampling.temperature = 1;
  r.sampling.seed = 3;
  r.top_logprobs = 3;
  r.constraint = constraint;
  ASSERT_TRUE((*e)->Submit(std::move(r)).ok());
  ASSERT_TRUE((*e)->Submit(c.Make(1, prompt, 20)).ok());
  c.WaitFor(5);
  for (int i = 0; i < 4; ++i) {
    GrammarMatcher matcher(&constraint->grammar);
    std::string text;
    for (int32_t t : c.Tok(0, i)) text += m->tokenizer().Piece(t);
    EXPECT_TRUE(matcher.Advance(text)) << text;
    EXPECT_TRUE(matcher.CanEnd()) << text;
    EXPECT_EQ(c.Res(0, i).reason, FinishReason::kStop) << text;
  }
  EXPECT_EQ(c.Tok(1, 0), Alone(*m, prompt, 20));
  EXPECT_GT(constraint->masker.hits() + constraint->masker.misses(), 0);
}

}  // namespace
}  // namespace inferloop::llm
