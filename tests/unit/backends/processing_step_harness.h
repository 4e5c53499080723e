// Driving a processing backend in a test as the model manager does: ModelBackend::Load with a
// VersionLoadRequest and a config parsed from config.pbtxt text, then ModelVersion::Infer with a
// callback, waited for with a promise.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "serve/model_backend.h"

namespace inferloop::serve::testing {

// A resolver that knows no model (for steps that call none).
class NoModels final : public ModelResolver {
 public:
  Result<std::shared_ptr<ModelVersion>> Find(const std::string& model, int64_t) override {
    return Status::NotFound("no model '" + model + "'");
  }
};

inline Result<std::shared_ptr<ModelVersion>> LoadStep(ModelBackend& backend, const std::string& config_text,
                                                      ModelResolver* models) {
  auto config = ParseModelConfig(config_text, "step");
  if (!config.ok()) return config.status();
  EXPECT_TRUE(backend.Serves(*config, {})) << config_text;
  VersionLoadRequest r;
  r.model_name = "step";
  r.version = 1;
  r.partial_config = *config;
  r.models = models;
  return backend.Load(r);
}

inline Result<InferResponse> InferNow(ModelVersion& version, std::vector<InferInput> inputs,
                                      std::vector<std::string> wanted = {}) {
  InferRequest request;
  request.model_name = version.name();
  request.inputs = std::move(inputs);
  for (auto& w : wanted) request.outputs.push_back({w, {}, {}});
  std::promise<Result<InferResponse>> answer;
  auto future = answer.get_future();
  const bool taken = version.Infer(std::move(request), RequestContext{},
                                   [&answer](Result<InferResponse> r) { answer.set_value(std::move(r)); },
                                   AdmissionTicket{});
  if (!taken) return Status::Unavailable("the version is draining");
  return future.get();
}

inline const Tensor* OutputNamed(const InferResponse& response, const std::string& name) {
  for (const auto& o : response.outputs)
    if (o.name == name) return &o.tensor;
  ADD_FAILURE() << "no output '" << name << "'";
  return nullptr;
}

inline std::vector<float> Floats(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.size()); }

}  // namespace inferloop::serve::testing
