#include "llm/ngram_draft.h"

#include <algorithm>

namespace inferloop::llm {

std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> tokens, const NgramDraftOptions& options) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (options.max_draft <= 0 || options.min_ngram < 1) return {};
  for (int64_t n = std::min<int64_t>(options.max_ngram, len - 1); n >= options.min_ngram; --n) {
    const std::span<const int32_t> suffix = tokens.subspan(len - n);
    // Most recent occurrence first; it must end before the suffix starts being itself.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(options.max_draft, len - from);
      return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + from + count);
    }
  }
  return {};
}

}  // namespace inferloop::llm
