// FakeInferenceService: an in-memory serve::InferenceService for the frontend tests. Models are
// what the test puts in `models`; Infer echoes every input back as output "<input>_out" unless
// the test installs `on_infer`; every call is recorded.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "fake_adaptive_control.h"
#include "serve/inference_service.h"

namespace inferloop::frontends::testing {

class FakeInferenceService : public serve::InferenceService {
 public:
  using InferHook = std::function<void(serve::InferRequest, serve::RequestContext, serve::InferCallback)>;

  FakeInferenceService() {
    serve::ModelMetadata md;
    md.name = "simple";
    md.versions = {"1", "2"};
    md.platform = "onnxruntime_onnx";
    md.inputs = {{"INPUT0", "FP32", {-1, 4}}};
    md.outputs = {{"OUTPUT0", "FP32", {-1, 4}}};
    md.memory_bytes = 12345;
    models["simple"] = md;
    adaptive.controls["simple"] = std::make_shared<FakeAdaptiveControl>("simple", 2);
  }

  // ---- what the test sets ----
  std::atomic<bool> live{true};
  std::atomic<bool> ready{true};
  std::map<std::string, serve::ModelMetadata> models;  // set before the server starts
  std::map<std::string, bool> model_not_ready;          // model -> true: ModelReady false
  std::vector<serve::ModelIndexEntry> index = {{"simple", "2", "READY", ""}, {"broken", "", "UNAVAILABLE", "bad config"}};
  std::vector<serve::ModelStatistics> stats;
  Status load_status;    // what LoadModel / UnloadModel answer
  std::string metrics = "# TYPE nv_inference_count counter\nnv_inference_count{model=\"simple\",version=\"1\"} 7\n";
  InferHook on_infer;   // replaces the echo
  AdaptiveCalls adaptive;  // "simple" has variants; other models in `models` have none

  // ---- what the test reads ----
  struct Calls {
    std::vector<std::pair<std::string, std::string>> metadata, ready, config, statistics;  // (model, version)
    std::vector<std::pair<std::string, std::string>> adaptive_state, adaptive_pin;
    std::vector<bool> index_ready_only;
    std::vector<std::string> loaded, unloaded;
    std::vector<serve::InferRequest> infers;
    std::vector<serve::RequestContext> contexts;
  };
  Calls calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  // ---- InferenceService ----
  bool Live() override { return live; }
  bool Ready() override { return ready; }
  serve::ServerMetadata GetServerMetadata() override { return {"inferloop", "0.4.0", {"model_repository", "statistics", "binary_tensor_data"}}; }

  Result<bool> ModelReady(const std::string& model, const std::string& version) override {
    Record(&Calls::ready, model, version);
    IL_RETURN_IF_ERROR(Known(model, version));
    return !model_not_ready.count(model);
  }
  Result<serve::ModelMetadata> GetModelMetadata(const std::string& model, const std::string& version) override {
    Record(&Calls::metadata, model, version);
    IL_RETURN_IF_ERROR(Known(model, version));
    serve::ModelMetadata md = models.at(model);
    if (!version.empty()) md.versions = {version};
    return md;
  }
  Result<std::string> GetModelConfigJson(const std::string& model, const std::string& version) override {
    Record(&Calls::config, model, version);
    IL_RETURN_IF_ERROR(Known(model, version));
    return std::string("{\"name\":\"") + model + "\",\"max_batch_size\":8}";
  }
  void Infer(serve::InferRequest request, serve::RequestContext context, serve::InferCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.infers.push_back(request);
      calls_.contexts.push_back(context);
    }
    if (on_infer) return on_infer(std::move(request), std::move(context), std::move(done));
    Status known = Known(request.model_name, request.model_version);
    if (!known.ok()) return done(known);
    serve::InferResponse response;
    response.model_name = request.model_name;
    response.model_version = request.model_version.empty() ? "2" : request.model_version;
    response.id = request.id;
    for (auto& input : request.inputs) response.outputs.push_back({input.name + "_out", input.tensor, {}});
    done(std::move(response));
  }
  std::vector<serve::ModelIndexEntry> RepositoryIndex(bool ready_only) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.index_ready_only.push_back(ready_only);
    return index;
  }
  void LoadModel(const std::string& model, serve::StatusCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.loaded.push_back(model);
    }
    done(load_status);
  }
  void UnloadModel(const std::string& model, serve::StatusCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.unloaded.push_back(model);
    }
    done(load_status);
  }
  Result<std::vector<serve::ModelStatistics>> GetStatistics(const std::string& model, const std::string& version) override {
    Record(&Calls::statistics, model, version);
    if (!model.empty()) IL_RETURN_IF_ERROR(Known(model, version));
    return stats;
  }
  std::string MetricsText() override { return metrics; }
  Result<serve::AdaptiveState> GetAdaptiveState(const std::string& model, const std::string& version) override {
    Record(&Calls::adaptive_state, model, version);
    return adaptive.State(Known(model, version), model);
  }
  Status PinVariant(const std::string& model, const std::string& version, const std::string& variant) override {
    Record(&Calls::adaptive_pin, model, version);
    return adaptive.Pin(Known(model, version), model, variant);
  }

 private:
  Status Known(const std::string& model, const std::string& version) {
    auto it = models.find(model);
    if (it == models.end()) return Status::NotFound("unknown model '" + model + "'");
    if (!version.empty()) {
      bool found = false;
      for (const auto& v : it->second.versions) found = found || v == version;
      if (!found) return Status::NotFound("model '" + model + "' has no version " + version);
    }
    return Status::Ok();
  }
  void Record(std::vector<std::pair<std::string, std::string>> Calls::*field, const std::string& m, const std::string& v) {
    std::lock_guard<std::mutex> lock(mu_);
    (calls_.*field).emplace_back(m, v);
  }

  std::mutex mu_;
  Calls calls_;
};

}  // namespace inferloop::frontends::testing
