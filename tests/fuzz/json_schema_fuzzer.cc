// Fuzzes the JSON schema compiler and constrained decoding (src/llm/json_schema_grammar.h,
// grammar_matcher.h, token_mask.h): arbitrary bytes (the first one picks strict mode) must
// give a grammar or a Status, never a crash, hang or leak; for a grammar, a generation over a
// small JSON-ish vocabulary must only take tokens the mask allows, each accepted by the matcher,
// with the cached mask equal to a fresh walk at every step.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llm/grammar_matcher.h"
#include "llm/json_schema_grammar.h"
#include "llm/token_mask.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::llm;
  if (size < 1) return 0;
  static const auto vocab = std::make_shared<TokenVocabulary>(
      std::vector<std::string>{"", "{", "}", "[", "]", "\"", ",", ":", " ", "0", "1", "-", ".", "e", "a", "b", "n", "t", "r",
                               "u", "l", "f", "s", "\\", "x", "\xC3", "\xA9", "true", "false", "null", "\"a\"", "{\"",
                               "\":", ", ", ": ", "12", "-0", "\"}", "\"]", "ab", "0.5"},
      std::vector<int32_t>{0});
  auto g = JsonSchemaToGrammar(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), {(data[0] & 1) != 0});
  if (!g.ok()) return 0;
  GrammarMatcher m(&*g);
  TokenMasker masker(&*g, vocab);
  for (int step = 0; step < 48; ++step) {
    const TokenMask& mask = masker.Mask(m);
    if (mask.bits != masker.Compute(m).bits) std::abort();
    if (mask.allowed == 0) break;
    // The k-th allowed token, k from the input.
    int k = data[step % size] % mask.allowed, chosen = -1;
    for (int32_t id = 0; id < vocab->size() && chosen < 0; ++id) {
      if (mask.Test(id) && k-- == 0) chosen = id;
    }
    if (chosen == 0) {
      if (!m.CanEnd()) std::abort();
      break;
    }
    if (!m.Advance(vocab->piece(chosen))) std::abort();
  }
  return 0;
}
