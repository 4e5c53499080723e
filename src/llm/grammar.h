// A context-free grammar over bytes, the language a constrained generation must stay in
// (grammar_matcher.h recognizes it byte by byte; json_schema_grammar.h compiles JSON schemas to
// it).
//
// A grammar is a list of rules; each rule is a list of alternatives; each alternative is a
// sequence of symbols, each either a set of bytes (one byte out of the set) or a reference to a
// rule. An empty alternative matches the empty string. Repetition is written with right
// recursion (R -> x R | empty). Left recursion (a rule reaching itself before consuming a byte)
// is refused by Finalize, so a recognizer's expansion always terminates.
//
// Storage is flat, as the recognizer walks it: every alternative is a run of elements in one
// array ended by an kEnd element, and a position in the grammar is an index into that array.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::llm {

using ByteSet = std::bitset<256>;

// One symbol of an alternative, as the builder takes it.
struct GrammarSymbol {
  bool is_rule = false;
  int rule = -1;  // is_rule
  ByteSet bytes;  // !is_rule

  static GrammarSymbol Rule(int id) { return {true, id, {}}; }
  static GrammarSymbol Bytes(const ByteSet& b) { return {false, -1, b}; }
  static GrammarSymbol Byte(uint8_t c) {
    ByteSet b;
    b.set(c);
    return {false, -1, b};
  }
  // Bytes lo..hi inclusive.
  static GrammarSymbol Range(uint8_t lo, uint8_t hi);
};

using GrammarSequence = std::vector<GrammarSymbol>;

// The bytes of `text` as a sequence of one-byte symbols.
GrammarSequence Literal(std::string_view text);

struct GrammarElement {
  enum class Kind : uint8_t { kEnd, kBytes, kRule };
  Kind kind = Kind::kEnd;
  uint32_t value = 0;  // kBytes: index into byte_sets(); kRule: rule id
};

class Grammar {
 public:
  // A new rule with no alternatives yet; its id. `name` is for messages and ToString.
  int NewRule(std::string name);
  // Adds an alternative to `rule` (an empty `seq`: the empty string).
  void AddAlternative(int rule, const GrammarSequence& seq);
  void SetRoot(int rule) { root_ = rule; }

  // InvalidArgument for a rule without alternatives, a reference to no rule, no root, a
  // left-recursive rule (naming it), or more than `max_elements` elements. Call once the rules
  // are complete, before matching.
  Status Finalize(size_t max_elements = size_t{1} << 22);

  int root() const { return root_; }
  int rule_count() const { return static_cast<int>(alternatives_.size()); }
  const std::string& rule_name(int rule) const { return names_[rule]; }
  // Start positions (element indices) of `rule`'s alternatives.
  const std::vector<uint32_t>& alternatives(int rule) const { return alternatives_[rule]; }
  const GrammarElement& element(uint32_t pos) const { return elements_[pos]; }
  const ByteSet& bytes(uint32_t set) const { return byte_sets_[set]; }
  size_t element_count() const { return elements_.size(); }

  // The rules in a GBNF-like notation (for tests and messages).
  std::string ToString() const;

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<uint32_t>> alternatives_;
  std::vector<GrammarElement> elements_;
  std::vector<ByteSet> byte_sets_;
  int root_ = -1;
};

}  // namespace inferloop::llm
