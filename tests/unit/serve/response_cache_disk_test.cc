// The response cache's disk tier (src/serve/response_cache_disk.h): the entry file format and
// the directory of entries behind a ResponseCache.
#include "serve/response_cache_disk.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "serve/event_log.h"
#include "unit/serve/response_cache_testing.h"

namespace inferloop::serve {
namespace {

namespace fs = std::filesystem;
using testing_rc::FloatOutput;
using testing_rc::StringOutput;

std::vector<InferOutput> MixedOutputs() {
  std::vector<InferOutput> outs = {FloatOutput("probs", 1000, 0.25f), StringOutput("labels", {"cat", "", "dog"})};
  InferOutput scalar{"n", Tensor::FromVector<int64_t>(DataType::kInt64, {}, {42}), {}};
  scalar.parameters = {{"b", true}, {"i", int64_t{-3}}, {"u", uint64_t{7}}, {"d", 2.5}, {"s", std::string("x")}};
  outs.push_back(std::move(scalar));
  outs.push_back(InferOutput{"empty", *Tensor::Create(DataType::kFloat16, {0, 3}), {}});
  return outs;
}

void ExpectSameOutputs(const std::vector<InferOutput>& a, const std::vector<InferOutput>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].name);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].parameters, b[i].parameters);
    const Tensor &x = a[i].tensor, &y = b[i].tensor;
    ASSERT_EQ(x.dtype(), y.dtype());
    ASSERT_EQ(x.shape(), y.shape());
    if (x.dtype() == DataType::kString) {
      for (int64_t e = 0; e < x.size(); ++e) EXPECT_EQ(x.strings()[e], y.strings()[e]);
    } else {
      ASSERT_EQ(x.nbytes(), y.nbytes());
      if (x.nbytes() != 0) {
        EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0);
      }
    }
  }
}

// Rewrites the header's length and checksum after the payload was edited, so that the decoder's
// later checks are reached.
void Reseal(std::vector<uint8_t>* file) {
  const uint64_t len = file->size() - kResponseCacheHeaderBytes;
  const uint64_t sum = XXH3_64bits(file->data() + kResponseCacheHeaderBytes, len);
  for (int i = 0; i < 8; ++i) {
    (*file)[24 + i] = static_cast<uint8_t>(len >> (8 * i));
    (*file)[32 + i] = static_cast<uint8_t>(sum >> (8 * i));
  }
}

TEST(ResponseCacheFileTest, RoundTripsEveryKindOfOutput) {
  const ResponseCacheKey key{11, 22};
  const auto outs = MixedOutputs();
  const auto file = EncodeCachedResponse(key, outs);
  EXPECT_EQ(std::string(file.begin(), file.begin() + 4), "ILRC");
  auto back = DecodeCachedResponse(file, key);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameOutputs(outs, *back);
}

TEST(ResponseCacheFileTest, EveryFlippedByteAndEveryTruncationIsRefused) {
  const ResponseCacheKey key{1, 2};
  const auto file = EncodeCachedResponse(key, {FloatOutput("y", 8, 1.f), StringOutput("s", {"ab"})});
  for (size_t i = 0; i < file.size(); ++i) {
    auto bad = file;
    bad[i] ^= 0x10;
    EXPECT_FALSE(DecodeCachedResponse(bad, key).ok()) << "byte " << i;
  }
  for (size_t n = 0; n < file.size(); ++n)
    EXPECT_FALSE(DecodeCachedResponse(std::span(file.data(), n), key).ok()) << "length " << n;
  auto longer = file;
  longer.push_back(0);
  EXPECT_FALSE(DecodeCachedResponse(longer, key).ok());
}

TEST(ResponseCacheFileTest, ClearErrors) {
  const ResponseCacheKey key{1, 2};
  auto file = EncodeCachedResponse(key, {FloatOutput("y", 2, 1.f)});
  auto wrong = DecodeCachedResponse(file, ResponseCacheKey{1, 3});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("stored under key " + ToHex(key)), std::string::npos);

  auto version = file;
  version[4] = 9;
  EXPECT_NE(DecodeCachedResponse(version, key).status().message().find("format version 9"), std::string::npos);

  auto flipped = file;
  flipped.back() ^= 1;
  EXPECT_NE(DecodeCachedResponse(flipped, key).status().message().find("checksum"), std::string::npos);

  // Payload: count u32, name (u32 + "y"), dtype at offset 4 + 4 + 1.
  auto dtype = file;
  dtype[kResponseCacheHeaderBytes + 9] = 99;
  Reseal(&dtype);
  EXPECT_NE(DecodeCachedResponse(dtype, key).status().message().find("unknown dtype 99"), std::string::npos);

  // A billion outputs in a file of a few bytes: refused without allocating for them.
  auto count = file;
  count[kResponseCacheHeaderBytes + 3] = 0x40;
  Reseal(&count);
  EXPECT_FALSE(DecodeCachedResponse(count, key).ok());
}

