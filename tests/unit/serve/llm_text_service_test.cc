// LlmTextService reload and unload (poll mode's building blocks) on the real stories260k model:
// requests sent from several threads while the model is reloaded again and again are all
// accepted and answered in full; after an unload the model is unknown and its series are gone.
#include "serve/llm_text_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferloop::serve {
namespace {

const std::string kStories = INFERLOOP_STORIES260K_GGUF;

#define REQUIRE_STORIES() \
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "test model not present: " << kStories

// Runs one greedy completion to its end; the text, or the error.
struct Outcome {
  Status submitted;
  Status finished;
  std::string text;
  std::string finish_reason;
};

class Waiter {
 public:
  void Done() {
    std::lock_guard<std::mutex> l(mu_);
    ++done_;
    cv_.notify_all();
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(120), [&] { return done_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
};

void Complete(LlmTextService& s, const std::string& prompt, Outcome* out, Waiter* w) {
  TextGenerationRequest r;
  r.model = "m";
  r.prompt = prompt;
  r.max_tokens = 24;
  r.temperature = 0;
  out->submitted = s.Generate(
      r, [out](const TextPiece& p) { out->text += p.text; },
      [out, w](const TextGenerationResult& res) {
        out->finished = res.status;
        out->finish_reason = res.choices.empty() ? "" : res.choices[0].finish_reason;
        w->Done();
      });
  if (!out->submitted.ok()) w->Done();
}

TEST(LlmTextService, ReloadsUnderLoadAnswerEveryRequest) {
  REQUIRE_STORIES();
  MetricsRegistry registry(MetricsRegistry::Options{.process_metrics = false});
  LlmServiceOptions o;
  o.engine.threads = 1;
  o.engine.kv_cache_bytes = size_t{8} << 20;
  LlmTextService s(o, &registry);
  ASSERT_TRUE(s.LoadModel("m", kStories).ok());
  const std::vector<std::string> prompts = {"Once upon a time", "The dog", "Lily and Ben", "One day"};
  std::vector<Outcome> ref(prompts.size());
  Waiter rw;
  for (size_t i = 0; i < prompts.size(); ++i) Complete(s, prompts[i], &ref[i], &rw);
  ASSERT_TRUE(rw.WaitFor(static_cast<int>(prompts.size())));
  for (const auto& r : ref) ASSERT_TRUE(r.finished.ok()) << r.finished.ToString();

  constexpr int kThreads = 4, kPerThread = 12, kReloads = 6;
  std::vector<Outcome> got(kThreads * kPerThread);
  Waiter w;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int k = t * kPerThread + i;
        Complete(s, prompts[k % prompts.size()], &got[k], &w);
      }
    });
  }
  for (int i = 0; i < kReloads; ++i) ASSERT_TRUE(s.LoadModel("m", kStories).ok());
  for (auto& t : senders) t.join();
  ASSERT_TRUE(w.WaitFor(kThreads * kPerThread));
  for (size_t k = 0; k < got.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_TRUE(got[k].submitted.ok()) << got[k].submitted.ToString();
    EXPECT_TRUE(got[k].finished.ok()) << got[k].finished.ToString();
    EXPECT_EQ(got[k].text, ref[k % prompts.size()].text);
    EXPECT_EQ(got[k].finish_reason, ref[k % prompts.size()].finish_reason);
  }
  ASSERT_TRUE(s.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  // One series per model across the reloads, counting every request.
  const std::string text = registry.Exposition();
  const std::string want = "inferloop_llm_requests_total{model=\"m\",finish_reason=\"" + ref[0].finish_reason + "\"}";
  EXPECT_NE(text.find(want), std::string::npos) << text;

  // Unloaded: unknown from now on; once its engine is freed its series are gone.
  ASSERT_TRUE(s.UnloadModel("m").ok());
  EXPECT_EQ(s.UnloadModel("m").code(), StatusCode::kNotFound);
  Outcome after;
  Waiter aw;
  Complete(s, prompts[0], &after, &aw);
  EXPECT_EQ(after.submitted.code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.ListModels().empty());
  ASSERT_TRUE(s.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_EQ(registry.Exposition().find("model=\"m\""), std::string::npos);
}

TEST(LlmTextService, AFailedReloadKeepsTheServingEngine) {
  REQUIRE_STORIES();
  LlmServiceOptions o;
  o.engine.threads = 1;
  o.engine.kv_cache_bytes = size_t{8} << 20;
  LlmTextService s(o, nullptr);
  ASSERT_TRUE(s.LoadModel("m", kStories).ok());
  auto before = s.Engine("m");
  const Status st = s.LoadModel("m", kStories + ".missing");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(".missing"), std::string::npos) << st.ToString();
  EXPECT_EQ(s.Engine("m"), before);
  Outcome out;
  Waiter w;
  Complete(s, "Once upon a time", &out, &w);
  ASSERT_TRUE(w.WaitFor(1));
  EXPECT_TRUE(out.finished.ok());
  EXPECT_FALSE(out.text.empty());
}

}  // namespace
}  // namespace inferloop::serve
