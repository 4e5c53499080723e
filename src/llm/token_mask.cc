#include "llm/token_mask.h"

#include <algorithm>
#include <map>

#include "llm/tokenizer.h"

namespace inferloop::llm {

void TokenMask::Set(int32_t id) {
  uint64_t& w = bits[static_cast<size_t>(id) >> 6];
  const uint64_t bit = uint64_t{1} << (id & 63);
  if (!(w & bit)) {
    w |= bit;
    ++allowed;
  }
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> pieces, std::vector<int32_t> end_tokens)
    : pieces_(std::move(pieces)), end_tokens_(std::move(end_tokens)) {
  // A pointer trie first, then laid out breadth-first with each node's children contiguous.
  struct Tmp {
    std::map<uint8_t, int> kids;
    std::vector<int32_t> toks;
  };
  std::vector<Tmp> tmp(1);
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& p = pieces_[id];
    if (p.empty()) continue;
    int n = 0;
    for (char c : p) {
      const auto b = static_cast<uint8_t>(c);
      auto it = tmp[n].kids.find(b);
      if (it == tmp[n].kids.end()) {
        tmp.emplace_back();
        it = tmp[n].kids.emplace(b, static_cast<int>(tmp.size()) - 1).first;
      }
      n = it->second;
    }
    tmp[n].toks.push_back(id);
  }
  std::vector<int> order = {0};  // tmp index of each laid-out node
  nodes_.emplace_back();
  for (size_t i = 0; i < order.size(); ++i) {
    const Tmp& t = tmp[order[i]];
    nodes_[i].first_child = static_cast<uint32_t>(order.size());
    nodes_[i].children = static_cast<uint32_t>(t.kids.size());
    nodes_[i].first_token = static_cast<uint32_t>(token_ids_.size());
    nodes_[i].tokens = static_cast<uint32_t>(t.toks.size());
    token_ids_.insert(token_ids_.end(), t.toks.begin(), t.toks.end());
    for (const auto& [b, k] : t.kids) {
      order.push_back(k);
      Node child;
      child.byte = b;
      nodes_.push_back(child);
    }
  }
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::FromTokenizer(const Tokenizer& tok) {
  std::vector<std::string> pieces(tok.vocab_size());
  std::vector<int32_t> ends;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.IsEndOfGeneration(id)) {
      ends.push_back(id);
      continue;
    }
    const TokenKind k = tok.Kind(id);
    if (k == TokenKind::kNormal || k == TokenKind::kByte || k == TokenKind::kUserDefined || k == TokenKind::kUndefined) {
      pieces[id] = tok.Piece(id);
    }
  }
  return std::make_shared<TokenVocabulary>(std::move(pieces), std::move(ends));
}

TokenMasker::TokenMasker(const Grammar* grammar, std::shared_ptr<const TokenVocabulary> vocab, size_t max_cache_bytes)
    : grammar_(grammar), vocab_(std::move(vocab)) {
  const size_t mask_bytes = (static_cast<size_t>(vocab_->size()) + 63) / 64 * 8 + 64;
  max_entries_ = std::max<size_t>(1, max_cache_bytes / mask_bytes);
  max_states_ = std::max<size_t>(64, max_cache_bytes / (sizeof(State) + 256));
}

namespace {

// The reference walk: every trie node advances a copy of the stack set.
void WalkStacks(const Grammar& g, const TokenVocabulary& v, uint32_t node, const std::vector<GrammarMatcher::Stack>& state,
                TokenMask* mask) {
  ByteSet next;
  for (const auto& s : state) {
    if (!s.empty()) next |= g.bytes(g.element(s.back()).value);
  }
  if (next.none()) return;
  std::vector<GrammarMatcher::Stack> after;
  const TokenVocabulary::Node& n = v.nodes()[node];
  for (uint32_t c = n.first_child; c < n.first_child + n.children; ++c) {
    const TokenVocabulary::Node& child = v.nodes()[c];
    if (!next.test(child.byte)) continue;  // the whole subtree is refused
    GrammarMatcher::Step(g, state, child.byte, &after);
    if (after.empty()) continue;
    for (uint32_t t = 0; t < child.tokens; ++t) mask->Set(v.token_ids()[child.first_token + t]);
    if (child.children > 0) WalkStacks(g, v, c, after, mask);
  }
}

}  // namespace

TokenMask TokenMasker::Compute(const GrammarMatcher& m) const {
  TokenMask mask;
  mask.bits.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  WalkStacks(*grammar_, *vocab_, 0, m.stacks(), &mask);
  if (m.CanEnd()) {
    for (int32_t e : vocab_->end_tokens()) mask.Set(e);
  }
  return mask;
}

int32_t TokenMasker::Intern(std::vector<GrammarMatcher::Stack> stacks, std::string key) {
  auto [it, added] = state_ids_.try_emplace(std::move(key), static_cast<int32_t>(states_.size()));
  if (added) {
    State s;
    s.stacks = std::move(stacks);
    s.next.fill(-2);
    states_.push_back(std::move(s));
  }
  return it->second;
}

int32_t TokenMasker::Next(int32_t state, uint8_t byte) {
  int32_t n = states_[state].next[byte];
  if (n != -2) return n;
  std::vector<GrammarMatcher::Stack> after;
  GrammarMatcher::Step(*grammar_, states_[state].stacks, byte, &after);
  if (after.empty()) {
    n = -1;
  } else {
    std::string key = GrammarMatcher::KeyOf(after);
    n = Intern(std::move(after), std::move(key));
  }
  states_[state].next[byte] = n;  // (states_ may have grown: index again)
  return n;
}

void TokenMasker::Walk(uint32_t node, int32_t state, TokenMask* mask) {
  const auto& nodes = vocab_->nodes();
  const auto& ids = vocab_->token_ids();
  const TokenVocabulary::Node& n = nodes[node];
  for (uint32_t c = n.first_child; c < n.first_child + n.children; ++c) {
    const TokenVocabulary::Node& child = nodes[c];
    const int32_t after = Next(state, child.byte);
    if (after < 0) continue;  // the whole subtree is refused
    for (uint32_t t = 0; t < child.tokens; ++t) mask->Set(ids[child.first_token + t]);
    if (child.children > 0) Walk(c, after, mask);
  }
}

TokenMask TokenMasker::Fill(const GrammarMatcher& m, int32_t state) {
  TokenMask mask;
  mask.bits.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  Walk(0, state, &mask);
  if (m.CanEnd()) {
    for (int32_t e : vocab_->end_tokens()) mask.Set(e);
  }
  return mask;
}

const TokenMask& TokenMasker::Mask(const GrammarMatcher& m) {
  std::string key = m.Key();
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  if (cache_.size() >= max_entries_ || states_.size() >= max_states_) {
    cache_.clear();
    states_.clear();
    state_ids_.clear();
  }
  const int32_t state = Intern(m.stacks(), key);
  TokenMask mask = Fill(m, state);
  return cache_.emplace(std::move(key), std::move(mask)).first->second;
}

}  // namespace inferloop::llm