// The fuzzer's seed corpus (tests/fuzz/corpus_response_cache/) holds real entries: these. The
// test fails when the format changes and the corpus does not; INFERLOOP_UPDATE_FUZZ_CORPUS=1
// rewrites it.
TEST(ResponseCacheFileTest, FuzzSeedCorpusHoldsCurrentEntries) {
  InferOutput many_params{"p", Tensor::FromVector<uint8_t>(DataType::kUInt8, {2, 2}, {1, 2, 3, 4}), {}};
  for (int i = 0; i < 5; ++i) many_params.parameters["k" + std::to_string(i)] = int64_t{i};
  const std::vector<std::pair<std::string, std::vector<InferOutput>>> seeds = {
      {"mixed", MixedOutputs()},
      {"float", {FloatOutput("y", 16, 1.f)}},
      {"strings", {StringOutput("s", {"a", "bc", ""})}},
      {"no_outputs", {}},
      {"parameters", {many_params}},
  };
  const std::string dir = std::string(INFERLOOP_SOURCE_DIR) + "/tests/fuzz/corpus_response_cache";
  const char* update = std::getenv("INFERLOOP_UPDATE_FUZZ_CORPUS");
  uint64_t n = 0;
  for (const auto& [name, outs] : seeds) {
    const ResponseCacheKey key{0x1122334455667788ull, ++n};
    const auto bytes = EncodeCachedResponse(key, outs);
    const std::string path = dir + "/" + name + ".ilrc";
    if (update != nullptr && std::string(update) == "1") {
      fs::create_directories(dir);
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(stored, bytes) << path << " is stale: rerun with INFERLOOP_UPDATE_FUZZ_CORPUS=1";
  }
}

class ResponseCacheDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/il_rc_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<ResponseCache> Open(int64_t memory_bytes = 1 << 20, int64_t disk_bytes = 1 << 20) {
    auto c = ResponseCache::Create(ResponseCacheOptions{memory_bytes, dir_, disk_bytes, &quiet_});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::string FileOf(const ResponseCacheKey& k) const { return dir_ + "/" + ToHex(k) + ".ilrc"; }
  static int64_t FileSize(const ResponseCacheKey& k, const std::vector<InferOutput>& outs) {
    return static_cast<int64_t>(EncodeCachedResponse(k, outs).size());
  }

  std::string dir_;
  EventLog quiet_{nullptr};
};

TEST_F(ResponseCacheDiskTest, RestartedCacheFindsTheEntryAndPromotesIt) {
  const ResponseCacheKey k{5, 6};
  {
    auto cache = Open();
    cache->Insert(k, MixedOutputs());
    // The destructor finishes the queued write.
  }
  ASSERT_TRUE(fs::exists(FileOf(k)));
  EXPECT_FALSE(fs::exists(FileOf(k) + ".tmp"));
  auto cache = Open();
  ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk.entries, 1);
  EXPECT_EQ(s.disk.bytes, FileSize(k, MixedOutputs()));
  EXPECT_EQ(s.disk.budget_bytes, 1 << 20);
  auto hit = cache->Lookup(k);
  ASSERT_NE(hit, nullptr);
  ExpectSameOutputs(MixedOutputs(), hit->outputs);
  ASSERT_NE(cache->Lookup(k), nullptr);
  s = cache->Stats();
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.disk.hits, 1);
  EXPECT_EQ(s.memory.hits, 1);  // promoted
  EXPECT_EQ(s.memory.inserts, 0);
  EXPECT_EQ(s.memory.entries, 1);
}

TEST_F(ResponseCacheDiskTest, DiskOnlyCacheRoundTrip) {
  auto cache = Open(/*memory_bytes=*/0);
  cache->Insert({1, 1}, {FloatOutput("y", 10, 3.f)});
  cache->FlushForTesting();
  auto hit = cache->Lookup({1, 1});
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->outputs[0].tensor.data<float>()[9], 3.f);
  EXPECT_EQ(cache->Lookup({1, 2}), nullptr);
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk.inserts, 1);
  EXPECT_EQ(s.disk.hits, 1);
  EXPECT_EQ(s.misses, 1);
}

