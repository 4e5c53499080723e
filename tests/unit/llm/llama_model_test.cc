// The llama decoder, tokenizer, sampler and KV block pool on the real stories260k model, against
// the reference ids llama.cpp and llama2.c both produce (shared/models/README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "llm/generation.h"
#include "llm/kv_block_pool.h"
#include "llm/llama_model.h"
#include "llm/sampler.h"
#include "llm/tokenizer.h"

namespace inferloop::llm {
namespace {

std::unique_ptr<LlamaModel> LoadStories() {
  const std::string path = INFERLOOP_STORIES260K_GGUF;
  if (!std::filesystem::exists(path)) return nullptr;
  auto m = LlamaModel::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

#define REQUIRE_STORIES(m)                                                             \
  auto m = LoadStories();                                                              \
  if (m == nullptr) GTEST_SKIP() << "test model not present: " INFERLOOP_STORIES260K_GGUF \
                                    " (see shared/models/README.md)"

std::vector<int32_t> Ids(const std::string& s) {
  std::istringstream in(s);
  std::vector<int32_t> v;
  for (int32_t x; in >> x;) v.push_back(x);
  return v;
}

TEST(LlamaModel, Hparams) {
  REQUIRE_STORIES(m);
  const LlamaHparams& h = m->hparams();
  EXPECT_EQ(h.arch, "llama");
  EXPECT_EQ(h.n_embd, 64u);
  EXPECT_EQ(h.n_layer, 5u);
  EXPECT_EQ(h.n_head, 8u);
  EXPECT_EQ(h.n_head_kv, 4u);
  EXPECT_EQ(h.head_dim, 8u);
  EXPECT_EQ(h.n_ff, 172u);
  EXPECT_EQ(h.n_vocab, 512u);
  EXPECT_EQ(h.rope_style, RopeStyle::kNorm);
}

TEST(Tokenizer, MatchesLlamaCppReference) {
  REQUIRE_STORIES(m);
  const Tokenizer& t = m->tokenizer();
  EXPECT_EQ(t.Encode("Once upon a time", /*add_bos=*/true), Ids("1 403 407 261 378"));
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_TRUE(t.IsEndOfGeneration(2));
  EXPECT_FALSE(t.IsEndOfGeneration(403));
}

TEST(Tokenizer, RoundTripsWithByteFallback) {
  REQUIRE_STORIES(m);
  const Tokenizer& t = m->tokenizer();
  for (const std::string s : {"Hello world", "  two  spaces\tand\ttabs\n", "h\xC3\xA9llo \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC",
                              "\xFF\xFE invalid utf8", "x"}) {
    const std::vector<int32_t> ids = t.Encode(s, false);
    EXPECT_EQ(t.Decode(ids), " " + s) << s;  // the llama vocab adds a leading space
    // ... which the text of a whole sequence leaves out (llama_detokenize), BOS first or not.
    EXPECT_EQ(t.DecodeText(ids), s) << s;
    EXPECT_EQ(t.DecodeText(t.Encode(s, true)), s) << s;
    for (int32_t id : ids) EXPECT_NE(id, 0) << "unknown token for " << s;  // bytes fall back, never <unk>
  }
  EXPECT_TRUE(t.Encode("", false).empty());
  // Control tokens in text are literal unless parse_special.
  EXPECT_EQ(t.Encode("</s>", false, /*parse_special=*/true), std::vector<int32_t>{2});
  EXPECT_NE(t.Encode("</s>", false, false), std::vector<int32_t>{2});
}

TEST(LlamaModel, GreedyMatchesLlamaCppReference) {
  REQUIRE_STORIES(m);
  GenerationOptions o;
  o.max_tokens = 64;
  o.sampling.temperature = 0;
  o.threads = 1;
  std::vector<int32_t> got;
  auto st = Generate(*m, m->tokenizer().Encode("Once upon a time", true), o, [&](int32_t id) {
    got.push_back(id);
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(got, Ids("432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 "
                     "295 433 426 385 328 432 358 394 261 370 432 352 266 268 388 426 338 391 266 267 337 335 312 432 "
                     "398 312 286 267 414 270 333 415 426 13 438 310 439 419 357 336"));
  EXPECT_EQ(st->prompt_tokens, 5);
  EXPECT_EQ(st->generated_tokens, 64);
  EXPECT_EQ(m->tokenizer().Decode(got),
            ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
            "red ball. She wanted to play with it, but it was too high.\nLily's mom said");
}

TEST(LlamaModel, ThreadedForwardEqualsSingleThreaded) {
  REQUIRE_STORIES(m);
  GenerationOptions o;
  o.max_tokens = 20;
  o.sampling.temperature = 0;
  std::vector<int32_t> one, two;
  o.threads = 1;
  ASSERT_TRUE(Generate(*m, m->tokenizer().Encode("The cat", true), o, [&](int32_t id) { one.push_back(id); return true; }).ok());
  o.threads = 2;
  ASSERT_TRUE(Generate(*m, m->tokenizer().Encode("The cat", true), o, [&](int32_t id) { two.push_back(id); return true; }).ok());
  EXPECT_EQ(one, two);
}

// 16 sequences decoded together in one batch per step give each the ids it gets alone
// (greedy): batching changes no sequence's numbers enough to flip a choice.
TEST(LlamaModel, BatchedDecodeEqualsAlone) {
  REQUIRE_STORIES(m);
  const char* prompts[16] = {"Once upon a time", "The dog", "Lily and Ben", "One day", "A big red ball",
                             "Tom was sad", "The sun", "She saw a bird", "They went to the park", "Mom said",
                             "The little cat", "He wanted to", "There was a tree", "Sue had a toy", "It was dark",
                             "The end"};
  const int kNew = 24;
  GenerationOptions o;
  o.max_tokens = kNew;
  o.sampling.temperature = 0;
  o.stop_at_eog = false;
  std::vector<std::vector<int32_t>> alone(16);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(Generate(*m, m->tokenizer().Encode(prompts[i], true), o, [&](int32_t id) {
      alone[i].push_back(id);
      return true;
    }).ok());
  }
  auto pool = KvBlockPool::Create(m->kv_shape(), 16 * 8);
  ASSERT_TRUE(pool.ok());
  std::vector<KvSequence> seqs;
  std::vector<std::vector<int32_t>> ids(16), got(16);
  for (int i = 0; i < 16; ++i) {
    seqs.emplace_back(&*pool);
    ids[i] = m->tokenizer().Encode(prompts[i], true);
    ASSERT_TRUE(seqs[i].Reserve(static_cast<int>(ids[i].size()) + kNew).ok());
  }
  const int V = static_cast<int>(m->hparams().n_vocab);
  // Step 0 prefills all prompts in one batch; later steps decode one token per sequence.
  std::vector<BatchToken> batch;
  for (int i = 0; i < 16; ++i) {
    for (size_t p = 0; p < ids[i].size(); ++p) batch.push_back({&seqs[i], static_cast<int>(p), ids[i][p], p + 1 == ids[i].size()});
  }
  std::vector<float> logits(16 * V);
  for (int step = 0; step < kNew; ++step) {
    ASSERT_TRUE(m->Forward(batch, logits.data(), nullptr).ok());
    batch.clear();
    for (int i = 0; i < 16; ++i) {
      const int32_t next = ArgMax(std::span<const float>(logits.data() + i * V, V));
      got[i].push_back(next);
      batch.push_back({&seqs[i], static_cast<int>(ids[i].size()) + step, next, true});
    }
  }
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], alone[i]) << prompts[i];
}

TEST(LlamaModel, BadInputsAreErrors) {
  REQUIRE_STORIES(m);
  GenerationOptions o;
  o.max_tokens = 1000;  // context is 128
  auto st = Generate(*m, {1, 403}, o, [](int32_t) { return true; });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("exceeds the model's context of 128"), std::string::npos) << st.status().message();
  o.max_tokens = 4;
  EXPECT_FALSE(Generate(*m, {}, o, [](int32_t) { return true; }).ok());
  EXPECT_FALSE(Generate(*m, {1, 5000}, o, [](int32_t) { return true; }).ok());
  o.sampling.top_p = 0;
  EXPECT_FALSE(Generate(*m, {1}, o, [](int32_t) { return true; }).ok());
  EXPECT_EQ(LlamaModel::Load("/nonexistent.gguf").status().code(), StatusCode::kNotFound);

