// Prompt-lookup drafting for speculative decoding: the tokens that followed the most recent
// earlier occurrence of the sequence's last n tokens (n from max_ngram down to min_ngram, the
// longest match first) are proposed as the next tokens. The engine verifies a draft in one
// forward pass over it and keeps the longest prefix the sampler would have chosen anyway, plus
// the token the sampler chose at the first disagreement, so the output is the one decoding
// without a draft gives (llm_engine.h).
//
// Cost: O(tokens * max_ngram) comparisons per call in the worst case (a scan back from the end,
// stopped at the first match); nothing is allocated besides the returned draft.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace inferloop::llm {

struct NgramDraftOptions {
  int max_draft = 0;  // tokens proposed at most per step; 0: no speculative decoding
  int min_ngram = 2;  // the shortest suffix looked up (>= 1)
  int max_ngram = 4;  // the longest (>= min_ngram)
};

// The draft for `tokens` (prompt and generated so far): at most options.max_draft tokens, empty
// when no suffix of min_ngram..max_ngram tokens occurred earlier with something after it.
std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> tokens, const NgramDraftOptions& options);

}  // namespace inferloop::llm
