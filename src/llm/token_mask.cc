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
}

void TokenMasker::Walk(uint32_t node, const std::vector<GrammarMatcher::Stack>& state, TokenMask* mask) const {
  const auto& nodes = vocab_->nodes();
  const auto& ids = vocab_->token_ids();
  ByteSet next;
  for (const auto& s : state) {
    if (!s.empty()) next |= grammar_->bytes(grammar_->element(s.back()).value);
  }
  if (next.none()) return;
  std::vector<GrammarMatcher::Stack> after;
  const TokenVocabulary::Node& n = nodes[node];
  for (uint32_t c = n.first_child; c < n.first_child + n.children; ++c) {
    const TokenVocabulary::Node& child = nodes[c];
    if (!next.test(child.byte)) continue;  // the whole subtree is refused
    GrammarMatcher::Step(*grammar_, state, child.byte, &after);
    if (after.empty()) continue;
    for (uint32_t t = 0; t < child.tokens; ++t) mask->Set(ids[child.first_token + t]);
    if (child.children > 0) Walk(c, after, mask);
  }
}

TokenMask TokenMasker::Compute(const GrammarMatcher& m) const {
  TokenMask mask;
  mask.bits.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  Walk(0, m.stacks(), &mask);
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
  if (cache_.size() >= max_entries_) cache_.clear();
  return cache_.emplace(std::move(key), Compute(m)).first->second;
}

}  // namespace inferloop::llm