  // A KV cache laid out for another shape (here: the model's values as one head) is refused, not
  // written with the wrong head offsets.
  KvCacheShape wrong = m->kv_shape();
  wrong.head_dim = 0;
  auto pool = KvBlockPool::Create(wrong, 2);
  ASSERT_TRUE(pool.ok());
  KvSequence seq(&*pool);
  ASSERT_TRUE(seq.Reserve(1).ok());
  std::vector<float> logits(m->hparams().n_vocab);
  const Status bad = m->Forward(1, 0, seq, logits.data(), nullptr);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("is not this model's"), std::string::npos) << bad.message();
}

// ArgMax against the plain loop it replaced: the first index whose value is larger than every
// earlier one, over lengths around its 8-wide steps, with ties, signed zeros, infinities and NaNs
// (a NaN at index 0 is the answer; NaNs elsewhere are never chosen).
TEST(Sampler, ArgMaxIsTheFirstLargestValue) {
  auto plain = [](const std::vector<float>& v) {
    int32_t best = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] > v[best]) best = static_cast<int32_t>(i);
    }
    return best;
  };
  std::mt19937 g(5);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, inf, -inf, nan};
  std::uniform_int_distribution<int> pick(0, 7);
  for (int trial = 0; trial < 4000; ++trial) {
    const size_t n = 1 + trial % 40;
    std::vector<float> v(n);
    for (float& x : v) x = pool[pick(g)];
    if (trial % 3 == 0) v[0] = -inf;  // fewer NaN-first cases than a uniform draw gives
    ASSERT_EQ(ArgMax(v), plain(v)) << "trial " << trial;
  }
  std::vector<float> big(32003);
  std::normal_distribution<float> nd;
  for (float& x : big) x = nd(g);
  big[31000] = 9.0f;
  big[32001] = 9.0f;
  EXPECT_EQ(ArgMax(big), 31000);
  EXPECT_EQ(ArgMax(std::vector<float>{nan, 1.0f}), 0);
}

