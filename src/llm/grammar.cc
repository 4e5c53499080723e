#include "llm/grammar.h"

#include <cstdio>
#include <functional>

namespace inferloop::llm {

GrammarSymbol GrammarSymbol::Range(uint8_t lo, uint8_t hi) {
  ByteSet b;
  for (int c = lo; c <= hi; ++c) b.set(static_cast<size_t>(c));
  return {false, -1, b};
}

GrammarSequence Literal(std::string_view text) {
  GrammarSequence seq;
  for (char c : text) seq.push_back(GrammarSymbol::Byte(static_cast<uint8_t>(c)));
  return seq;
}

int Grammar::NewRule(std::string name) {
  names_.push_back(std::move(name));
  alternatives_.emplace_back();
  return static_cast<int>(alternatives_.size()) - 1;
}

void Grammar::AddAlternative(int rule, const GrammarSequence& seq) {
  alternatives_[rule].push_back(static_cast<uint32_t>(elements_.size()));
  for (const GrammarSymbol& s : seq) {
    if (s.is_rule) {
      elements_.push_back({GrammarElement::Kind::kRule, static_cast<uint32_t>(s.rule)});
    } else {
      byte_sets_.push_back(s.bytes);
      elements_.push_back({GrammarElement::Kind::kBytes, static_cast<uint32_t>(byte_sets_.size() - 1)});
    }
  }
  elements_.push_back({GrammarElement::Kind::kEnd, 0});
}

Status Grammar::Finalize(size_t max_elements) {
  const int n = rule_count();
  if (root_ < 0 || root_ >= n) return Status::InvalidArgument("the grammar has no root rule");
  if (elements_.size() > max_elements) {
    return Status::InvalidArgument("the grammar has " + std::to_string(elements_.size()) + " elements, more than " +
                                   std::to_string(max_elements));
  }
  for (int r = 0; r < n; ++r) {
    if (alternatives_[r].empty()) return Status::InvalidArgument("grammar rule '" + names_[r] + "' has no alternative");
  }
  for (const GrammarElement& e : elements_) {
    if (e.kind == GrammarElement::Kind::kRule && e.value >= static_cast<uint32_t>(n)) {
      return Status::InvalidArgument("the grammar refers to rule " + std::to_string(e.value) + ", which does not exist");
    }
  }
  // Nullable rules (match the empty string), to a fixed point.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t p : alternatives_[r]) {
        bool all = true;
        for (uint32_t q = p; elements_[q].kind != GrammarElement::Kind::kEnd && all; ++q) {
          all = elements_[q].kind == GrammarElement::Kind::kRule && nullable[elements_[q].value];
        }
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  // Left edges: r -> s when s can be reached before any byte is consumed. A cycle is left recursion.
  std::vector<std::vector<int>> left(n);
  for (int r = 0; r < n; ++r) {
    for (uint32_t p : alternatives_[r]) {
      for (uint32_t q = p; elements_[q].kind == GrammarElement::Kind::kRule; ++q) {
        left[r].push_back(static_cast<int>(elements_[q].value));
        if (!nullable[elements_[q].value]) break;
      }
    }
  }
  std::vector<uint8_t> mark(n, 0);  // 0 new, 1 on the DFS path, 2 done
  int cyclic = -1;
  std::function<void(int)> visit = [&](int r) {
    mark[r] = 1;
    for (int s : left[r]) {
      if (cyclic >= 0) return;
      if (mark[s] == 1) {
        cyclic = s;
        return;
      }
      if (mark[s] == 0) visit(s);
    }
    mark[r] = 2;
  };
  for (int r = 0; r < n && cyclic < 0; ++r) {
    if (mark[r] == 0) visit(r);
  }
  if (cyclic >= 0) {
    return Status::InvalidArgument("grammar rule '" + names_[cyclic] +
                                   "' is left-recursive (it can reach itself without consuming a byte)");
  }
  return Status::Ok();
}

namespace {

std::string ByteSetText(const ByteSet& b) {
  auto ch = [](int c) {
    char buf[8];
    if (c >= 0x21 && c < 0x7F && c != ']' && c != '\\' && c != '-' && c != '^') {
      buf[0] = static_cast<char>(c);
      buf[1] = 0;
    } else {
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
    }
    return std::string(buf);
  };
  if (b.count() == 1) {
    for (int c = 0; c < 256; ++c) {
      if (b.test(c)) return "'" + ch(c) + "'";
    }
  }
  std::string s = "[";
  for (int c = 0; c < 256;) {
    if (!b.test(c)) {
      ++c;
      continue;
    }
    int e = c;
    while (e + 1 < 256 && b.test(e + 1)) ++e;
    s += ch(c);
    if (e > c) s += "-" + ch(e);
    c = e + 1;
  }
  return s + "]";
}

}  // namespace

std::string Grammar::ToString() const {
  std::string s;
  for (int r = 0; r < rule_count(); ++r) {
    s += names_[r] + " ::=";
    for (size_t a = 0; a < alternatives_[r].size(); ++a) {
      if (a > 0) s += " |";
      uint32_t p = alternatives_[r][a];
      if (elements_[p].kind == GrammarElement::Kind::kEnd) s += " ''";
      for (; elements_[p].kind != GrammarElement::Kind::kEnd; ++p) {
        s += " ";
        s += elements_[p].kind == GrammarElement::Kind::kRule ? names_[elements_[p].value]
                                                              : ByteSetText(byte_sets_[elements_[p].value]);
      }
    }
    s += "\n";
  }
  return s;
}

}  // namespace inferloop::llm
