// GGUF models through the one model lifecycle (the gguf backend behind the model manager, the
// text-generation router in front), on the real stories260k model: requests sent from several
// threads while the model is reloaded again and again are all accepted and answered in full;
// after an unload through the repository API the model is unknown and its series are gone; a
// version that fails to load leaves the serving one serving.
#include "backends/gguf/gguf_backend.h"
#include "backends/gguf/llm_metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <future>

#include "serve/inference_server.h"
#include "serve/text_generation_router.h"

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferloop::serve {
namespace {
namespace fs = std::filesystem;

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

void Complete(TextGenerationService& s, const std::string& prompt, Outcome* out, Waiter* w) {
  TextGenerationRequest r;
  r.model = "m";
  r.prompts = {serve::TextPrompt{prompt, {}, false}};
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

// A repository DIR/m/1/model.gguf (a copy of stories260k) served in explicit mode.
class GgufServing {
 public:
  explicit GgufServing(MetricsRegistry* registry) {
    dir_ = fs::temp_directory_path() / ("il_gguf_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_ / "m" / "1");
    fs::copy_file(kStories, dir_ / "m" / "1" / "model.gguf");
    backends::GgufBackendOptions o;
    o.engine.threads = 1;
    o.engine.kv_cache_bytes = size_t{8} << 20;
    auto reg = std::make_shared<BackendRegistry>();
    reg->Add(backends::MakeGgufBackend(o, registry));
    InferenceServerOptions so;
    so.manager.repository = dir_.string();
    so.manager.mode = ModelControlMode::kExplicit;
    so.manager.backends = reg;
    auto s = InferenceServer::Create(so, nullptr);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    server = std::move(s).value();
    InferenceServer* is = server.get();
    router = std::make_unique<TextGenerationRouter>([is](const std::string& m) { return is->Find(m, 0); },
                                                    [is] { return is->Serving(); });
  }
  ~GgufServing() {
    router.reset();
    server.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Status Load() { return Call([&](StatusCallback cb) { server->LoadModel("m", std::move(cb)); }); }
  Status Unload() { return Call([&](StatusCallback cb) { server->UnloadModel("m", std::move(cb)); }); }
  // Makes the manager see a changed file (a reload).
  void Touch(int i) {
    fs::last_write_time(dir_ / "m" / "1" / "model.gguf", fs::file_time_type::clock::now() + std::chrono::seconds(i + 1));
  }
  fs::path dir() const { return dir_; }

  std::unique_ptr<InferenceServer> server;
  std::unique_ptr<TextGenerationRouter> router;

 private:
  Status Call(const std::function<void(StatusCallback)>& f) {
    std::promise<Status> p;
    auto fut = p.get_future();
    f([&p](Status st) { p.set_value(st); });
    return fut.get();
  }
  static inline std::atomic<int> counter_{0};
  fs::path dir_;
};

TEST(GgufBackend, ReloadsUnderLoadAnswerEveryRequest) {
  REQUIRE_STORIES();
  MetricsRegistry registry(MetricsRegistry::Options{.process_metrics = false});
  GgufServing g(&registry);
  ASSERT_TRUE(g.Load().ok());
  TextGenerationRouter& s = *g.router;
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
  for (int i = 0; i < kReloads; ++i) {
    g.Touch(i);
    ASSERT_TRUE(g.Load().ok());
  }
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
  // The endpoint picker's gauges (vLLM's names, label model_name): idle, nothing waits or runs,
  // and only the prefix cache holds blocks, which count as free.
  for (const char* series : {"vllm:num_requests_waiting{model_name=\"m\"} 0", "vllm:num_requests_running{model_name=\"m\"} 0",
                             "vllm:kv_cache_usage_perc{model_name=\"m\"} 0", "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0"})
    EXPECT_NE(text.find(std::string(series) + "\n"), std::string::npos) << series << "\n" << text;

  // Unloaded: unknown from now on; once its engine is freed its series are gone.
  ASSERT_TRUE(g.Unload().ok());
  Outcome after;
  Waiter aw;
  Complete(s, prompts[0], &after, &aw);
  // As for every kind of model after an unload: Unavailable, saying why (/v1 answers 503).
  EXPECT_EQ(after.submitted.code(), StatusCode::kUnavailable) << after.submitted.ToString();
  EXPECT_NE(after.submitted.message().find("unloaded"), std::string::npos) << after.submitted.ToString();
  EXPECT_TRUE(s.ListModels().empty());
  ASSERT_TRUE(s.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_EQ(registry.Exposition().find("model=\"m\""), std::string::npos);
  EXPECT_EQ(registry.Exposition().find("model_name=\"m\""), std::string::npos);
}

TEST(LlmMetrics, KvUsageCountsOnlyBlocksHeldBySequences) {
  llm::EngineStats st;
  EXPECT_EQ(backends::KvUsageFraction(st), 0.0);  // no cache at all: not a division by zero
  st.kv_blocks_total = 200;
  st.kv_blocks_used = 80;
  st.kv_blocks_cached_idle = 30;  // evictable: free for a new sequence
  EXPECT_DOUBLE_EQ(backends::KvUsageFraction(st), 0.25);
  st.kv_blocks_used = 200;
  st.kv_blocks_cached_idle = 0;
  EXPECT_DOUBLE_EQ(backends::KvUsageFraction(st), 1.0);
}

TEST(GgufBackend, AFailedReloadKeepsTheServingVersion) {
  REQUIRE_STORIES();
  GgufServing g(nullptr);
  ASSERT_TRUE(g.Load().ok());
  auto before = g.server->Find("m", 0);
  ASSERT_TRUE(before.ok());
  // Version 2 is not a GGUF file: it fails to load, version 1 keeps serving.
  fs::create_directories(g.dir() / "m" / "2");
  std::ofstream(g.dir() / "m" / "2" / "model.gguf") << "not a gguf file";
  const Status st = g.Load();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("m/2/model.gguf"), std::string::npos) << st.ToString();
  auto after = g.server->Find("m", 0);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.value(), before.value());
  EXPECT_EQ(after.value()->version(), 1);
  TextGenerationRouter& s = *g.router;
  Outcome out;
  Waiter w;
  Complete(s, "Once upon a time", &out, &w);
  ASSERT_TRUE(w.WaitFor(1));
  EXPECT_TRUE(out.finished.ok());
  EXPECT_FALSE(out.text.empty());
}

}  // namespace
}  // namespace inferloop::serve
