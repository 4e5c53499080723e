// Turns a generated sequence's token pieces into text that is safe to show as it comes: whole
// UTF-8 characters only, and never any part of a stop string. Text that could still turn out
// to be the beginning of a stop string is held back until it cannot. So the concatenation of
// everything emitted is the same whether the text is streamed or taken at the end.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inferloop::llm {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop) : stop_(std::move(stop)) {}

  // Adds a token's bytes; returns the text that became final (possibly empty). Once a stop
  // string appears, returns the text before it and stopped() turns true (later pushes return "").
  std::string Push(std::string_view piece);
  // End of generation: returns everything still held (invalid UTF-8 bytes become U+FFFD).
  std::string Finish();

  bool stopped() const { return stopped_; }
  // The stop string that ended the text ("" if none).
  const std::string& matched_stop() const { return matched_; }

 private:
  std::vector<std::string> stop_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

// `s` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view s);
// Bytes at the end of `s` that start an incomplete (but so far valid) UTF-8 character.
size_t IncompleteUtf8Tail(std::string_view s);

}  // namespace inferloop::llm