TEST_F(ResponseCacheDiskTest, CorruptEntryIsDroppedAndCountedNeverServed) {
  const ResponseCacheKey k{7, 7};
  auto cache = Open(0);
  cache->Insert(k, {FloatOutput("y", 100, 1.f)});
  cache->FlushForTesting();
  {
    std::fstream f(FileOf(k), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);  // inside the tensor's bytes
    f.put('\x7f');
  }
  EXPECT_EQ(cache->Lookup(k), nullptr);
  EXPECT_FALSE(fs::exists(FileOf(k)));
  ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_corrupt_dropped, 1);
  EXPECT_EQ(s.disk.entries, 0);
  EXPECT_EQ(s.misses, 1);
  // Stored again after the drop.
  cache->Insert(k, {FloatOutput("y", 100, 1.f)});
  cache->FlushForTesting();
  EXPECT_NE(cache->Lookup(k), nullptr);
}

TEST_F(ResponseCacheDiskTest, TruncatedEntryIsDroppedOnReadAndAtRestart) {
  const ResponseCacheKey a{1, 0}, b{2, 0};
  {
    auto cache = Open(0);
    cache->Insert(a, {FloatOutput("y", 100, 1.f)});
    cache->Insert(b, {FloatOutput("y", 100, 2.f)});
    cache->FlushForTesting();
    fs::resize_file(FileOf(a), 100);
    EXPECT_EQ(cache->Lookup(a), nullptr);
    EXPECT_EQ(cache->Stats().disk_corrupt_dropped, 1);
  }
  fs::resize_file(FileOf(b), 30);  // shorter than a header
  auto cache = Open(0);
  EXPECT_EQ(cache->Stats().disk_corrupt_dropped, 1);  // found by the scan at Create
  EXPECT_EQ(cache->Stats().disk.entries, 0);
  EXPECT_FALSE(fs::exists(FileOf(b)));
  EXPECT_EQ(cache->Lookup(b), nullptr);
}

TEST_F(ResponseCacheDiskTest, EntryUnderAnotherKeysNameIsDeleted) {
  const ResponseCacheKey a{1, 0}, b{2, 0};
  {
    auto cache = Open(0);
    cache->Insert(a, {FloatOutput("y", 4, 1.f)});
  }
  fs::copy_file(FileOf(a), FileOf(b));
  auto cache = Open(0);
  EXPECT_EQ(cache->Stats().disk.entries, 1);
  EXPECT_EQ(cache->Stats().disk_corrupt_dropped, 1);
  EXPECT_FALSE(fs::exists(FileOf(b)));
  EXPECT_EQ(cache->Lookup(b), nullptr);
  EXPECT_NE(cache->Lookup(a), nullptr);
}

TEST_F(ResponseCacheDiskTest, ForeignFilesAreLeftAloneAndNotCounted) {
  const std::vector<std::string> foreign = {"notes.txt", "abc.ilrc", std::string(32, 'A') + ".ilrc",
                                            std::string(31, '0') + ".ilrc.bak"};
  for (const auto& name : foreign) std::ofstream(dir_ + "/" + name) << "not ours";
  fs::create_directory(dir_ + "/" + std::string(32, 'f') + ".ilrc");
  auto cache = Open(0, 1);  // a budget of 1 byte: anything indexed would be evicted
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk.entries, 0);
  EXPECT_EQ(s.disk_corrupt_dropped, 0);
  EXPECT_EQ(s.disk.evictions, 0);
  for (const auto& name : foreign) EXPECT_TRUE(fs::exists(dir_ + "/" + name)) << name;
  EXPECT_TRUE(fs::is_directory(dir_ + "/" + std::string(32, 'f') + ".ilrc"));
}

TEST_F(ResponseCacheDiskTest, BudgetEvictsLeastRecentlyUsedFiles) {
  const auto outs = [](float v) { return std::vector<InferOutput>{FloatOutput("y", 250, v)}; };
  const int64_t file = FileSize({0, 0}, outs(0));
  {
    auto cache = Open(0, 2 * file + file / 2);
    cache->Insert({0, 1}, outs(1));
    cache->Insert({0, 2}, outs(2));
    cache->FlushForTesting();
    ASSERT_NE(cache->Lookup({0, 1}), nullptr);  // 2 is now the least recently used
    cache->Insert({0, 3}, outs(3));
    cache->FlushForTesting();
    const ResponseCacheStats s = cache->Stats();
    EXPECT_EQ(s.disk.evictions, 1);
    EXPECT_EQ(s.disk.entries, 2);
    EXPECT_EQ(s.disk.bytes, 2 * file);
    EXPECT_FALSE(fs::exists(FileOf({0, 2})));
    EXPECT_TRUE(fs::exists(FileOf({0, 1})));
  }
  // A restart under a smaller budget keeps the most recently written (by modification time).
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(FileOf({0, 3}), now - std::chrono::hours(1));
  fs::last_write_time(FileOf({0, 1}), now);
  auto cache = Open(0, file);
  EXPECT_EQ(cache->Stats().disk.evictions, 1);
  EXPECT_FALSE(fs::exists(FileOf({0, 3})));
  EXPECT_NE(cache->Lookup({0, 1}), nullptr);
}

