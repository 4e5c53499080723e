#include "llm/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <unordered_map>

#include "base/status_macros.h"
#include "llm/bpe_pretokenizer.h"

namespace inferloop::llm {

struct Tokenizer::Vocab {
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenKind> kind;
  std::unordered_map<std::string, TokenId> index;
  TokenId byte_token[256];
  TokenId bos = -1, eos = -1, unk = -1, eot = -1;
  bool add_bos = true;
  bool add_space_prefix = true;
  // Byte-level BPE ("gpt2" vocab): merge ranks by "left right", and the pre-tokenizer.
  bool bpe = false;
  PreTokenizer pre = PreTokenizer::kGpt2;
  std::unordered_map<std::string, int> merge_rank;

  int Rank(std::string_view left, std::string_view right) const {
    std::string key;
    key.reserve(left.size() + right.size() + 1);
    key.append(left).append(" ").append(right);
    auto it = merge_rank.find(key);
    return it == merge_rank.end() ? -1 : it->second;
  }
  // Special tokens matched in text, longest first.
  std::vector<TokenId> specials;

  TokenId Find(std::string_view s) const {
    auto it = index.find(std::string(s));
    return it == index.end() ? -1 : it->second;
  }
};

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581

size_t Utf8Length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;  // a stray continuation or invalid byte stands alone (byte fallback)
}

// One piece of the text being merged: a byte range, linked to its neighbours.
struct Symbol {
  int prev;
  int next;
  size_t offset;
  size_t size;  // 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
  bool operator<(const Bigram& o) const {  // priority_queue top: highest score, then leftmost
    return score < o.score || (score == o.score && left > o.left);
  }
};

// SentencePiece-style merging of one text fragment (already space-escaped).
class SpmSession {
 public:
  SpmSession(const Tokenizer::Vocab& v, std::string_view text) : v_(v), text_(text) {}

  void Run(std::vector<TokenId>* out) {
    for (size_t off = 0; off < text_.size();) {
      const size_t n = std::min(Utf8Length(static_cast<uint8_t>(text_[off])), text_.size() - off);
      const int i = static_cast<int>(symbols_.size());
      symbols_.push_back({i - 1, off + n == text_.size() ? -1 : i + 1, off, n});
      off += n;
    }
    for (size_t i = 1; i < symbols_.size(); ++i) TryAdd(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[b.left];
      Symbol& r = symbols_[b.right];
      if (l.size == 0 || r.size == 0 || l.size + r.size != b.size) continue;  // stale
      l.size += r.size;
      r.size = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = b.left;
      TryAdd(l.prev, b.left);
      TryAdd(b.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      const Symbol& s = symbols_[i];
      Emit(text_.substr(s.offset, s.size), out);
    }
  }

 private:
  void TryAdd(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const std::string_view merged = text_.substr(l.offset, l.size + r.size);
    const TokenId id = v_.Find(merged);
    if (id < 0) return;
    queue_.push({left, right, v_.score[id], merged.size()});
  }

  // Merged pieces are vocab entries by construction; single characters may not be: byte fallback.
  void Emit(std::string_view piece, std::vector<TokenId>* out) const {
    const TokenId id = v_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
    for (unsigned char c : piece) {
      const TokenId b = v_.byte_token[c];
      if (b >= 0) {
        out->push_back(b);
      } else if (v_.unk >= 0) {
        out->push_back(v_.unk);
      }
    }
  }

  const Tokenizer::Vocab& v_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram> queue_;
};

// Byte-level BPE of one pre-tokenized word: its bytes as GPT-2 characters, then adjacent
// symbols merged lowest merge rank first (leftmost on ties) while a merge applies.
class BpeSession {
 public:
  BpeSession(const Tokenizer::Vocab& v, std::string_view word) : v_(v) {
    for (unsigned char b : word) text_ += ByteToUnicode(b);
  }

