// A pushdown recognizer for a Grammar (grammar.h), fed one byte at a time.
//
// Its state is a set of stacks of grammar positions (element indices), as llama.cpp's grammar
// sampler keeps them: the top of each stack is the byte set to match next, the positions below
// are where to continue once the rule above ends; an empty stack means the input so far is a
// whole sentence of the grammar. A byte advances every stack whose top accepts it (expanding
// rule references at the new top, with tail positions dropped so right recursion does not grow
// the stack) and drops the others; several stacks cover the alternatives still open. The set is
// kept sorted and without duplicates, so equal states have equal Key()s. A very ambiguous
// grammar (alternatives that stay open in parallel) is held to kMaxStacks stacks: the ones past
// it are dropped, which narrows the language but never lets in a text outside it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llm/grammar.h"

namespace inferloop::llm {

class GrammarMatcher {
 public:
  using Stack = std::vector<uint32_t>;
  static constexpr size_t kMaxStacks = 4096;

  // At the start of `grammar` (finalized; must outlive the matcher).
  explicit GrammarMatcher(const Grammar* grammar);

  // Consumes byte `b`; false (state unchanged) when the grammar refuses it here.
  bool Advance(uint8_t b);
  // Consumes all of `bytes`, or nothing (false) when some byte is refused.
  bool Advance(std::string_view bytes);
  // True when the input so far is a whole sentence (generation may end here).
  bool CanEnd() const;
  // True when nothing may follow (every stack is empty).
  bool Done() const;
  // The bytes that may come next.
  ByteSet NextBytes() const;

  const std::vector<Stack>& stacks() const { return stacks_; }
  const Grammar& grammar() const { return *g_; }
  // The state as bytes, equal for equal states (the token mask cache's key).
  std::string Key() const { return KeyOf(stacks_); }
  static std::string KeyOf(const std::vector<Stack>& stacks);

  // `in` advanced by `b` into `out` (sorted, unique; empty when refused).
  static void Step(const Grammar& g, const std::vector<Stack>& in, uint8_t b, std::vector<Stack>* out);

 private:
  const Grammar* g_;
  std::vector<Stack> stacks_;
};

}  // namespace inferloop::llm
