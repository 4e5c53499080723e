// ModelManager's contract for "model_version_loaded": when the event is logged, the version it
// names already answers requests (Find gives it). Deploy scripts and the e2e tests wait for that
// line and then send requests; when it was logged before the swap, a request sent on it could
// still reach the version being replaced (tests/e2e/test_llm_reload.py failed so under load).
//
// The check runs inside the log: the event log writes to a stream whose write function hands the
// line to a checker thread and waits for its Find (a bounded wait: if the manager held its lock
// while logging, the checker cannot answer in time and the check fails instead of hanging).
#include <gtest/gtest.h>

#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status_macros.h"
#include "serve/event_log.h"
#include "serve/model_backend.h"
#include "serve/model_manager.h"

namespace inferloop::serve {
namespace {

namespace fs = std::filesystem;

// A model kind whose versions are a file "model.fake" and do nothing.
class FakeVersion : public ModelVersion {
 public:
  FakeVersion(std::string name, int64_t version, ModelConfig config)
      : name_(std::move(name)), version_(version), config_(std::move(config)) {}
  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const ModelConfig& config() const override { return config_; }
  bool Infer(InferRequest&&, RequestContext&&, InferCallback&&, AdmissionTicket&&) override { return false; }
  void Drain() override {}
  ModelMetadata Metadata() const override { return {}; }
  ModelStatistics Statistics() const override { return {}; }
  int64_t MemoryBytes() const override { return 0; }
  bool Ready() const override { return true; }
  std::string NotReadyReason() const override { return ""; }

 private:
  std::string name_;
  int64_t version_;
  ModelConfig config_;
};

class FakeBackend : public ModelBackend {
 public:
  std::string kind() const override { return "fake"; }
  std::string default_model_filename() const override { return "model.fake"; }
  bool Serves(const ModelConfig&, const std::vector<std::string>& files) const override {
    for (const auto& f : files) {
      if (f == "model.fake") return true;
    }
    return false;
  }
  Result<std::shared_ptr<ModelVersion>> Load(const VersionLoadRequest& r) override {
    ModelConfig c = r.partial_config;
    c.set_name(r.model_name);
    return std::shared_ptr<ModelVersion>(std::make_shared<FakeVersion>(r.model_name, r.version, std::move(c)));
  }
};

// What the checker thread found for each "model_version_loaded" line, while the line was being
// written: the version Find("m", "") gave, or -1 when it could not answer within the wait.
struct LoadedLineChecker {
  ModelManager* manager = nullptr;
  std::mutex mu;
  std::vector<int64_t> found;

  // The stream's write function: runs on the thread that logs.
  void OnLine(const std::string& line) {
    if (line.find("\"model_version_loaded\"") == std::string::npos || manager == nullptr) return;
    auto answer = std::make_shared<std::promise<int64_t>>();
    std::future<int64_t> f = answer->get_future();
    std::thread([this, answer] {
      auto v = manager->Find("m", "");
      answer->set_value(v.ok() ? v.value()->version() : 0);
    }).detach();
    const int64_t got = f.wait_for(std::chrono::seconds(3)) == std::future_status::ready ? f.get() : -1;
    std::lock_guard<std::mutex> lock(mu);
    found.push_back(got);
  }
};

ssize_t WriteLine(void* cookie, const char* buf, size_t size) {
  static_cast<LoadedLineChecker*>(cookie)->OnLine(std::string(buf, size));
  return static_cast<ssize_t>(size);
}

void Touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "fake";
}

// A manager of `repo` in explicit mode with model "m" at start-up, of the fake kind alone.
Result<std::unique_ptr<ModelManager>> MakeManager(const fs::path& repo, EventLog* log) {
  auto registry = std::make_shared<BackendRegistry>();
  registry->Add(std::make_shared<FakeBackend>());
  ModelManagerOptions o;
  o.repository = repo.string();
  o.backends = registry;
  o.mode = ModelControlMode::kExplicit;
  o.startup_models = {"m"};
  o.log = log;
  return ModelManager::Create(std::move(o));
}

TEST(ModelManagerReloadEvent, TheLoadedVersionServesWhenTheEventIsLogged) {
  const fs::path repo = fs::temp_directory_path() / ("il_reload_event_" + std::to_string(::getpid()));
  fs::remove_all(repo);
  Touch(repo / "m" / "1" / "model.fake");

  LoadedLineChecker checker;
  cookie_io_functions_t io{};
  io.write = &WriteLine;
  FILE* stream = fopencookie(&checker, "w", io);
  ASSERT_NE(stream, nullptr);
  setvbuf(stream, nullptr, _IOLBF, 0);  // one write per line
  {
    EventLog log(stream);
    auto created = MakeManager(repo, &log);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    std::unique_ptr<ModelManager> manager = std::move(created).value();
    checker.manager = manager.get();

    ASSERT_TRUE(manager->LoadStartupModels().ok());
    // A second version appears; the reload makes it the one that serves (the highest).
    Touch(repo / "m" / "2" / "model.fake");
    std::promise<Status> done;
    manager->Load("m", [&](Status s) { done.set_value(std::move(s)); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ASSERT_TRUE(f.get().ok());
    EXPECT_EQ(manager->Find("m", "").value()->version(), 2);
    checker.manager = nullptr;
    manager.reset();
  }
  fclose(stream);
  std::lock_guard<std::mutex> lock(checker.mu);
  // The first load's event found version 1 serving, the reload's found version 2.
  EXPECT_EQ(checker.found, (std::vector<int64_t>{1, 2}));
  fs::remove_all(repo);
}

// A deploy copies a new file under a hidden name, then renames it over the served one (as
// rsync and tests/e2e/test_llm_reload.py do). The hidden file is not a change: counted as one,
// a poll during the copy reloaded the old file as "the new version" (logged as a reload, old
// answers), which test_llm_reload saw under ASan.
TEST(ModelManagerReloadEvent, AHiddenFileInAVersionFolderIsNotAChange) {
  const fs::path repo = fs::temp_directory_path() / ("il_reload_hidden_" + std::to_string(::getpid()));
  fs::remove_all(repo);
  Touch(repo / "m" / "1" / "model.fake");
  auto created = MakeManager(repo, nullptr);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<ModelManager> manager = std::move(created).value();
  ASSERT_TRUE(manager->LoadStartupModels().ok());
  auto reload = [&] {
    std::promise<Status> done;
    manager->Load("m", [&](Status s) { done.set_value(std::move(s)); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ASSERT_TRUE(f.get().ok());
  };
  const std::shared_ptr<ModelVersion> first = manager->Find("m", "").value();

  std::ofstream(repo / "m" / "1" / ".model.fake.tmp") << "half a new fil";
  reload();
  EXPECT_EQ(manager->Find("m", "").value(), first) << "reloaded for a hidden file";

  std::ofstream(repo / "m" / "1" / ".model.fake.tmp") << "a whole new file";
  fs::rename(repo / "m" / "1" / ".model.fake.tmp", repo / "m" / "1" / "model.fake");
  reload();
  EXPECT_NE(manager->Find("m", "").value(), first) << "the renamed file is a change";
  manager.reset();
  fs::remove_all(repo);
}

}  // namespace
}  // namespace inferloop::serve
