// The response cache's key and memory tier (src/serve/response_cache.h).
#include "serve/response_cache.h"

#include <gtest/gtest.h>

#include <functional>

#include "unit/serve/response_cache_testing.h"

namespace inferloop::serve {
namespace {

using testing_rc::FloatOutput;
using testing_rc::SampleRequest;
using testing_rc::StringOutput;

ResponseCacheKey KeyOf(const InferRequest& r, const std::string& model = "m", int64_t version = 1,
                       const std::string& fingerprint = "fp") {
  return MakeResponseCacheKey(model, version, fingerprint, r);
}

TEST(ResponseCacheKeyTest, SameRequestSameKeyAndHexIs32Chars) {
  const auto a = KeyOf(SampleRequest()), b = KeyOf(SampleRequest());
  EXPECT_EQ(a, b);
  const std::string hex = ToHex(a);
  EXPECT_EQ(hex.size(), 32u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(ToHex(ResponseCacheKey{0x0123456789abcdefull, 0xfedcba9876543210ull}),
            "0123456789abcdeffedcba9876543210");
}

TEST(ResponseCacheKeyTest, ChangesWithEveryFieldThatDecidesTheResult) {
  const ResponseCacheKey base = KeyOf(SampleRequest());
  EXPECT_NE(KeyOf(SampleRequest(), "m2"), base);
  EXPECT_NE(KeyOf(SampleRequest(), "m", 2), base);
  EXPECT_NE(KeyOf(SampleRequest(), "m", 1, "fp2"), base);
  const std::vector<std::pair<const char*, std::function<void(InferRequest&)>>> changes = {
      {"input name", [](InferRequest& r) { r.inputs[0].name = "x2"; }},
      {"input dtype", [](InferRequest& r) {  // the same bytes as int32
         const Tensor& f = r.inputs[0].tensor;
         r.inputs[0].tensor = *Tensor::FromBytes(DataType::kInt32, f.shape(), f.raw_data(), f.nbytes());
       }},
      {"input shape", [](InferRequest& r) { r.inputs[0].tensor = *r.inputs[0].tensor.Reshaped({4}); }},
      {"input bytes", [](InferRequest& r) { r.inputs[0].tensor.data<float>()[3] = 7.5f; }},
      {"string input bytes", [](InferRequest& r) { r.inputs[1].tensor.strings()[1] = "B"; }},
      {"string split", [](InferRequest& r) {
         r.inputs[1].tensor = Tensor::FromStrings({2}, {"ab", ""});  // was {"a", "b"}
       }},
      {"input parameter", [](InferRequest& r) { r.inputs[0].parameters["scale"] = 2.0; }},
      {"requested output", [](InferRequest& r) { r.outputs.push_back(RequestedOutput{"y", std::nullopt, {}}); }},
      {"requested output parameter", [](InferRequest& r) { r.outputs[0].parameters["classification"] = int64_t{3}; }},
      {"result-changing parameter", [](InferRequest& r) { r.parameters["temperature"] = 0.5; }},
      {"parameter type", [](InferRequest& r) { r.parameters["mode"] = int64_t{1}; }},  // was bool true
  };
  for (const auto& [what, change] : changes) {
    InferRequest r = SampleRequest();
    change(r);
    EXPECT_NE(KeyOf(r), base) << what;
  }
}

TEST(ResponseCacheKeyTest, IgnoresWhatDoesNotChangeTheResult) {
  const ResponseCacheKey base = KeyOf(SampleRequest());
  InferRequest r = SampleRequest();
  r.id = "another-id";
  r.model_name = "alias";
  r.model_version = "7";
  r.parameters["priority"] = int64_t{5};
  r.parameters["timeout"] = int64_t{1000};
  r.parameters[kBinaryDataOutputParam] = true;
  r.inputs[0].parameters[kBinaryDataSizeParam] = int64_t{16};
  r.outputs[0].parameters[kBinaryDataParam] = true;
  r.outputs[0].binary_data = true;
  std::swap(r.inputs[0], r.inputs[1]);  // input order
  EXPECT_EQ(KeyOf(r), base);

  InferRequest two = SampleRequest();
  two.outputs.push_back(RequestedOutput{"y", std::nullopt, {}});
  InferRequest swapped = two;
  std::swap(swapped.outputs[0], swapped.outputs[1]);  // requested output order
  EXPECT_EQ(KeyOf(swapped), KeyOf(two));
}

std::unique_ptr<ResponseCache> MemoryCache(int64_t bytes) {
  auto c = ResponseCache::Create(ResponseCacheOptions{bytes, "", 0});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

TEST(ResponseCacheMemoryTest, HitReturnsTheStoredOutputsAndMissCounts) {
  auto cache = MemoryCache(1 << 20);
  const ResponseCacheKey k{1, 2};
  EXPECT_EQ(cache->Lookup(k), nullptr);
  cache->Insert(k, {FloatOutput("y", 100, 1.5f), StringOutput("s", {"a", "", std::string(300, 'z')})});
  auto hit = cache->Lookup(k);
  ASSERT_NE(hit, nullptr);
  ASSERT_EQ(hit->outputs.size(), 2u);
  EXPECT_EQ(hit->outputs[0].name, "y");
  EXPECT_EQ(hit->outputs[0].tensor.size(), 100);
  EXPECT_EQ(hit->outputs[0].tensor.data<float>()[99], 1.5f);
  EXPECT_EQ(hit->outputs[1].tensor.strings()[2], std::string(300, 'z'));
  EXPECT_EQ(hit->outputs[1].parameters.at("tag"), InferParameter(std::string("s")));
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.lookups, 2);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.memory.hits, 1);
  EXPECT_EQ(s.memory.inserts, 1);
  EXPECT_EQ(s.memory.entries, 1);
  EXPECT_EQ(s.memory.bytes, hit->bytes);
  EXPECT_EQ(s.memory.budget_bytes, 1 << 20);
  EXPECT_GT(s.lookup_ns, 0);
  EXPECT_GT(s.insert_ns, 0);
}

TEST(ResponseCacheMemoryTest, AccountedBytesCountTensorBytesAndNames) {
  const std::vector<InferOutput> one = {FloatOutput("y", 1000, 0.f)};
  EXPECT_EQ(CachedResponseBytes(one), 64 + 64 + 1 + 4000 + /*parameter "tag"=string "y"*/ (3 + 16 + 1));
  const std::vector<InferOutput> strings = {StringOutput("s", {"abc", ""})};
  EXPECT_EQ(CachedResponseBytes(strings), 64 + 64 + 1 + (32 + 3) + 32 + (3 + 16 + 1));
}

TEST(ResponseCacheMemoryTest, EvictsLeastRecentlyUsedByBytes) {
  const int64_t entry = CachedResponseBytes({FloatOutput("y", 250, 0.f)});  // ~1.1 KB each
  auto cache = MemoryCache(3 * entry);
  for (uint64_t i = 1; i <= 3; ++i) cache->Insert({0, i}, {FloatOutput("y", 250, float(i))});
  ASSERT_NE(cache->Lookup({0, 1}), nullptr);  // 1 is now the most recent: 2 is the oldest
  cache->Insert({0, 4}, {FloatOutput("y", 250, 4.f)});
  EXPECT_EQ(cache->Lookup({0, 2}), nullptr);
  EXPECT_NE(cache->Lookup({0, 1}), nullptr);
  EXPECT_NE(cache->Lookup({0, 3}), nullptr);
  EXPECT_NE(cache->Lookup({0, 4}), nullptr);
  ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.memory.evictions, 1);
  EXPECT_EQ(s.memory.entries, 3);
  EXPECT_EQ(s.memory.bytes, 3 * entry);
  // After the lookups above the order, oldest first, is 1, 3, 4: an entry about twice as large
  // pushes out 1 and 3.
  cache->Insert({0, 5}, {FloatOutput("y", 500, 5.f)});
  s = cache->Stats();
  EXPECT_EQ(s.memory.evictions, 3);
  EXPECT_EQ(s.memory.entries, 2);
  EXPECT_EQ(cache->Lookup({0, 1}), nullptr);
  EXPECT_EQ(cache->Lookup({0, 3}), nullptr);
  EXPECT_NE(cache->Lookup({0, 4}), nullptr);
  EXPECT_EQ(s.memory.bytes, entry + CachedResponseBytes({FloatOutput("y", 500, 0.f)}));
}

TEST(ResponseCacheMemoryTest, EntryOverTheBudgetIsNotStored) {
  auto cache = MemoryCache(4096);
  cache->Insert({0, 1}, {FloatOutput("y", 100, 0.f)});
  cache->Insert({0, 2}, {FloatOutput("big", 2000, 0.f)});  // 8 KB > 4 KB
  EXPECT_EQ(cache->Lookup({0, 2}), nullptr);
  EXPECT_NE(cache->Lookup({0, 1}), nullptr);  // and it pushed nothing out
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.too_large, 1);
  EXPECT_EQ(s.memory.inserts, 1);
  EXPECT_EQ(s.memory.evictions, 0);
}

