// Next-token choice from logits: greedy at temperature 0, else temperature, top-k, top-p
// (nucleus) and min-p sampling from a seeded generator, so a seed reproduces a generation.
// Before choosing, the logits may be adjusted (on a copy; the caller's logits are never
// modified), in this order:
//   1. logit_bias: logits[t] += bias[t];
//   2. repetition_penalty p (llama.cpp's and vLLM's meaning), over the prompt and the generated
//      tokens: a positive logit is divided by p, a negative one multiplied by p;
//   3. presence_penalty a and frequency_penalty f (OpenAI's and vLLM's meaning), over the
//      generated tokens only: logits[t] -= a * (count[t] > 0) + f * count[t].
// With the neutral values (no bias, p = 1, a = f = 0) the logits are used as given, so the
// choice is exactly that of a sampler without these parameters.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::llm {

struct SamplingParams {
  float temperature = 0.8f;  // 0: greedy (argmax, lowest id on ties)
  int top_k = 40;            // 0: no limit
  float top_p = 0.95f;       // 1: no limit
  uint64_t seed = 0;
  float min_p = 0;           // keep tokens with probability >= min_p * the top token's; 0: off
  float presence_penalty = 0;    // [-2, 2]
  float frequency_penalty = 0;   // [-2, 2]
  float repetition_penalty = 1;  // > 0; 1: off
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, bias in [-100, 100])
};

// InvalidArgument naming the parameter for negative temperature or top_k, top_p outside (0, 1],
// min_p outside [0, 1], presence or frequency penalty outside [-2, 2], repetition penalty not
// > 0, a logit_bias value outside [-100, 100] or a negative logit_bias token id. `vocab` > 0
// also checks logit_bias ids are below it.
Status ValidateSamplingParams(const SamplingParams& p, int64_t vocab = 0);

class Sampler {
 public:
  // `prompt`: the prompt's token ids (only read for the repetition penalty).
  explicit Sampler(const SamplingParams& p, std::span<const int32_t> prompt = {});
  // The chosen token id; it counts as generated for the penalties of later calls.
  int32_t Sample(std::span<const float> logits);
  // Applies the bias and penalties (steps 1-3 above) to `logits` in place, for the tokens seen
  // so far. Cost: the biased and seen tokens, not the vocab.
  void Adjust(std::span<float> logits) const;
  // True when Adjust can change anything.
  bool adjusts() const { return adjusts_; }

 private:
  struct Seen {
    int32_t token = 0;
    int generated = 0;  // times generated (0 for a token only in the prompt)
  };
  Seen& Touch(int32_t token);
  // Temperature, top-k, top-p and min-p over `logits` (already adjusted), from rng_.
  int32_t Draw(std::span<const float> logits);

  SamplingParams p_;
  std::mt19937_64 rng_;
  bool penalizes_ = false;  // some penalty is not neutral: seen tokens are tracked
  bool adjusts_ = false;
  std::vector<Seen> seen_;                      // the distinct tokens of the prompt and output
  std::unordered_map<int32_t, size_t> seen_at_;  // token -> index in seen_
  std::vector<float> scratch_;                  // the adjusted copy of the logits
};

// Index of the largest value, lowest index on ties.
int32_t ArgMax(std::span<const float> logits);

}  // namespace inferloop::llm
