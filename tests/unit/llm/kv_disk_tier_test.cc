// The prefix cache's disk tier: block files (round trip, corruption, truncation, wrong identity
// or version), the tier (budget LRU, restart, damaged files dropped, unusable folder), the cost
// rule, and on stories260k a sequence computed with blocks read from disk (also after an engine
// restart) gives exactly the tokens and log-probabilities of one computed cold.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "llm/kv_block_file.h"
#include "llm/kv_disk_tier.h"
#include "llm/kv_tier_cost.h"
#include "llm/llm_engine.h"

namespace inferloop::llm {
namespace {
namespace fs = std::filesystem;

constexpr int kTokens = 4;
constexpr size_t kKvBytes = 256;
const KvModelIdentity kId{0x1234, 0x5678};

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kv_disk_tier_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<uint8_t> Kv(uint8_t seed) {
  std::vector<uint8_t> v(kKvBytes);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(seed * 31 + i);
  return v;
}

std::vector<int32_t> Toks(int seed) { return {seed, seed + 1, seed + 2, seed + 3}; }

TEST(KvBlockFile, RoundTrip) {
  const auto kv = Kv(3);
  const auto file = EncodeKvBlockFile(kId, Toks(7), 99, 42, kv);
  ASSERT_EQ(file.size(), KvBlockFileBytes(kTokens, kKvBytes));
  const KvBlockDecode d = DecodeKvBlockFile(file, kId, kTokens, kKvBytes);
  ASSERT_EQ(d.problem, KvBlockFileProblem::kNone) << d.reason;
  EXPECT_EQ(d.record.chain, 99u);
  EXPECT_EQ(d.record.parent, 42u);
  EXPECT_EQ(d.record.tokens, Toks(7));
  EXPECT_TRUE(std::equal(kv.begin(), kv.end(), d.record.kv.begin(), d.record.kv.end()));
}

TEST(KvBlockFile, EveryFlippedByteAndTruncationIsRefused) {
  const auto file = EncodeKvBlockFile(kId, Toks(7), 99, 42, Kv(3));
  for (size_t i = 0; i < file.size(); ++i) {
    auto bad = file;
    bad[i] ^= 0x5a;
    EXPECT_NE(DecodeKvBlockFile(bad, kId, kTokens, kKvBytes).problem, KvBlockFileProblem::kNone) << "byte " << i;
  }
  for (size_t n = 0; n < file.size(); ++n) {
    const KvBlockDecode d = DecodeKvBlockFile(std::span(file).first(n), kId, kTokens, kKvBytes);
    EXPECT_EQ(d.problem, n < 8 ? KvBlockFileProblem::kForeign : KvBlockFileProblem::kDamaged) << n << " bytes";
  }
  auto longer = file;
  longer.push_back(0);
  EXPECT_EQ(DecodeKvBlockFile(longer, kId, kTokens, kKvBytes).problem, KvBlockFileProblem::kDamaged);
}

TEST(KvBlockFile, OtherModelLayoutOrVersionIsForeign) {
  const auto file = EncodeKvBlockFile(kId, Toks(7), 99, 42, Kv(3));
  const KvBlockDecode other = DecodeKvBlockFile(file, KvModelIdentity{1, 2}, kTokens, kKvBytes);
  EXPECT_EQ(other.problem, KvBlockFileProblem::kForeign);
  EXPECT_NE(other.reason.find("another model"), std::string::npos) << other.reason;
  auto v1 = file;  // version 1: the KV bytes of the interleaved-head layout
  v1[4] = 1;
  EXPECT_EQ(DecodeKvBlockFile(v1, kId, kTokens, kKvBytes).problem, KvBlockFileProblem::kForeign);
  auto v3 = file;
  v3[4] = 3;
  EXPECT_EQ(DecodeKvBlockFile(v3, kId, kTokens, kKvBytes).problem, KvBlockFileProblem::kForeign);
  // The same weights with another KV layout have another identity.
  const std::vector<uint8_t> model = {1, 2, 3};
  KvCacheShape a{2, 64, 16, KvType::kF16, 32}, b = a;
  b.type = KvType::kQ8_0;
  EXPECT_NE(KvModelIdentityOf(model, a), KvModelIdentityOf(model, b));
  b = a;
  b.block_tokens = 32;
  EXPECT_NE(KvModelIdentityOf(model, a), KvModelIdentityOf(model, b));
  EXPECT_EQ(KvModelIdentityOf(model, a), KvModelIdentityOf(model, a));
}

// The fuzzer's seeds (tests/fuzz/corpus_kv_block/, identity as in kv_block_file_fuzzer.cc):
// INFERLOOP_WRITE_KV_CORPUS=1 writes them; otherwise the committed ones must equal them.
TEST(KvBlockFile, FuzzSeedCorpusIsCurrent) {
  const KvModelIdentity fuzz_id{0x0123456789abcdefull, 0xfedcba9876543210ull};
  auto valid = EncodeKvBlockFile(fuzz_id, Toks(7), 99, 42, Kv(3));
  auto small = EncodeKvBlockFile(fuzz_id, std::vector<int32_t>(16, 5), 1, 0, std::vector<uint8_t>(64, 9));
  auto damaged = valid;
  damaged[100] ^= 1;
  const auto foreign = EncodeKvBlockFile(KvModelIdentity{1, 2}, Toks(7), 99, 42, Kv(3));
  const std::map<std::string, std::vector<uint8_t>> seeds = {
      {"valid_4x256.ilkv", valid}, {"valid_16x64.ilkv", small}, {"damaged.ilkv", damaged},
      {"foreign.ilkv", foreign}, {"truncated.ilkv", std::vector<uint8_t>(valid.begin(), valid.begin() + 70)}};
  const fs::path dir = fs::path(INFERLOOP_SOURCE_DIR) / "tests/fuzz/corpus_kv_block";
  for (const auto& [name, bytes] : seeds) {
    if (std::getenv("INFERLOOP_WRITE_KV_CORPUS")) {
      std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                        static_cast<std::streamsize>(bytes.size()));
    }
    std::ifstream f(dir / name, std::ios::binary);
    const std::vector<uint8_t> got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got, bytes) << name << ": run with INFERLOOP_WRITE_KV_CORPUS=1 to rewrite the seeds";
  }
}

