// Requests and outputs for the response cache's tests (response_cache_test.cc,
// response_cache_disk_test.cc).
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "serve/infer_request.h"
#include "serve/response_cache.h"

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

// `threads` threads each do `ops` lookups of keys {k, 1} (k cycling over `keys` values from a
// per-thread start), inserting a 64-float output holding k on a miss. Returns how many hits held
// something else than what was stored under their key.
inline int LookupOrInsertFromThreads(ResponseCache& cache, int threads, int ops, int keys) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      for (int i = 0; i < ops; ++i) {
        const auto k = static_cast<uint64_t>((i * 7 + t * 13) % keys);
        if (auto hit = cache.Lookup({k, 1})) {
          if (hit->outputs[0].tensor.data<float>()[63] != static_cast<float>(k)) ++wrong;
        } else {
          cache.Insert({k, 1}, {FloatOutput("y", 64, static_cast<float>(k))});
        }
      }
    });
  }
  for (auto& th : running) th.join();
  return wrong.load();
}

}  // namespace inferloop::serve::testing_rc