  void Run(std::vector<TokenId>* out) {
    const std::string_view t = text_;
    for (size_t off = 0; off < t.size();) {
      const size_t n = std::min(Utf8Length(static_cast<uint8_t>(t[off])), t.size() - off);
      const int i = static_cast<int>(symbols_.size());
      symbols_.push_back({i - 1, off + n == t.size() ? -1 : i + 1, off, n});
      off += n;
    }
    for (size_t i = 1; i < symbols_.size(); ++i) TryAdd(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue_.empty()) {
      const Merge m = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[m.left];
      Symbol& r = symbols_[m.right];
      if (l.size == 0 || r.size == 0 || l.size + r.size != m.size || l.next != m.right) continue;  // stale
      l.size += r.size;
      r.size = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = m.left;
      TryAdd(l.prev, m.left);
      TryAdd(m.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      const Symbol& s = symbols_[i];
      const std::string_view piece = t.substr(s.offset, s.size);
      const TokenId id = v_.Find(piece);
      if (id >= 0) {
        out->push_back(id);
        continue;
      }
      // Not in the vocab: one token per character (each byte's character is).
      for (size_t off = 0; off < piece.size();) {
        const size_t n = std::min(Utf8Length(static_cast<uint8_t>(piece[off])), piece.size() - off);
        const TokenId c = v_.Find(piece.substr(off, n));
        if (c >= 0) out->push_back(c);
        else if (v_.unk >= 0) out->push_back(v_.unk);
        off += n;
      }
    }
  }

 private:
  struct Merge {
    int left, right, rank;
    size_t size;
    bool operator<(const Merge& o) const { return rank > o.rank || (rank == o.rank && left > o.left); }
  };
  void TryAdd(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const std::string_view t = text_;
    const int rank = v_.Rank(t.substr(l.offset, l.size), t.substr(r.offset, r.size));
    if (rank < 0) return;
    queue_.push({left, right, rank, l.size + r.size});
  }

  const Tokenizer::Vocab& v_;
  std::string text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Merge> queue_;
};

Result<TokenId> OptionalTokenId(const GgufFile& f, const char* key, size_t n_vocab) {
  if (f.Find(key) == nullptr) return TokenId{-1};
  IL_ASSIGN_OR_RETURN(uint64_t id, f.GetUnsigned(key));
  if (id == 0xFFFFFFFFull) return TokenId{-1};  // "none" as some converters write it
  if (id >= n_vocab) {
    return Status::InvalidArgument(std::string("key '") + key + "' = " + std::to_string(id) +
                                   " is not a token id (vocab has " + std::to_string(n_vocab) + ")");
  }
  return static_cast<TokenId>(id);
}

Result<bool> OptionalBool(const GgufFile& f, const char* key, bool fallback) {
  if (f.Find(key) == nullptr) return fallback;
  return f.GetBool(key);
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Vocab> v) : v_(std::move(v)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::FromGguf(const GgufFile& f) {
  IL_ASSIGN_OR_RETURN(std::string_view model, f.GetString("tokenizer.ggml.model"));
  if (model != "llama" && model != "gpt2") {
    return Status::Unimplemented("tokenizer type '" + std::string(model) +
                                 "' is not supported (supported: llama, gpt2)");
  }
  auto v = std::make_unique<Vocab>();
  if (model == "gpt2") {
    v->bpe = true;
    v->add_space_prefix = false;
    std::string_view pre;
    if (f.Find("tokenizer.ggml.pre") != nullptr) {
      IL_ASSIGN_OR_RETURN(pre, f.GetString("tokenizer.ggml.pre"));
    }
    IL_ASSIGN_OR_RETURN(v->pre, PreTokenizerFor(pre));
    IL_ASSIGN_OR_RETURN(std::vector<std::string_view> merges, f.GetStringArray("tokenizer.ggml.merges"));
    v->merge_rank.reserve(merges.size() * 2);
    for (size_t i = 0; i < merges.size(); ++i) v->merge_rank.emplace(std::string(merges[i]), static_cast<int>(i));
  }
  IL_ASSIGN_OR_RETURN(std::vector<std::string_view> tokens, f.GetStringArray("tokenizer.ggml.tokens"));
  const size_t n = tokens.size();
  if (n == 0 || n > (1u << 24)) return Status::InvalidArgument("tokenizer.ggml.tokens has " + std::to_string(n) + " entries");
  v->text.reserve(n);
  for (auto t : tokens) v->text.emplace_back(t);
  v->score.assign(n, 0.0f);
  if (f.Find("tokenizer.ggml.scores") != nullptr) {
    IL_ASSIGN_OR_RETURN(v->score, f.GetFloat32Array("tokenizer.ggml.scores"));
    if (v->score.size() != n) {
      return Status::InvalidArgument("tokenizer.ggml.scores has " + std::to_string(v->score.size()) +
                                     " entries, tokens has " + std::to_string(n));
    }
  }
  v->kind.assign(n, TokenKind::kNormal);
  if (f.Find("tokenizer.ggml.token_type") != nullptr) {
    IL_ASSIGN_OR_RETURN(std::vector<int32_t> types, f.GetInt32Array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return Status::InvalidArgument("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                                     " entries, tokens has " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      v->kind[i] = (types[i] >= 0 && types[i] <= 6) ? static_cast<TokenKind>(types[i]) : TokenKind::kNormal;
    }
  }
  v->index.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) v->index.emplace(v->text[i], static_cast<TokenId>(i));  // first wins
  std::fill(std::begin(v->byte_token), std::end(v->byte_token), -1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const TokenId id = v->Find(name);
    if (id >= 0 && v->kind[id] == TokenKind::kByte) v->byte_token[b] = id;
  }
  IL_ASSIGN_OR_RETURN(v->bos, OptionalTokenId(f, "tokenizer.ggml.bos_token_id", n));
  IL_ASSIGN_OR_RETURN(v->eos, OptionalTokenId(f, "tokenizer.ggml.eos_token_id", n));
  IL_ASSIGN_OR_RETURN(v->unk, OptionalTokenId(f, "tokenizer.ggml.unknown_token_id", n));
  IL_ASSIGN_OR_RETURN(v->eot, OptionalTokenId(f, "tokenizer.ggml.eot_token_id", n));
  IL_ASSIGN_OR_RETURN(v->add_bos, OptionalBool(f, "tokenizer.ggml.add_bos_token", true));
  IL_ASSIGN_OR_RETURN(v->add_space_prefix, OptionalBool(f, "tokenizer.ggml.add_space_prefix", !v->bpe));
  for (size_t i = 0; i < n; ++i) {
    if ((v->kind[i] == TokenKind::kControl || v->kind[i] == TokenKind::kUserDefined) && !v->text[i].empty()) {
      v->specials.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(v->specials.begin(), v->specials.end(),
                   [&](TokenId a, TokenId b) { return v->text[a].size() > v->text[b].size(); });
  return Tokenizer(std::move(v));
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, bool add_bos, bool parse_special) const {
  const Vocab& v = *v_;
  std::vector<TokenId> out;
  if (add_bos && v.add_bos && v.bos >= 0) out.push_back(v.bos);
  bool prev_special = true;  // the first text fragment gets the space prefix
  auto encode_text = [&](std::string_view frag) {
    if (frag.empty()) return;
    if (v.bpe) {
      for (std::string_view word : PreTokenize(v.pre, frag)) BpeSession(v, word).Run(&out);
      prev_special = false;
      return;
    }
    std::string escaped;
    escaped.reserve(frag.size() * 3 + 3);
    if (v.add_space_prefix && prev_special) escaped.append(kSpaceMark);
    for (char c : frag) {
      if (c == ' ') {
        escaped.append(kSpaceMark);
      } else {
        escaped.push_back(c);
      }
    }
    SpmSession(v, escaped).Run(&out);
    prev_special = false;
  };
  size_t start = 0, pos = 0;
  while (pos < text.size()) {
    TokenId hit = -1;
    for (TokenId s : v.specials) {
      if (!parse_special && v.kind[s] == TokenKind::kControl) continue;
      const std::string& t = v.text[s];
      if (text.compare(pos, t.size(), t) == 0) {
        hit = s;
        break;
      }
    }
    if (hit < 0) {
      ++pos;
      continue;
    }
    encode_text(text.substr(start, pos - start));
    out.push_back(hit);
    prev_special = true;
    pos += v.text[hit].size();
    start = pos;
  }
  encode_text(text.substr(start));
  return out;
}

std::string Tokenizer::Piece(TokenId id, bool render_special) const {
  const Vocab& v = *v_;
  if (id < 0 || id >= static_cast<TokenId>(v.text.size())) return "";
  const std::string& t = v.text[id];
  switch (v.kind[id]) {
    case TokenKind::kByte: {
      // "<0xAB>"
      if (t.size() == 6) {
        const unsigned long b = std::strtoul(t.substr(3, 2).c_str(), nullptr, 16);
        return std::string(1, static_cast<char>(b));
      }
      return "";
    }
    case TokenKind::kControl:
    case TokenKind::kUnused:
      return render_special ? t : "";
    case TokenKind::kUnknown:
      return render_special ? t : "\xE2\x96\x85";
    case TokenKind::kUserDefined:
      return t;
    default: {
      if (v.bpe) {
        std::string bytes;
        return UnicodeToBytes(t, &bytes) ? bytes : t;
      }
      std::string s;
      s.reserve(t.size());
      for (size_t i = 0; i < t.size();) {
        if (t.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
          s.push_back(' ');
          i += kSpaceMark.size();
        } else {
          s.push_back(t[i++]);
        }
      }
      return s;
    }
  }
}

std::string Tokenizer::Decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string s;
  for (TokenId id : ids) s += Piece(id, render_special);
  return s;
}

std::string Tokenizer::DecodeText(const std::vector<TokenId>& ids) const {
  std::string s = Decode(ids);
  if (v_->add_space_prefix && !s.empty() && s[0] == ' ') s.erase(0, 1);
  return s;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(v_->text.size()); }
TokenId Tokenizer::bos() const { return v_->bos; }
TokenId Tokenizer::eos() const { return v_->eos; }

bool Tokenizer::IsEndOfGeneration(TokenId id) const {
  if (id < 0) return false;
  if (id == v_->eos || id == v_->eot) return true;
  if (id >= vocab_size() || v_->kind[id] != TokenKind::kControl) return false;
  const std::string& t = v_->text[id];
  return t == "<|eot_id|>" || t == "<|im_end|>" || t == "<|end|>" || t == "<|endoftext|>" || t == "</s>";
}

std::string_view Tokenizer::Text(TokenId id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return v_->text[id];
}

TokenKind Tokenizer::Kind(TokenId id) const {
  if (id < 0 || id >= vocab_size()) return TokenKind::kUndefined;
  return v_->kind[id];
}

}  // namespace inferloop::llm
