// Prompt-lookup drafts: the tokens after the most recent earlier occurrence of the longest
// suffix of min_ngram..max_ngram tokens, cut to max_draft.
#include "llm/ngram_draft.h"

#include <gtest/gtest.h>

#include <vector>

namespace inferloop::llm {
namespace {

using V = std::vector<int32_t>;

NgramDraftOptions Opt(int max_draft, int min_ngram = 2, int max_ngram = 4) { return {max_draft, min_ngram, max_ngram}; }

TEST(NgramDraft, ContinuesTheEarlierOccurrenceOfTheSuffix) {
  // ... 5 6 7 8 9 ... 5 6 -> 7 8 9
  EXPECT_EQ(ProposeNgramDraft(V{1, 5, 6, 7, 8, 9, 2, 5, 6}, Opt(3)), (V{7, 8, 9}));
  EXPECT_EQ(ProposeNgramDraft(V{1, 5, 6, 7, 8, 9, 2, 5, 6}, Opt(2)), (V{7, 8}));
  // The draft stops at the end of the tokens.
  EXPECT_EQ(ProposeNgramDraft(V{1, 5, 6, 7, 5, 6}, Opt(8)), (V{7, 5, 6}));
}

TEST(NgramDraft, PrefersTheLongestSuffixThenTheMostRecentOccurrence) {
  // Suffix "3 4": the 2-gram occurs twice (followed by 9 and by 5); the 3-gram "2 3 4" only
  // before 5: the longer match wins.
  EXPECT_EQ(ProposeNgramDraft(V{2, 3, 4, 5, 0, 3, 4, 9, 0, 2, 3, 4}, Opt(1)), (V{5}));
  // Only 2-grams match: the most recent occurrence.
  EXPECT_EQ(ProposeNgramDraft(V{3, 4, 5, 0, 3, 4, 9, 0, 3, 4}, Opt(1)), (V{9}));
}

TEST(NgramDraft, NothingWithoutAMatchOrWhenOff) {
  EXPECT_TRUE(ProposeNgramDraft(V{1, 2, 3, 4, 5}, Opt(4)).empty());
  EXPECT_TRUE(ProposeNgramDraft(V{1, 2, 1, 2}, Opt(0)).empty());
  EXPECT_TRUE(ProposeNgramDraft(V{}, Opt(4)).empty());
  EXPECT_TRUE(ProposeNgramDraft(V{7}, Opt(4)).empty());
  // min_ngram 1: a single repeated token is enough.
  EXPECT_EQ(ProposeNgramDraft(V{7, 8, 7}, Opt(4, 1, 1)), (V{8, 7}));
  EXPECT_TRUE(ProposeNgramDraft(V{7, 8, 7}, Opt(4, 2, 4)).empty());
  // A run of one token drafts more of it.
  EXPECT_EQ(ProposeNgramDraft(V{4, 4, 4, 4}, Opt(5)), (V{4}));
}

}  // namespace
}  // namespace inferloop::llm