TEST(Sampler, SeedReproducesAndTopKLimits) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};
  EXPECT_EQ(ArgMax(logits), 1);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  p.top_p = 1.0f;
  p.seed = 42;
  Sampler a(p), b(p);
  int counts[5] = {};
  for (int i = 0; i < 2000; ++i) {
    const int32_t x = a.Sample(logits);
    EXPECT_EQ(x, b.Sample(logits));
    ++counts[x];
  }
  EXPECT_EQ(counts[0] + counts[2] + counts[3], 0);  // only the two best
  EXPECT_GT(counts[1], 800);                         // exp(3)/(exp(3)+exp(2.9)) = 0.525
  EXPECT_GT(counts[4], 800);
  p.top_k = 0;
  p.top_p = 0.3f;  // the best token alone holds more than 0.3
  Sampler c(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(c.Sample(logits), 1);
}

TEST(KvBlockPool, TakesAndReturnsBlocks) {
  auto pool = KvBlockPool::Create({2, 8, 16}, 4);
  ASSERT_TRUE(pool.ok());
  {
    KvSequence a(&*pool), b(&*pool);
    ASSERT_TRUE(a.Reserve(17).ok());  // 2 blocks
    EXPECT_EQ(a.capacity(), 32);
    EXPECT_EQ(pool->free_blocks(), 2);
    ASSERT_TRUE(b.Reserve(32).ok());
    EXPECT_EQ(pool->free_blocks(), 0);
    const Status full = b.Reserve(33);
    EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(b.capacity(), 32);  // unchanged
    // Distinct storage per position, layer, K/V.
    a.KeyHead(0, 0, 0)[0] = 1;
    a.KeyHead(1, 0, 0)[0] = 2;
    a.ValueHead(0, 0, 0)[0] = 3;
    a.KeyHead(0, 0, 17)[0] = 4;
    b.KeyHead(0, 0, 0)[0] = 5;
    EXPECT_EQ(a.KeyHead(0, 0, 0)[0], 1);
    EXPECT_EQ(a.KeyHead(1, 0, 0)[0], 2);
    EXPECT_EQ(a.ValueHead(0, 0, 0)[0], 3);
    EXPECT_EQ(a.KeyHead(0, 0, 17)[0], 4);
  }
  EXPECT_EQ(pool->free_blocks(), 4);  // returned when the sequences ended
  EXPECT_FALSE(KvBlockPool::Create({0, 8, 16}, 4).ok());
}

}  // namespace
}  // namespace inferloop::llm