TEST(ResponseCacheMemoryTest, ZeroBytesStoresNothing) {
  auto cache = MemoryCache(0);
  cache->Insert({0, 1}, {FloatOutput("y", 1, 0.f)});
  EXPECT_EQ(cache->Lookup({0, 1}), nullptr);
  EXPECT_EQ(cache->Stats().memory.entries, 0);
}

TEST(ResponseCacheMemoryTest, ReaderKeepsAnEvictedEntry) {
  auto cache = MemoryCache(CachedResponseBytes({FloatOutput("y", 10, 0.f)}));
  cache->Insert({0, 1}, {FloatOutput("y", 10, 1.f)});
  auto held = cache->Lookup({0, 1});
  cache->Insert({0, 2}, {FloatOutput("y", 10, 2.f)});
  EXPECT_EQ(cache->Lookup({0, 1}), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->outputs[0].tensor.data<float>()[9], 1.f);
}

TEST(ResponseCacheOptionsTest, BadOptionsAreRefusedWithAClearError) {
  auto neg = ResponseCache::Create(ResponseCacheOptions{-1, "", 0});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("memory size must not be negative"), std::string::npos);
  auto neg_disk = ResponseCache::Create(ResponseCacheOptions{1, "/tmp/x", -5});
  ASSERT_FALSE(neg_disk.ok());
  EXPECT_NE(neg_disk.status().message().find("disk size must not be negative, got -5"), std::string::npos);
  auto zero_disk = ResponseCache::Create(ResponseCacheOptions{1, "/tmp/x", 0});
  ASSERT_FALSE(zero_disk.ok());
  EXPECT_NE(zero_disk.status().message().find("'/tmp/x'"), std::string::npos);
}

// Several threads look up and insert overlapping keys; every hit holds what was stored under its
// key, and the counters add up.
TEST(ResponseCacheMemoryTest, ConcurrentLookupsAndInserts) {
  auto cache = MemoryCache(40 * CachedResponseBytes({FloatOutput("y", 64, 0.f)}));
  constexpr int kThreads = 8, kOps = 4000;
  EXPECT_EQ(testing_rc::LookupOrInsertFromThreads(*cache, kThreads, kOps, 100), 0);
  const ResponseCacheStats s = cache->Stats();
  EXPECT_EQ(s.lookups, kThreads * kOps);
  EXPECT_EQ(s.hits + s.misses, s.lookups);
  EXPECT_EQ(s.memory.inserts, s.misses);
  EXPECT_LE(s.memory.entries, 40);
  // Replacing a key (two threads missing at once) frees its old entry without an eviction.
  EXPECT_GE(s.memory.inserts - s.memory.evictions, s.memory.entries);
  EXPECT_EQ(s.memory.bytes, s.memory.entries * CachedResponseBytes({FloatOutput("y", 64, 0.f)}));
}

}  // namespace
}  // namespace inferloop::serve