TEST_F(ResponseCacheDiskTest, EntryOverTheDiskBudgetIsNotWritten) {
  auto cache = Open(1 << 20, 1000);
  cache->Insert({0, 1}, {FloatOutput("y", 1000, 1.f)});  // 4 KB file > 1000 bytes
  cache->FlushForTesting();
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.too_large, 1);
  EXPECT_EQ(s.disk.entries, 0);
  EXPECT_EQ(s.memory.entries, 1);
  EXPECT_FALSE(fs::exists(FileOf({0, 1})));
}

// A write that fails: a directory stands where the entry's temp file goes (as root, chmod does
// not stop writes, so a read-only directory would not make one fail).
TEST_F(ResponseCacheDiskTest, WriteFailureIsCountedAndOtherEntriesStillWork) {
  const ResponseCacheKey blocked{9, 9}, fine{8, 8};
  fs::create_directory(FileOf(blocked) + ".tmp");
  auto cache = Open(0);
  cache->Insert(blocked, {FloatOutput("y", 4, 1.f)});
  cache->Insert(fine, {FloatOutput("y", 4, 2.f)});
  cache->FlushForTesting();
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_write_failures, 1);
  EXPECT_EQ(s.disk.entries, 1);
  EXPECT_EQ(cache->Lookup(blocked), nullptr);
  EXPECT_NE(cache->Lookup(fine), nullptr);
}

// The directory removed under a running cache: every write fails (ENOENT); after 3 failures in a
// row the tier backs off and the rest are skipped; memory lookups go on.
TEST_F(ResponseCacheDiskTest, RemovedDirectoryBacksOffWithoutCrashing) {
  auto cache = Open();
  fs::remove_all(dir_);
  for (uint64_t i = 1; i <= 5; ++i) cache->Insert({0, i}, {FloatOutput("y", 4, float(i))});
  cache->FlushForTesting();
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.disk_write_failures, 3);
  EXPECT_EQ(s.disk_skipped_writes, 2);
  EXPECT_EQ(s.disk.entries, 0);
  for (uint64_t i = 1; i <= 5; ++i) EXPECT_NE(cache->Lookup({0, i}), nullptr);
}

TEST_F(ResponseCacheDiskTest, UnusableDirectoryIsAnErrorNamingIt) {
  const std::string file = dir_ + "/plain_file";
  std::ofstream(file) << "x";
  auto not_dir = ResponseCache::Create(ResponseCacheOptions{0, file, 100, &quiet_});
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.status().message().find("'" + file + "'"), std::string::npos) << not_dir.status().message();
  auto under_file = ResponseCache::Create(ResponseCacheOptions{0, file + "/sub", 100, &quiet_});
  ASSERT_FALSE(under_file.ok());
  EXPECT_NE(under_file.status().message().find(file + "/sub"), std::string::npos) << under_file.status().message();
}

// Several threads on a small memory tier over a disk tier: every hit, from either tier, holds
// what was stored under its key.
TEST_F(ResponseCacheDiskTest, ConcurrentLookupsAndInsertsOverBothTiers) {
  const int64_t entry = CachedResponseBytes({FloatOutput("y", 64, 0.f)});
  auto cache = Open(8 * entry);
  constexpr int kThreads = 6, kOps = 1500;
  EXPECT_EQ(testing_rc::LookupOrInsertFromThreads(*cache, kThreads, kOps, 60), 0);
  cache->FlushForTesting();
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.hits + s.misses, kThreads * kOps);
  EXPECT_GT(s.disk.hits, 0);
  EXPECT_EQ(s.disk_corrupt_dropped, 0);
  EXPECT_EQ(s.disk_write_failures, 0);
  EXPECT_LE(s.disk.entries, 60);
}

}  // namespace
}  // namespace inferloop::serve
