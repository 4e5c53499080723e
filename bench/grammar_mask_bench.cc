// Token mask cost of constrained decoding (src/llm/token_mask.h) on its own, without a model:
// the mask of every step of one JSON answer, computed cold (a fresh masker: every state's trie
// walk) and warm (the same masker again: one cache lookup per step), on a real vocabulary (a
// GGUF file's) or a synthetic one of N tokens (random printable strings of 1..10 bytes plus the
// 256 single bytes, a fixed seed), to see how the walk scales with the vocabulary.
//
//   build/bench_grammar_masks [--model FILE.gguf] [--vocab N] [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "llm/gguf_file.h"
#include "llm/grammar_matcher.h"
#include "llm/json_schema_grammar.h"
#include "llm/token_mask.h"
#include "llm/tokenizer.h"

namespace {

using namespace inferloop::llm;
using Clock = std::chrono::steady_clock;

constexpr const char* kSchema =
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120},)"
    R"("mood":{"enum":["happy","sad","angry"]},"pet":{"type":"object","properties":{"kind":{"enum":["cat","dog"]},)"
    R"("legs":{"type":"integer","minimum":0,"maximum":8}},"required":["kind","legs"],"additionalProperties":false},)"
    R"("tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":2}},)"
    R"("required":["name","age","mood","pet","tags"],"additionalProperties":false})";
constexpr const char* kAnswer =
    R"( {"name": "Lily", "age": 30, "mood": "happy", "pet": {"kind": "cat", "legs": 4}, "tags": ["fun", "red"]})";

std::shared_ptr<const TokenVocabulary> Synthetic(int n) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  std::mt19937 rng(1);
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyz     ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;\"'{}[]-_!?";
  while (static_cast<int>(pieces.size()) < n) {
    const int len = 1 + static_cast<int>(rng() % 10);
    std::string s;
    for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    pieces.push_back(s);
  }
  pieces.emplace_back();  // end of generation
  return std::make_shared<TokenVocabulary>(std::move(pieces), std::vector<int32_t>{n});
}

// One pass over the answer: at each step the mask, then the longest allowed token that the
// answer continues with. Returns the seconds spent in Mask() and the step count.
std::pair<double, int> Pass(TokenMasker& masker, const Grammar& g, const std::string& answer) {
  GrammarMatcher m(&g);
  const TokenVocabulary& v = masker.vocab();
  double secs = 0;
  int steps = 0;
  for (size_t at = 0;;) {
    const auto t0 = Clock::now();
    const TokenMask& mask = masker.Mask(m);
    secs += std::chrono::duration<double>(Clock::now() - t0).count();
    ++steps;
    if (at == answer.size()) break;
    int best = -1;
    for (int32_t id = 0; id < v.size(); ++id) {
      const std::string& p = v.piece(id);
      if (p.empty() || !mask.Test(id) || answer.compare(at, p.size(), p) != 0) continue;
      if (best < 0 || p.size() > v.piece(best).size()) best = id;
    }
    if (best < 0 || !m.Advance(v.piece(best))) {
      std::fprintf(stderr, "no allowed token continues the answer at byte %zu\n", at);
      std::exit(1);
    }
    at += v.piece(best).size();
  }
  return {secs, steps};
}

}  // namespace

int main(int argc, char** argv) {
  std::string model;
  int vocab_n = 0, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model = argv[i + 1];
    else if (!std::strcmp(argv[i], "--vocab")) vocab_n = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  std::shared_ptr<const TokenVocabulary> vocab;
  if (!model.empty()) {
    auto f = GgufFile::Open(model);
    if (!f.ok()) return std::fprintf(stderr, "%s\n", f.status().message().c_str()), 1;
    auto tok = Tokenizer::FromGguf(*f);
    if (!tok.ok()) return std::fprintf(stderr, "%s\n", tok.status().message().c_str()), 1;
    vocab = TokenVocabulary::FromTokenizer(*tok);
  } else {
    vocab = Synthetic(vocab_n > 0 ? vocab_n : 128000);
  }
  auto g = JsonSchemaToGrammar(kSchema, {true});
  if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().message().c_str()), 1;
  std::vector<double> cold, warm;
  int steps = 0;
  size_t states = 0;
  for (int r = 0; r < rounds; ++r) {
    TokenMasker masker(&*g, vocab);
    auto [c, n] = Pass(masker, *g, kAnswer);
    auto [w, n2] = Pass(masker, *g, kAnswer);
    cold.push_back(c / n * 1e6);
    warm.push_back(w / n2 * 1e6);
    steps = n;
    states = static_cast<size_t>(masker.misses());
  }
  std::sort(cold.begin(), cold.end());
  std::sort(warm.begin(), warm.end());
  std::printf("vocabulary %d tokens (%zu trie nodes); answer %zu bytes in %d steps, %zu distinct grammar states\n",
              vocab->size(), vocab->nodes().size(), std::strlen(kAnswer), steps, states);
  std::printf("mask per step, median of %d: cold %.1f us (trie walk per new state), warm %.3f us (cached)\n", rounds,
              cold[cold.size() / 2], warm[warm.size() / 2]);
  return 0;
}
