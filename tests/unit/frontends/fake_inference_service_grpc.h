// A scripted serve::InferenceService for the gRPC frontend tests.
//
// Models:
//   "echo"  ready, version "1": Infer answers at once, output "OUTPUT0" = input 0 (metadata: INPUT0
//           FP32 [-1,4] -> OUTPUT0 FP32 [-1,4]); its config JSON is `config_json`.
//   "held"  Infer keeps the callback (pending()); the test answers it later, from any thread.
//           "echo" has adaptive variants (FakeAdaptiveControl); "held" has none.
//   any name in `errors`: every call on it fails with that Status.
//   anything else: NotFound.
// Records the RequestContext of every Infer call.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_adaptive_control.h"
#include "serve/inference_service.h"

namespace inferloop::frontends::testing {

// Waits (polling) until pred() holds; false after `timeout`.
inline bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

class FakeGrpcInferenceService : public serve::InferenceService {
 public:
  struct Pending {
    serve::InferRequest request;
    serve::RequestContext context;
    serve::InferCallback done;
  };

  std::atomic<bool> live{true};
  std::atomic<bool> ready{true};
  std::map<std::string, Status> errors;  // set before the server starts
  std::string config_json =
      R"({"name":"echo","platform":"onnxruntime_onnx","max_batch_size":8,)"
      R"("input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":["4"]}],)"
      R"("output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[4]}],)"
      R"("dynamic_batching":{"preferred_batch_size":[4,8],"max_queue_delay_microseconds":"100"},)"
      R"("a_field_this_proto_lacks":{"x":1}})";

  bool Live() override { return live; }
  bool Ready() override { return ready; }
  serve::ServerMetadata GetServerMetadata() override { return {"inferloop", "0.1.0", {"model_repository", "statistics"}}; }

  Result<bool> ModelReady(const std::string& model, const std::string& version) override {
    if (Status st = Check(model, version); !st.ok()) return st;
    return model == "echo";
  }

  Result<serve::ModelMetadata> GetModelMetadata(const std::string& model, const std::string& version) override {
    if (Status st = Check(model, version); !st.ok()) return st;
    serve::ModelMetadata m;
    m.name = model;
    m.versions = {"1"};
    m.platform = "onnxruntime_onnx";
    m.inputs = {{"INPUT0", "FP32", {-1, 4}}};
    m.outputs = {{"OUTPUT0", "FP32", {-1, 4}}};
    return m;
  }

  Result<std::string> GetModelConfigJson(const std::string& model, const std::string& version) override {
    if (Status st = Check(model, version); !st.ok()) return st;
    return config_json;
  }

  void Infer(serve::InferRequest request, serve::RequestContext context, serve::InferCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      contexts_.push_back(context);
    }
    if (Status st = Check(request.model_name, request.model_version); !st.ok()) return done(st);
    if (request.model_name == "held") {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back({std::move(request), std::move(context), std::move(done)});
      return;
    }
    done(Echo(request));
  }

  std::vector<serve::ModelIndexEntry> RepositoryIndex(bool ready_only) override {
    std::vector<serve::ModelIndexEntry> all = {{"echo", "1", "READY", ""}, {"broken", "", "UNAVAILABLE", "no model.onnx"}};
    if (!ready_only) return all;
    return {all[0]};
  }

  void LoadModel(const std::string& model, serve::StatusCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      loads_.push_back(model);
    }
    done(Check(model, ""));
  }
  void UnloadModel(const std::string& model, serve::StatusCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      unloads_.push_back(model);
    }
    // Answered from another thread, as the real core does once in-flight requests finished.
    std::thread([done = std::move(done), st = Check(model, "")] { done(st); }).detach();
  }

  Result<std::vector<serve::ModelStatistics>> GetStatistics(const std::string& model, const std::string& version) override {
    if (!model.empty()) {
      if (Status st = Check(model, version); !st.ok()) return st;
    }
    serve::ModelStatistics s;
    s.name = "echo";
    s.version = "1";
    s.last_inference_ms = 1700000000123;
    s.inference_count = 12;
    s.execution_count = 5;
    s.success = {5, 5000};
    s.queue = {5, 700};
    s.compute_infer = {5, 3000};
    s.cache_hit = {2, 40};
    s.cache_miss = {3, 90};
    s.batch_stats = {{1, {}, {2, 900}, {}}, {4, {}, {3, 2100}, {}}};
    s.memory_bytes = 4096;
    return std::vector<serve::ModelStatistics>{s};
  }

  std::string MetricsText() override { return ""; }

  Result<serve::AdaptiveState> GetAdaptiveState(const std::string& model, const std::string& version) override {
    return adaptive.State(Check(model, version), model);
  }
  Status PinVariant(const std::string& model, const std::string& version, const std::string& variant) override {
    return adaptive.Pin(Check(model, version), model, variant);
  }
  AdaptiveCalls adaptive = EchoAdaptive();

  // Every Infer call's context, in call order.
  std::vector<serve::RequestContext> contexts() {
    std::lock_guard<std::mutex> lock(mu_);
    return contexts_;
  }
  size_t pending_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }
  // Takes the oldest held request (the test then answers it).
  Pending TakePending() {
    std::lock_guard<std::mutex> lock(mu_);
    Pending p = std::move(pending_.front());
    pending_.erase(pending_.begin());
    return p;
  }

  static serve::InferResponse Echo(const serve::InferRequest& request) {
    serve::InferResponse r;
    r.model_name = request.model_name;
    r.model_version = "1";
    r.id = request.id;
    if (!request.inputs.empty()) r.outputs.push_back({"OUTPUT0", request.inputs[0].tensor.Clone(), {}});
    return r;
  }

  std::vector<std::string> loads() {
    std::lock_guard<std::mutex> lock(mu_);
    return loads_;
  }
  std::vector<std::string> unloads() {
    std::lock_guard<std::mutex> lock(mu_);
    return unloads_;
  }

 private:
  static AdaptiveCalls EchoAdaptive() {
    AdaptiveCalls calls;
    calls.controls["echo"] = std::make_shared<FakeAdaptiveControl>("echo", 1);
    return calls;
  }
  Status Check(const std::string& model, const std::string& version) {
    auto it = errors.find(model);
    if (it != errors.end()) return it->second;
    if (model != "echo" && model != "held") return Status::NotFound("unknown model '" + model + "'");
    if (!version.empty() && version != "1") return Status::NotFound("unknown version '" + version + "' of '" + model + "'");
    return Status::Ok();
  }

  std::mutex mu_;
  std::vector<serve::RequestContext> contexts_;
  std::vector<Pending> pending_;
  std::vector<std::string> loads_, unloads_;
};

}  // namespace inferloop::frontends::testing
