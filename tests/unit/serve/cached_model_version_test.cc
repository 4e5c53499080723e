// CachedModelVersion (src/serve/cached_model_version.h) over a fake model version: hits, misses,
// what is never stored, coalescing of identical concurrent requests, draining, statistics and
// metrics; and VersionFingerprint.
#include "serve/cached_model_version.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "serve/admission_control.h"
#include "serve/response_cache.h"

namespace inferloop::serve {
namespace {

// A model version that answers y = x + 1 (FP32) and counts what it computed. `hold`: requests
// are kept until Release(); `fail`: answers Internal (`fail_next`: that many answers do);
// `refuse`: Infer returns false (draining).
class FakeVersion final : public ModelVersion {
 public:
  FakeVersion() {
    config_.set_name("m");
    config_.mutable_response_cache()->set_enable(true);
  }
  const std::string& name() const override { return config_.name(); }
  int64_t version() const override { return 3; }
  const ModelConfig& config() const override { return config_; }
  bool Infer(InferRequest&& request, RequestContext&& context, InferCallback&& done,
             AdmissionTicket&& ticket) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (refuse) return false;
      ++computed;
      held_.push_back({std::move(request), std::move(done)});
      if (hold) return true;
    }
    Release();
    return true;
  }
  // Answers every held request (outside the lock: an answer may send another request).
  void Release() {
    std::vector<Held> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
    }
    Answer(held);
  }
  void Drain() override { drained = true; }
  ModelMetadata Metadata() const override { return {}; }
  ModelStatistics Statistics() const override {
    ModelStatistics s;
    s.name = "m";
    s.success = {static_cast<uint64_t>(succeeded.load()), 1000};
    s.execution_count = static_cast<uint64_t>(succeeded.load());
    s.inference_count = static_cast<uint64_t>(succeeded.load());
    return s;
  }
  int64_t MemoryBytes() const override { return 7; }
  bool Ready() const override { return true; }
  std::string NotReadyReason() const override { return ""; }
  std::vector<std::string> Dependencies() const override { return {"dep"}; }

  std::atomic<bool> hold{false}, fail{false}, refuse{false}, drained{false};
  std::atomic<int> fail_next{0};  // the next answers that fail
  std::atomic<int> computed{0}, succeeded{0};

 private:
  struct Held {
    InferRequest request;
    InferCallback done;
  };
  void Answer(std::vector<Held>& held) {
    for (auto& h : held) {
      if (fail || fail_next > 0) {
        if (fail_next > 0) --fail_next;
        h.done(Status::Internal("model failed"));
        continue;
      }
      const Tensor& x = h.request.inputs.at(0).tensor;
      std::vector<float> y(x.data<float>(), x.data<float>() + x.size());
      for (float& v : y) v += 1;
      InferResponse r;
      r.model_name = "m";
      r.model_version = "3";
      r.id = h.request.id;
      r.outputs.push_back({"y", Tensor::FromVector(DataType::kFloat, {static_cast<int64_t>(y.size())}, y), {}});
      ++succeeded;
      h.done(std::move(r));
    }
  }
  ModelConfig config_;
  std::mutex mu_;
  std::vector<Held> held_;
};

class CountingSink final : public VersionMetricsSink {
 public:
  void OnCacheHit(std::chrono::nanoseconds lookup, std::chrono::nanoseconds total) override { ++hits; }
  void OnCacheMiss(std::chrono::nanoseconds lookup_and_insert) override { ++misses; }
  std::atomic<int> hits{0}, misses{0};
};

InferRequest Request(std::vector<float> x, std::string id = "") {
  InferRequest r;
  r.model_name = "m";
  r.id = std::move(id);
  r.inputs.push_back({"x", Tensor::FromVector(DataType::kFloat, {static_cast<int64_t>(x.size())}, x), {}});
  return r;
}