std::unique_ptr<KvDiskTier> OpenTier(const fs::path& dir, int64_t budget = int64_t{1} << 30,
                                     KvModelIdentity id = kId) {
  KvDiskTierOptions o;
  o.dir = dir.string();
  o.budget_bytes = budget;
  auto t = KvDiskTier::Open(o, id, kTokens, kKvBytes);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

bool ReadBack(KvDiskTier& t, uint64_t chain, uint64_t parent, int seed, std::vector<uint8_t>* out) {
  out->assign(kKvBytes, 0);
  return t.Read(chain, parent, Toks(seed), *out);
}

TEST(KvDiskTier, WritesReadsAndSurvivesARestart) {
  TempDir d;
  {
    auto t = OpenTier(d.path);
    t->Write(1, 0, Toks(10), Kv(1), false);
    t->Write(2, 1, Toks(20), Kv(2), false);
    t->Flush();
    std::vector<uint8_t> got;
    ASSERT_TRUE(ReadBack(*t, 2, 1, 20, &got));
    EXPECT_EQ(got, Kv(2));
    EXPECT_FALSE(ReadBack(*t, 2, 7, 20, &got));  // another parent: not this prefix
    EXPECT_FALSE(ReadBack(*t, 2, 1, 21, &got));  // other tokens
    EXPECT_FALSE(ReadBack(*t, 3, 2, 20, &got));  // absent
    const KvDiskTierStats s = t->Stats();
    EXPECT_EQ(s.files, 2);
    EXPECT_EQ(s.bytes_written, 2 * static_cast<int64_t>(t->file_bytes()));
    EXPECT_EQ(s.bytes, s.bytes_written);
    EXPECT_EQ(s.bytes_read, static_cast<int64_t>(t->file_bytes()));
    EXPECT_GT(s.read_bytes_per_second, 0);
    EXPECT_TRUE(fs::exists(fs::path(t->folder()) / "0000000000000001.ilkv"));
  }
  auto t = OpenTier(d.path);
  EXPECT_EQ(t->Stats().files, 2);
  EXPECT_TRUE(t->Contains(1));
  std::vector<uint8_t> got;
  ASSERT_TRUE(ReadBack(*t, 1, 0, 10, &got));
  EXPECT_EQ(got, Kv(1));
  // Another model (identity) sees nothing of it.
  auto other = OpenTier(d.path, int64_t{1} << 30, KvModelIdentity{9, 9});
  EXPECT_FALSE(other->Contains(1));
  EXPECT_EQ(other->Stats().files, 0);
}

TEST(KvDiskTier, QueuedBlocksAreServedAndTheDestructorWritesThem) {
  TempDir d;
  std::string folder;
  {
    auto t = OpenTier(d.path);
    folder = t->folder();
    for (int i = 1; i <= 50; ++i) t->Write(i, 0, Toks(i), Kv(static_cast<uint8_t>(i)), true);
    std::vector<uint8_t> got;
    ASSERT_TRUE(ReadBack(*t, 50, 0, 50, &got));  // queued or written: served either way
    EXPECT_EQ(got, Kv(50));
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(folder)) files += e.path().extension() == ".ilkv" ? 1 : 0;
  EXPECT_EQ(files, 50);
}

TEST(KvDiskTier, DamagedFilesAreDeletedForeignOnesLeftAlone) {
  TempDir d;
  auto t = OpenTier(d.path);
  for (int i = 1; i <= 3; ++i) t->Write(i, 0, Toks(i), Kv(static_cast<uint8_t>(i)), false);
  t->Flush();
  const fs::path folder = t->folder();
  const fs::path f1 = folder / "0000000000000001.ilkv", f2 = folder / "0000000000000002.ilkv",
                 f3 = folder / "0000000000000003.ilkv";
  {  // a flipped byte in the keys/values
    std::fstream f(f1, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  std::vector<uint8_t> got;
  EXPECT_FALSE(ReadBack(*t, 1, 0, 1, &got));
  EXPECT_FALSE(fs::exists(f1));
  EXPECT_EQ(t->Stats().corrupt, 1);
  // A file of another model under block 3's name: a miss, left in place.
  fs::copy_file(f2, f3, fs::copy_options::overwrite_existing);  // chain 2's record under chain 3's name
  const auto foreign = EncodeKvBlockFile(KvModelIdentity{5, 5}, Toks(3), 3, 0, Kv(3));
  std::ofstream(f3, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(foreign.data()),
                                                             static_cast<std::streamsize>(foreign.size()));
  EXPECT_FALSE(ReadBack(*t, 3, 0, 3, &got));
  EXPECT_TRUE(fs::exists(f3));
  EXPECT_EQ(t->Stats().corrupt, 1);
  // A version 1 file (an earlier build's, the KV heads' rows interleaved) of this very model and
  // block, the same size: never read into the cache, left in place.
  auto v1 = EncodeKvBlockFile(kId, Toks(3), 3, 0, Kv(3));
  v1[4] = 1;
  std::ofstream(f3, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(v1.data()),
                                                             static_cast<std::streamsize>(v1.size()));
  EXPECT_FALSE(ReadBack(*t, 3, 0, 3, &got));
  EXPECT_TRUE(fs::exists(f3));
  EXPECT_EQ(t->Stats().corrupt, 1);
  t.reset();
  // Truncated (a crash mid-write without the rename would leave a .tmp; this is a cut file) and a
  // leftover temporary: both deleted at open; a stranger's file is left alone.
  fs::resize_file(f2, 100);
  std::ofstream(folder / ".0000000000000009-1.tmp") << "partial";
  std::ofstream(folder / "notes.txt") << "keep me";
  auto t2 = OpenTier(d.path);
  EXPECT_FALSE(fs::exists(f2));
  EXPECT_FALSE(fs::exists(folder / ".0000000000000009-1.tmp"));
  EXPECT_TRUE(fs::exists(folder / "notes.txt"));
  EXPECT_EQ(t2->Stats().corrupt, 1);
  EXPECT_FALSE(t2->Contains(2));
}

TEST(KvDiskTier, BudgetKeepsTheMostRecentlyUsed) {
  TempDir d;
  const int64_t file = static_cast<int64_t>(KvBlockFileBytes(kTokens, kKvBytes));
  auto t = OpenTier(d.path, 3 * file);
  for (int i = 1; i <= 3; ++i) t->Write(i, 0, Toks(i), Kv(static_cast<uint8_t>(i)), false);
  t->Flush();
  std::vector<uint8_t> got;
  ASSERT_TRUE(ReadBack(*t, 1, 0, 1, &got));  // 1 is now the most recently used
  t->Write(4, 0, Toks(4), Kv(4), false);
  t->Write(5, 0, Toks(5), Kv(5), false);
  t->Flush();
  EXPECT_TRUE(t->Contains(1));
  EXPECT_FALSE(t->Contains(2));
  EXPECT_FALSE(t->Contains(3));
  EXPECT_TRUE(t->Contains(4));
  EXPECT_TRUE(t->Contains(5));
  const KvDiskTierStats s = t->Stats();
  EXPECT_EQ(s.files, 3);
  EXPECT_EQ(s.bytes, 3 * file);
  EXPECT_EQ(s.evictions, 2);
  EXPECT_FALSE(fs::exists(fs::path(t->folder()) / "0000000000000002.ilkv"));
  // A restart with a smaller budget keeps the newest files only.
  t.reset();
  auto small = OpenTier(d.path, 2 * file);
  EXPECT_EQ(small->Stats().files, 2);
  EXPECT_TRUE(small->Contains(5));
}

TEST(KvDiskTier, UnusableFolderOrBudgetIsAClearError) {
  TempDir d;
  std::ofstream(d.path / "file") << "x";
  KvDiskTierOptions o;
  o.dir = (d.path / "file").string();
  auto t = KvDiskTier::Open(o, kId, kTokens, kKvBytes);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(o.dir), std::string::npos) << t.status().message();
  o.dir = d.path.string();
  o.budget_bytes = 0;
  t = KvDiskTier::Open(o, kId, kTokens, kKvBytes);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(KvTierCost, ReadWinsWhenFasterThanPrefill) {
  PrefillSpeed p;
  EXPECT_FALSE(p.Seconds(0, 100).has_value());
  EXPECT_TRUE(ReadBeatsPrefill(1e9, 1, std::nullopt));  // nothing measured yet: read
  p.Record(64, 64, 1.0);      // 64 tokens/s around positions 32..63
  p.Record(1000, 100, 10.0);  // 10 tokens/s around 512..1023
  EXPECT_NEAR(*p.Seconds(32, 63), 31 / 64.0, 1e-9);
  EXPECT_NEAR(*p.Seconds(600, 700), 10.0, 1e-9);
  EXPECT_GT(*p.Seconds(0, 1000), *p.Seconds(0, 100));
  EXPECT_TRUE(ReadBeatsPrefill(1000, 1e6, 0.01));
  EXPECT_FALSE(ReadBeatsPrefill(1e6, 1e6, 0.5));
  EXPECT_FALSE(ReadBeatsPrefill(1, 0, 0.5));  // unknown read speed: compute
  EXPECT_DOUBLE_EQ(SmoothSpeed(0, 5), 5);
  EXPECT_DOUBLE_EQ(SmoothSpeed(10, 20), 10 + kSpeedSmoothing * 10);
}

// --- the engine on stories260k -------------------------------------------------------------

std::shared_ptr<const LlamaModel> Stories() {
  static std::shared_ptr<const LlamaModel> m = [] {
    std::shared_ptr<const LlamaModel> p;
    if (!fs::exists(INFERLOOP_STORIES260K_GGUF)) return p;
    auto r = LlamaModel::Load(INFERLOOP_STORIES260K_GGUF);
    if (r.ok()) p = std::move(*r);
    return p;
  }();
  return m;
}

struct GenRun {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  SequenceResult result;
};

// Greedy generation of `n` tokens with their log-probabilities (from the raw logits).
GenRun Generate(LlmEngine& e, const std::vector<int32_t>& prompt, int n) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  GenRun run;
  EngineRequest r;
  r.prompt = prompt;
  r.max_tokens = n;
  r.sampling.temperature = 0;
  r.stop_at_eog = false;
  r.top_logprobs = 0;
  r.on_token = [&](int, const GeneratedToken& g) {
    run.tokens.push_back(g.token);
    run.logprobs.push_back(g.logprob);
    return true;
  };
  r.on_finish = [&](const SequenceResult& res) {
    std::lock_guard<std::mutex> l(mu);
    run.result = res;
    done = true;
    cv.notify_all();
  };
  EXPECT_TRUE(e.Submit(std::move(r)).ok());
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done; });
  return run;
}

