// GPT-2-style byte-level BPE support for the tokenizer: the pre-tokenizers that split text into
// words before merging (the regular expressions of GPT-2, Llama 3 and Qwen2, implemented as
// matchers over Unicode character classes from ICU), and GPT-2's byte <-> character mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::llm {

enum class PreTokenizer { kGpt2, kLlama3, kQwen2 };

// The pre-tokenizer for tokenizer.ggml.pre ("llama-bpe", "llama3", "qwen2", "gpt-2", "default",
// ...). Unimplemented naming the value for others.
Result<PreTokenizer> PreTokenizerFor(std::string_view pre);

// Splits UTF-8 `text` into words (byte ranges, in order, covering the text). Invalid UTF-8 bytes
// are single characters of class "other".
std::vector<std::string_view> PreTokenize(PreTokenizer kind, std::string_view text);

// GPT-2's reversible byte -> printable character map (as UTF-8), and back.
const std::string& ByteToUnicode(uint8_t b);
// Bytes of a byte-level token text; false when a character is not one of the 256.
bool UnicodeToBytes(std::string_view text, std::string* bytes);

}  // namespace inferloop::llm