std::vector<float> Values(const InferResponse& r) {
  const Tensor& t = r.outputs.at(0).tensor;
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

struct Fixture {
  Fixture() {
    ResponseCacheOptions options;
    options.memory_bytes = 1 << 20;
    auto c = ResponseCache::Create(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    cache = std::move(c).value();
    cached = std::make_shared<CachedModelVersion>(inner, cache, "fp", sink);
  }
  // Sends a request; the answer lands in the returned slot (possibly later).
  std::shared_ptr<std::optional<Result<InferResponse>>> Send(InferRequest r) {
    auto slot = std::make_shared<std::optional<Result<InferResponse>>>();
    const bool taken = cached->Infer(std::move(r), RequestContext{}, [slot](Result<InferResponse> a) { *slot = std::move(a); },
                                     AdmissionTicket());
    EXPECT_TRUE(taken);
    return slot;
  }
  std::shared_ptr<FakeVersion> inner = std::make_shared<FakeVersion>();
  std::shared_ptr<CountingSink> sink = std::make_shared<CountingSink>();
  std::shared_ptr<ResponseCache> cache;
  std::shared_ptr<CachedModelVersion> cached;
};

TEST(CachedModelVersion, HitAnswersTheStoredOutputsWithTheRequestsId) {
  Fixture f;
  auto a = f.Send(Request({1, 2, 3}, "first"));
  auto b = f.Send(Request({1, 2, 3}, "second"));
  ASSERT_TRUE(a->has_value() && b->has_value());
  ASSERT_TRUE((*b)->ok()) << (*b)->status().ToString();
  EXPECT_EQ(f.inner->computed, 1);
  EXPECT_EQ(Values((*a)->value()), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(Values((*b)->value()), Values((*a)->value()));
  EXPECT_EQ((*b)->value().id, "second");
  EXPECT_EQ((*b)->value().model_name, "m");
  EXPECT_EQ((*b)->value().model_version, "3");
  const ModelStatistics s = f.cached->Statistics();
  EXPECT_EQ(s.cache_hit.count, 1u);
  EXPECT_EQ(s.cache_miss.count, 1u);
  EXPECT_GT(s.cache_miss.ns, 0u);
  EXPECT_EQ(s.success.count, 2u);        // the computed one and the hit
  EXPECT_EQ(s.execution_count, 1u);      // hits are not executions
  EXPECT_EQ(s.inference_count, 1u);
  EXPECT_GT(s.last_inference_ms, 0u);
  EXPECT_EQ(f.sink->hits, 1);
  EXPECT_EQ(f.sink->misses, 1);
  // A different input is another entry.
  auto c = f.Send(Request({1, 2, 4}));
  EXPECT_EQ(f.inner->computed, 2);
  EXPECT_EQ(Values((*c)->value()), (std::vector<float>{2, 3, 5}));
}

TEST(CachedModelVersion, FailedAnswersAreNotStored) {
  Fixture f;
  f.inner->fail = true;
  auto a = f.Send(Request({1}));
  ASSERT_TRUE(a->has_value());
  EXPECT_FALSE((*a)->ok());
  f.inner->fail = false;
  auto b = f.Send(Request({1}));
  ASSERT_TRUE((*b)->ok());
  EXPECT_EQ(f.inner->computed, 2);
  EXPECT_EQ(f.cached->Statistics().cache_hit.count, 0u);
  EXPECT_EQ(f.cached->Statistics().cache_miss.count, 2u);
}

TEST(CachedModelVersion, IdenticalConcurrentRequestsAreComputedOnce) {
  Fixture f;
  f.inner->hold = true;
  std::vector<std::shared_ptr<std::optional<Result<InferResponse>>>> answers;
  for (int i = 0; i < 5; ++i) answers.push_back(f.Send(Request({5, 6}, "r" + std::to_string(i))));
  auto other = f.Send(Request({7}));  // not identical: computed on its own
  EXPECT_EQ(f.inner->computed, 2);
  for (auto& a : answers) EXPECT_FALSE(a->has_value());
  f.inner->Release();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(answers[i]->has_value());
    ASSERT_TRUE((*answers[i])->ok());
    EXPECT_EQ(Values((*answers[i])->value()), (std::vector<float>{6, 7}));
    EXPECT_EQ((*answers[i])->value().id, "r" + std::to_string(i));
  }
  EXPECT_EQ(f.inner->computed, 2);
  const ModelStatistics s = f.cached->Statistics();
  EXPECT_EQ(s.cache_hit.count, 4u);  // the waiters were answered, not computed
  EXPECT_EQ(s.cache_miss.count, 2u);
  EXPECT_EQ(s.success.count, 2u + 4u);
}

TEST(CachedModelVersion, WaitersOfAFailedRequestRunOnTheirOwn) {
  Fixture f;
  f.inner->hold = true;
  auto leader = f.Send(Request({1}));
  auto w1 = f.Send(Request({1}));
  auto w2 = f.Send(Request({1}));
  EXPECT_EQ(f.inner->computed, 1);
  f.inner->fail_next = 1;  // the leader fails; each waiter is then computed on its own
  f.inner->hold = false;
  f.inner->Release();
  EXPECT_EQ(f.inner->computed, 3);
  ASSERT_TRUE(leader->has_value() && w1->has_value() && w2->has_value());
  EXPECT_FALSE((*leader)->ok());
  EXPECT_EQ((*leader)->status().message(), "model failed");
  ASSERT_TRUE((*w1)->ok());
  ASSERT_TRUE((*w2)->ok());
  EXPECT_EQ(Values((*w1)->value()), (std::vector<float>{2}));
  // A waiter's own answer was stored.
  auto hit = f.Send(Request({1}));
  EXPECT_EQ(f.inner->computed, 3);
  ASSERT_TRUE((*hit)->ok());
  EXPECT_EQ(f.cached->Statistics().cache_hit.count, 1u);
  EXPECT_EQ(f.cached->Statistics().cache_miss.count, 3u);
}

// ModelVersion::Infer's contract: the server's ticket is released before `done` runs (a frontend
// may write the answer to its client inside `done`; the client must not find its request still
// counted in flight). Checked for an answer from the cache and for a waiter of an identical request.
TEST(CachedModelVersion, AnAnswerFromTheCacheNoLongerCountsInFlightWhenItIsHandedOver) {
  Fixture f;
  auto gate = AdmissionGate::Create("server", AdmissionLimits{});
  auto send = [&](InferRequest r, std::atomic<int64_t>* inflight_at_answer) {
    auto ticket = gate->TryAdmit(16);
    EXPECT_TRUE(ticket.ok());
    EXPECT_TRUE(f.cached->Infer(std::move(r), RequestContext{},
                                [gate, inflight_at_answer](Result<InferResponse> a) {
                                  EXPECT_TRUE(a.ok());
                                  inflight_at_answer->store(gate->inflight_requests());
                                },
                                std::move(ticket).value()));
  };
  std::atomic<int64_t> first{-1}, hit{-1};
  send(Request({1, 2}), &first);  // computed (the fake inner version does not take the ticket)
  EXPECT_EQ(gate->inflight_requests(), 0);
  send(Request({1, 2}), &hit);
  EXPECT_EQ(hit.load(), 0);
  // A waiter for an identical request that is computing: answered from its outcome.
  f.inner->hold = true;
  std::atomic<int64_t> leader{-1}, waiter{-1};
  send(Request({3}), &leader);
  send(Request({3}), &waiter);
  EXPECT_EQ(gate->inflight_requests(), 1);  // the waiter's
  f.inner->Release();
  EXPECT_EQ(waiter.load(), 0);
  EXPECT_EQ(gate->inflight_requests(), 0);
}

TEST(CachedModelVersion, DrainRefusesWithoutConsumingAndWaitsForWaiters) {
  Fixture f;
  f.inner->hold = true;
  auto leader = f.Send(Request({1}));
  auto waiter = f.Send(Request({1}));
  std::thread drainer([&] { f.cached->Drain(); });
  // Drain forwards to the fake (which does not block) and then waits for the two requests.
  while (!f.inner->drained) std::this_thread::yield();
  f.inner->Release();
  drainer.join();
  ASSERT_TRUE(leader->has_value() && waiter->has_value());
  EXPECT_TRUE((*waiter)->ok());
  InferRequest r = Request({9});
  bool called = false;
  InferCallback done = [&](Result<InferResponse>) { called = true; };
  EXPECT_FALSE(f.cached->Infer(std::move(r), RequestContext{}, std::move(done), AdmissionTicket()));
  EXPECT_FALSE(called);
  EXPECT_TRUE(static_cast<bool>(done));  // still the caller's
  EXPECT_EQ(r.inputs.size(), 1u);
}

TEST(CachedModelVersion, InnerRefusingHandsTheRequestBack) {
  Fixture f;
  f.inner->refuse = true;
  InferRequest r = Request({1});
  InferCallback done = [](Result<InferResponse>) {};
  EXPECT_FALSE(f.cached->Infer(std::move(r), RequestContext{}, std::move(done), AdmissionTicket()));
  EXPECT_TRUE(static_cast<bool>(done));
  EXPECT_EQ(r.inputs.size(), 1u);
  f.inner->refuse = false;
  auto a = f.Send(Request({1}));  // nothing was left behind: computed now
  ASSERT_TRUE(a->has_value() && (*a)->ok());
}

TEST(CachedModelVersion, ForwardsTheRest) {
  Fixture f;
  EXPECT_EQ(f.cached->name(), "m");
  EXPECT_EQ(f.cached->version(), 3);
  EXPECT_TRUE(f.cached->config().response_cache().enable());
  EXPECT_EQ(f.cached->MemoryBytes(), 7);
  EXPECT_EQ(f.cached->Dependencies(), std::vector<std::string>{"dep"});
  EXPECT_EQ(f.cached->TextGeneration(), nullptr);
  auto details = f.cached->LoadDetails();
  ASSERT_FALSE(details.empty());
  EXPECT_EQ(details.back(), (std::pair<std::string, std::string>{"response_cache", "on"}));
}

TEST(VersionFingerprint, ChangesWithTheFilesAndTheConfig) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("il_fp_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "1" / "sub");
  auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; };
  write(dir / "config.pbtxt", "name: \"m\"");
  write(dir / "1" / "model.onnx", "abc");
  write(dir / "1" / "sub" / "weights.bin", "0123");
  const std::string config = (dir / "config.pbtxt").string(), version = (dir / "1").string();
  auto a = VersionFingerprint(config, version);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a.value().size(), 32u);
  EXPECT_EQ(VersionFingerprint(config, version).value(), a.value());  // stable
  write(dir / "1" / "sub" / "weights.bin", "01234");                   // a file in a subfolder
  const std::string b = VersionFingerprint(config, version).value();
  EXPECT_NE(b, a.value());
  write(dir / "config.pbtxt", "name: \"m\"\nresponse_cache { enable: true }");
  const std::string c = VersionFingerprint(config, version).value();
  EXPECT_NE(c, b);
  EXPECT_NE(VersionFingerprint("", version).value(), c);  // no config
  auto missing = VersionFingerprint(config, (dir / "9").string());
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/9"), std::string::npos) << missing.status().message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace inferloop::serve