EngineOptions DiskOptions(const fs::path& dir, int kv_blocks) {
  EngineOptions o;
  o.block_tokens = 4;
  o.kv_blocks = kv_blocks;
  o.threads = 1;
  o.prefix_cache_dir = dir.string();
  o.prefix_cache_disk_always_read = true;
  return o;
}

std::vector<int32_t> Prompt(const LlamaModel& m, const char* text) {
  return m.tokenizer().Encode(text, true);
}

TEST(KvDiskTierEngine, BlocksReadFromDiskGiveTheColdTokensAndLogprobs) {
  auto m = Stories();
  if (m == nullptr) GTEST_SKIP() << "test model not present: " INFERLOOP_STORIES260K_GGUF;
  TempDir d;
  const auto a = Prompt(*m, "Once upon a time there was a big dog named Max. Max liked to run in the park");
  const auto b = Prompt(*m, "Lily had a red ball. She played with it every day in the garden with her cat");
  EngineOptions cold_o;
  cold_o.block_tokens = 4;
  cold_o.kv_blocks = 64;
  cold_o.threads = 1;
  cold_o.prefix_cache_blocks = 0;
  auto cold_e = LlmEngine::Create(m, cold_o);
  ASSERT_TRUE(cold_e.ok());
  const GenRun cold = Generate(**cold_e, a, 12);

  // 14 blocks: `a` and its generation need about 9; `b` evicts `a`'s blocks to disk.
  auto e = LlmEngine::Create(m, DiskOptions(d.path, 14));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const GenRun first = Generate(**e, a, 12);
  EXPECT_EQ(first.result.cached_prompt_tokens, 0);
  Generate(**e, b, 12);
  const GenRun warm = Generate(**e, a, 12);
  EXPECT_GT(warm.result.disk_cached_prompt_tokens, 0);
  EXPECT_EQ(warm.tokens, cold.tokens);
  EXPECT_EQ(warm.logprobs, cold.logprobs);  // bit-equal: the same keys/values, the same arithmetic
  // The tier's writer thread writes evicted blocks in the background (reads meanwhile find them
  // among the pending writes), so the written bytes may show a little later on a busy machine.
  EngineStats st = (*e)->stats();
  for (int i = 0; i < 3000 && st.disk_bytes_written == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    st = (*e)->stats();
  }
  EXPECT_GT(st.disk_bytes_written, 0);
  EXPECT_EQ(st.prefix_hit_tokens_disk, warm.result.disk_cached_prompt_tokens);
  e->reset();  // graceful stop: writes the cached blocks

  // A restarted engine finds them: the whole reusable prefix comes from disk.
  auto again = LlmEngine::Create(m, DiskOptions(d.path, 14));
  ASSERT_TRUE(again.ok());
  const GenRun restarted = Generate(**again, a, 12);
  EXPECT_EQ(restarted.result.disk_cached_prompt_tokens, static_cast<int>((a.size() - 1) / 4 * 4));
  EXPECT_EQ(restarted.result.cached_prompt_tokens, restarted.result.disk_cached_prompt_tokens);
  EXPECT_EQ(restarted.tokens, cold.tokens);
  EXPECT_EQ(restarted.logprobs, cold.logprobs);
  EXPECT_GT((*again)->stats().disk_bytes_read, 0);
  EXPECT_EQ((*again)->stats().disk_errors, 0);
}

