// Next-token choice from logits: greedy at temperature 0, else temperature, top-k and top-p
// (nucleus) sampling from a seeded generator, so a seed reproduces a generation.
#pragma once

#include <cstdint>
#include <random>
#include <span>

#include "inferloop/status.h"

namespace inferloop::llm {

struct SamplingParams {
  float temperature = 0.8f;  // 0: greedy (argmax, lowest id on ties)
  int top_k = 40;            // 0: no limit
  float top_p = 0.95f;       // 1: no limit
  uint64_t seed = 0;
};

// InvalidArgument naming the parameter for negative temperature or top_k, top_p outside (0, 1].
Status ValidateSamplingParams(const SamplingParams& p);

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {}
  // The chosen token id (logits are not modified).
  int32_t Sample(std::span<const float> logits);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
};

// Index of the largest value, lowest index on ties.
int32_t ArgMax(std::span<const float> logits);

}  // namespace inferloop::llm
