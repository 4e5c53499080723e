#include "serve/best_of.h"

#include <algorithm>
#include <numeric>

namespace inferloop::serve {

BestOfSelector::BestOfSelector(TextGenerationRequest& request, std::function<void(const TextPiece&)> on_piece,
                               std::function<void(const TextGenerationResult&)> on_done)
    : n_(request.n),
      best_of_(request.best_of),
      want_logprobs_(request.logprobs >= 0),
      on_piece_(std::move(on_piece)),
      on_done_(std::move(on_done)) {
  const size_t candidates = std::max<size_t>(1, request.prompts.size()) * static_cast<size_t>(best_of_);
  pieces_.resize(candidates);
  logprob_.assign(candidates, 0.0);
  request.n = best_of_;
  request.best_of = 0;
  if (request.logprobs < 0) request.logprobs = 0;
}

void BestOfSelector::OnPiece(const TextPiece& piece) {
  std::lock_guard<std::mutex> l(mu_);
  if (piece.index < 0 || piece.index >= static_cast<int>(pieces_.size())) return;
  for (const TextTokenLogprob& t : piece.tokens) logprob_[piece.index] += t.logprob;
  pieces_[piece.index].push_back(piece);
}

void BestOfSelector::OnDone(const TextGenerationResult& result) {
  TextGenerationResult out;
  out.status = result.status;
  out.prompt_tokens = result.prompt_tokens;
  out.cached_prompt_tokens = result.cached_prompt_tokens;
  out.completion_tokens = result.completion_tokens;  // every candidate's tokens
  std::vector<const TextChoiceEnd*> ends(pieces_.size(), nullptr);
  for (const TextChoiceEnd& c : result.choices) {
    if (c.index >= 0 && c.index < static_cast<int>(ends.size())) ends[c.index] = &c;
  }
  std::lock_guard<std::mutex> l(mu_);
  const int prompts = static_cast<int>(pieces_.size()) / best_of_;
  for (int p = 0; p < prompts && result.status.ok(); ++p) {
    std::vector<int> order(best_of_);
    std::iota(order.begin(), order.end(), p * best_of_);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logprob_[a] > logprob_[b]; });
    for (int k = 0; k < n_; ++k) {
      const int from = order[k], to = p * n_ + k;
      for (TextPiece piece : pieces_[from]) {
        piece.index = to;
        if (!want_logprobs_) piece.tokens.clear();
        on_piece_(piece);
      }
      TextChoiceEnd end = ends[from] != nullptr ? *ends[from] : TextChoiceEnd{};
      end.index = to;
      out.choices.push_back(end);
    }
  }
  on_done_(out);
}

}  // namespace inferloop::serve
