// Requests and outputs for the response cache's tests (response_cache_test.cc,
// response_cache_disk_test.cc).
#pragma once

#include <string>
#include <vector>

#include "serve/infer_request.h"

namespace inferloop::serve::testing_rc {

// A float output of `n` elements, each `value`, with one string parameter.
inline InferOutput FloatOutput(const std::string& name, int64_t n, float value) {
  return InferOutput{name, Tensor::FromVector<float>(DataType::kFloat, {n}, std::vector<float>(n, value)),
                     {{"tag", std::string(name)}}};
}
// A BYTES output holding `values`.
inline InferOutput StringOutput(const std::string& name, std::vector<std::string> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return InferOutput{name, Tensor::FromStrings({n}, std::move(values)), {{"tag", std::string(name)}}};
}

// Two inputs (float [2,2], BYTES [2]), one requested output, two request parameters.
inline InferRequest SampleRequest() {
  InferRequest r;
  r.model_name = "m";
  r.id = "id-1";
  r.inputs.push_back(InferInput{"x", Tensor::FromVector<float>(DataType::kFloat, {2, 2}, {1.f, 2.f, 3.f, 4.f}), {}});
  r.inputs.push_back(InferInput{"s", Tensor::FromStrings({2}, {"a", "b"}), {}});
  r.outputs.push_back(RequestedOutput{"out", std::nullopt, {}});
  r.parameters["mode"] = true;
  r.parameters["top_k"] = int64_t{5};
  return r;
}

}  // namespace inferloop::serve::testing_rc
