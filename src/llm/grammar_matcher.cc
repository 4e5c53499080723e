#include "llm/grammar_matcher.h"

#include <algorithm>

namespace inferloop::llm {
namespace {

using Stack = GrammarMatcher::Stack;
using Kind = GrammarElement::Kind;

// Expands the top of `s` until it is a byte set (or the stack is empty) and adds the results to
// `out`. A rule reference at the top is replaced by each of its alternatives, with the position
// after the reference kept below unless the reference ended its alternative.
void Expand(const Grammar& g, Stack s, std::vector<Stack>* out) {
  if (out->size() >= GrammarMatcher::kMaxStacks) return;
  while (!s.empty() && g.element(s.back()).kind == Kind::kEnd) s.pop_back();
  if (s.empty() || g.element(s.back()).kind == Kind::kBytes) {
    out->push_back(std::move(s));
    return;
  }
  const uint32_t pos = s.back();
  const int rule = static_cast<int>(g.element(pos).value);
  s.pop_back();
  if (g.element(pos + 1).kind != Kind::kEnd) s.push_back(pos + 1);
  const auto& alts = g.alternatives(rule);
  for (size_t i = 0; i < alts.size(); ++i) {
    Stack c = i + 1 == alts.size() ? std::move(s) : s;
    if (g.element(alts[i]).kind != Kind::kEnd) c.push_back(alts[i]);
    Expand(g, std::move(c), out);
  }
}

void Normalize(std::vector<Stack>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

GrammarMatcher::GrammarMatcher(const Grammar* grammar) : g_(grammar) {
  const Grammar& g = *g_;
  for (uint32_t alt : g.alternatives(g.root())) {
    Stack s;
    if (g.element(alt).kind != Kind::kEnd) s.push_back(alt);
    Expand(g, std::move(s), &stacks_);
  }
  Normalize(&stacks_);
}

void GrammarMatcher::Step(const Grammar& g, const std::vector<Stack>& in, uint8_t b, std::vector<Stack>* out) {
  out->clear();
  for (const Stack& s : in) {
    if (s.empty()) continue;
    const GrammarElement& e = g.element(s.back());
    if (!g.bytes(e.value).test(b)) continue;
    Stack next(s.begin(), s.end() - 1);
    if (g.element(s.back() + 1).kind != Kind::kEnd) next.push_back(s.back() + 1);
    Expand(g, std::move(next), out);
  }
  Normalize(out);
}

bool GrammarMatcher::Advance(uint8_t b) {
  std::vector<Stack> next;
  Step(*g_, stacks_, b, &next);
  if (next.empty()) return false;
  stacks_ = std::move(next);
  return true;
}

bool GrammarMatcher::Advance(std::string_view bytes) {
  std::vector<Stack> cur = stacks_, next;
  for (char c : bytes) {
    Step(*g_, cur, static_cast<uint8_t>(c), &next);
    if (next.empty()) return false;
    cur.swap(next);
  }
  stacks_ = std::move(cur);
  return true;
}

bool GrammarMatcher::CanEnd() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool GrammarMatcher::Done() const {
  return std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

ByteSet GrammarMatcher::NextBytes() const {
  ByteSet b;
  for (const Stack& s : stacks_) {
    if (!s.empty()) b |= g_->bytes(g_->element(s.back()).value);
  }
  return b;
}

std::string GrammarMatcher::KeyOf(const std::vector<Stack>& stacks) {
  std::string k;
  for (const Stack& s : stacks) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    k.append(reinterpret_cast<const char*>(&n), sizeof(n));
    k.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(uint32_t));
  }
  return k;
}

}  // namespace inferloop::llm
