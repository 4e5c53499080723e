// best_of for /v1/completions: each prompt is generated as best_of sampled candidates (candidate
// i of prompt p with seed + p * best_of + i, as any choice) and only the n with the highest
// cumulative log-probability (the sum of the logprobs of the tokens they generated, as vLLM ranks
// them; ties: the lower candidate first) are returned, as choices p * n + k in that order. Usage
// counts every candidate's tokens (as OpenAI bills them). Not streamable: pieces are held until
// the whole generation is done.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "serve/text_generation_service.h"

namespace inferloop::serve {

class BestOfSelector {
 public:
  // Rewrites `request` (best_of > n) to generate the candidates: n = best_of, logprobs on (the
  // ranking needs them; they are removed again when the client did not ask), best_of = 0. The
  // selector then takes the callbacks of that generation (OnPiece, OnDone) and calls the client's
  // with the chosen choices.
  BestOfSelector(TextGenerationRequest& request, std::function<void(const TextPiece&)> on_piece,
                 std::function<void(const TextGenerationResult&)> on_done);

  void OnPiece(const TextPiece& piece);
  void OnDone(const TextGenerationResult& result);

 private:
  int n_ = 1;
  int best_of_ = 1;
  bool want_logprobs_ = false;
  std::function<void(const TextPiece&)> on_piece_;
  std::function<void(const TextGenerationResult&)> on_done_;
  std::mutex mu_;
  std::vector<std::vector<TextPiece>> pieces_;  // per candidate
  std::vector<double> logprob_;                 // per candidate: cumulative
};

}  // namespace inferloop::serve