TEST(KvDiskTierEngine, DamagedBlocksAreRecomputedNotServed) {
  auto m = Stories();
  if (m == nullptr) GTEST_SKIP() << "test model not present: " INFERLOOP_STORIES260K_GGUF;
  TempDir d;
  const auto a = Prompt(*m, "Once upon a time there was a big dog named Max. Max liked to run in the park");
  GenRun first;
  {
    auto e = LlmEngine::Create(m, DiskOptions(d.path, 24));
    ASSERT_TRUE(e.ok());
    first = Generate(**e, a, 12);
  }
  int damaged = 0;
  for (const auto& dir : fs::directory_iterator(d.path)) {
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (damaged++ % 2 == 0) continue;  // every other block: a flipped byte
      std::fstream s(f.path(), std::ios::in | std::ios::out | std::ios::binary);
      s.seekp(-1, std::ios::end);
      s.put('\x01');
    }
  }
  auto e = LlmEngine::Create(m, DiskOptions(d.path, 24));
  ASSERT_TRUE(e.ok());
  const GenRun again = Generate(**e, a, 12);
  EXPECT_EQ(again.tokens, first.tokens);
  EXPECT_EQ(again.logprobs, first.logprobs);
  EXPECT_LT(again.result.disk_cached_prompt_tokens, static_cast<int>((a.size() - 1) / 4 * 4));
  EXPECT_GE((*e)->stats().disk_errors, 1);
}

TEST(KvDiskTierEngine, UnusableFolderFailsCreate) {
  auto m = Stories();
  if (m == nullptr) GTEST_SKIP() << "test model not present: " INFERLOOP_STORIES260K_GGUF;
  TempDir d;
  std::ofstream(d.path / "file") << "x";
  auto e = LlmEngine::Create(m, DiskOptions(d.path / "file" / "sub", 24));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("file"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace inferloop::llm
