// Text <-> token ids for a GGUF model, from the file's tokenizer.ggml.* metadata.
//
// Supported vocabs: "llama" (SentencePiece-style: the text gets a leading space, spaces become
// U+2581, then adjacent pieces are merged greedily by the highest vocab score, with byte
// fallback to <0xXX> tokens) and "gpt2" (byte-level BPE: the text is split into words by the
// file's pre-tokenizer (tokenizer.ggml.pre: GPT-2, Llama 3 or Qwen2 rules), each word's bytes
// become GPT-2's printable characters, then merged by tokenizer.ggml.merges rank). Special tokens (control and user-defined) written in the text are
// recognized as single tokens when `parse_special` is set (user-defined ones always).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"
#include "llm/gguf_file.h"

namespace inferloop::llm {

using TokenId = int32_t;

// tokenizer.ggml.token_type values.
enum class TokenKind : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

class Tokenizer {
 public:
  // Reads the vocab (copied out of the file, so the Tokenizer outlives it). Unimplemented for
  // vocab types other than "llama" (naming the type); InvalidArgument for inconsistent arrays or
  // out-of-range special token ids.
  static Result<Tokenizer> FromGguf(const GgufFile& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of `text` (UTF-8; invalid bytes go through byte fallback). With `add_bos` and a
  // vocab that adds BOS (tokenizer.ggml.add_bos_token, default true), BOS comes first.
  std::vector<TokenId> Encode(std::string_view text, bool add_bos, bool parse_special = false) const;

  // The bytes token `id` stands for when generated text is shown: U+2581 as a space, byte
  // tokens as their byte, control tokens as "" (their text with `render_special`). A piece may
  // be part of a UTF-8 character (byte tokens); concatenate pieces before displaying.
  std::string Piece(TokenId id, bool render_special = false) const;
  // Concatenated pieces.
  std::string Decode(const std::vector<TokenId>& ids, bool render_special = false) const;
  // The text a whole sequence of ids stands for (a prompt given as ids, echoed): Decode without
  // the one space that encoding with the vocab's space prefix (SentencePiece) put before the
  // first word, as llama.cpp's llama_detokenize and Hugging Face's decode (special tokens
  // skipped) give it. Control tokens are skipped.
  std::string DecodeText(const std::vector<TokenId>& ids) const;

  int32_t vocab_size() const;
  TokenId bos() const;   // -1 when the vocab has none
  TokenId eos() const;   // -1 when the vocab has none
  // True for tokens that end generation (EOS, EOT and other end-of-generation control tokens).
  bool IsEndOfGeneration(TokenId id) const;
  std::string_view Text(TokenId id) const;  // the raw vocab entry
  TokenKind Kind(TokenId id) const;

  struct Vocab;  // implementation detail (tokenizer.cc)

 private:
  explicit Tokenizer(std::unique_ptr<Vocab> v);
  std::unique_ptr<Vocab> v_;
};

}  // namespace inferloop::llm
