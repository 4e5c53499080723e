#include "llm/text_stream.h"

#include <algorithm>

namespace inferloop::llm {
namespace {

size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // invalid lead byte
}

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

size_t IncompleteUtf8Tail(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if (IsContinuation(c)) continue;
    const size_t len = SequenceLength(c);
    return len > back ? back : 0;
  }
  return 0;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = SequenceLength(c);
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = IsContinuation(static_cast<unsigned char>(s[i + k]));
    if (ok && len == 3) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    } else if (ok && len == 4) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

std::string TextStream::Push(std::string_view piece) {
  if (stopped_) return "";
  held_.append(piece);
  // A stop string anywhere in the held text ends it there (the earliest one wins).
  size_t best = std::string::npos;
  for (const std::string& s : stop_) {
    if (s.empty()) continue;
    const size_t p = held_.find(s);
    if (p != std::string::npos && (best == std::string::npos || p < best)) {
      best = p;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = SanitizeUtf8(std::string_view(held_).substr(0, best));
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string, and an unfinished
  // UTF-8 character.
  size_t keep = 0;
  for (const std::string& s : stop_) {
    for (size_t k = std::min(s.size() - (s.empty() ? 0 : 1), held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  keep = std::max(keep, IncompleteUtf8Tail(held_));
  std::string out = SanitizeUtf8(std::string_view(held_).substr(0, held_.size() - keep));
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string TextStream::Finish() {
  if (stopped_) return "";
  std::string out = SanitizeUtf8(held_);
  held_.clear();
  return out;
}

}  // namespace inferloop::llm
