#include "llm/bpe_pretokenizer.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <array>
#include <unordered_map>

namespace inferloop::llm {

Result<PreTokenizer> PreTokenizerFor(std::string_view pre) {
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "smaug-bpe") return PreTokenizer::kLlama3;
  if (pre == "qwen2" || pre == "deepseek-llm") return PreTokenizer::kQwen2;
  if (pre == "gpt-2" || pre == "gpt2" || pre == "default" || pre.empty()) return PreTokenizer::kGpt2;
  return Status::Unimplemented("BPE pre-tokenizer '" + std::string(pre) +
                               "' is not supported (supported: llama-bpe, qwen2, gpt-2)");
}

namespace {

enum Cls : uint8_t { kLetter, kNumber, kSpace, kOther };

struct Char {
  size_t begin, end;  // byte range
  UChar32 cp;         // -1 for an invalid byte
  Cls cls;
};

Cls Classify(UChar32 c) {
  if (c < 0) return kOther;
  if (u_isUWhiteSpace(c)) return kSpace;
  const int8_t t = u_charType(c);
  switch (t) {
    case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER: case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return kLetter;
    case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
      return kNumber;
    default:
      return kOther;
  }
}

std::vector<Char> Decode(std::string_view s) {
  std::vector<Char> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const int32_t n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(p, i, n, c);  // c < 0 for an ill-formed sequence (i advanced past it)
    if (c < 0) i = start + 1;
    out.push_back({static_cast<size_t>(start), static_cast<size_t>(i), c, Classify(c)});
  }
  return out;
}

bool IsCrLf(const Char& c) { return c.cp == '\r' || c.cp == '\n'; }

// Length (in characters) of the contraction at i ('s 't 're 've 'm 'll 'd), 0 if none.
size_t Contraction(const std::vector<Char>& c, size_t i, bool ignore_case) {
  if (c[i].cp != '\'' || i + 1 >= c.size()) return 0;
  auto lower = [&](size_t k) -> UChar32 {
    if (k >= c.size()) return 0;
    const UChar32 x = c[k].cp;
    return ignore_case && x >= 'A' && x <= 'Z' ? x + 32 : x;
  };
  const UChar32 a = lower(i + 1), b = lower(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S) then \s+ at i (c[i] is whitespace): the run, leaving its last space for the next
// word when a non-space follows.
size_t SpaceRun(const std::vector<Char>& c, size_t i) {
  size_t j = i;
  while (j < c.size() && c[j].cls == kSpace) ++j;
  if (j < c.size() && j - i >= 2) return j - 1 - i;
  return j - i;
}

// One word of the Llama 3 / Qwen2 pattern at i (in characters):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+         (Qwen2: \p{N} one digit at a time)
size_t MatchLlama3(const std::vector<Char>& c, size_t i, size_t max_digits) {
  const size_t n = c.size();
  if (size_t k = Contraction(c, i, true)) return k;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  {
    size_t j = i;
    if (c[j].cls != kLetter && c[j].cls != kNumber && !IsCrLf(c[j]) && j + 1 < n && c[j + 1].cls == kLetter) ++j;
    if (c[j].cls == kLetter) {
      while (j < n && c[j].cls == kLetter) ++j;
      return j - i;
    }
  }
  if (c[i].cls == kNumber) {
    size_t j = i;
    while (j < n && j - i < max_digits && c[j].cls == kNumber) ++j;
    return j - i;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  {
    size_t j = i;
    if (c[j].cp == ' ' && j + 1 < n && c[j + 1].cls == kOther) ++j;
    if (c[j].cls == kOther) {
      while (j < n && c[j].cls == kOther) ++j;
      while (j < n && IsCrLf(c[j])) ++j;
      return j - i;
    }
  }
  // \s*[\r\n]+ : up to the last CR/LF of the whitespace run.
  size_t end = i;
  while (end < n && c[end].cls == kSpace) ++end;
  for (size_t k = end; k > i; --k) {
    if (IsCrLf(c[k - 1])) return k - i;
  }
  return SpaceRun(c, i);
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t MatchGpt2(const std::vector<Char>& c, size_t i) {
  const size_t n = c.size();
  if (size_t k = Contraction(c, i, false)) return k;
  size_t j = i;
  if (c[j].cp == ' ' && j + 1 < n && c[j + 1].cls != kSpace) ++j;
  const Cls cls = c[j].cls;
  if (cls != kSpace) {
    while (j < n && c[j].cls == cls) ++j;
    return j - i;
  }
  return SpaceRun(c, i);
}

}  // namespace

std::vector<std::string_view> PreTokenize(PreTokenizer kind, std::string_view text) {
  const std::vector<Char> c = Decode(text);
  std::vector<std::string_view> words;
  for (size_t i = 0; i < c.size();) {
    size_t len = kind == PreTokenizer::kGpt2 ? MatchGpt2(c, i) : MatchLlama3(c, i, kind == PreTokenizer::kQwen2 ? 1 : 3);
    if (len == 0) len = 1;  // cannot happen: every class is covered; never loop forever
    const size_t b = c[i].begin, e = c[i + len - 1].end;
    words.push_back(text.substr(b, e - b));
    i += len;
  }
  return words;
}

namespace {

struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::unordered_map<UChar32, uint8_t> to_byte;
  ByteMap() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const UChar32 cp = printable ? b : 256 + extra++;
      uint8_t buf[4];
      int32_t len = 0;
      U8_APPEND_UNSAFE(buf, len, cp);
      to_unicode[b] = std::string(reinterpret_cast<char*>(buf), len);
      to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& Map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::string& ByteToUnicode(uint8_t b) { return Map().to_unicode[b]; }

bool UnicodeToBytes(std::string_view text, std::string* bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U8_NEXT(p, i, n, c);
    auto it = Map().to_byte.find(c);
    if (c < 0 || it == Map().to_byte.end()) return false;
    bytes->push_back(static_cast<char>(it->second));
  }
  return true;
}

}  // namespace inferloop::llm
