// Byte-level BPE: the pre-tokenizers against their regular expressions (expected splits worked
// out by hand from the patterns), GPT-2's byte map, and the tokenizer on the committed 'gpt2'
// vocab fixtures (tests/data/llm/bpe_*_vocab.gguf). llama.cpp's token ids on the same files are
// compared in tests/e2e/test_llama_cpp.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llm/bpe_pretokenizer.h"
#include "llm/gguf_file.h"
#include "llm/tokenizer.h"

namespace inferloop::llm {
namespace {

std::vector<std::string> Words(PreTokenizer k, const std::string& s) {
  std::vector<std::string> out;
  for (auto w : PreTokenize(k, s)) out.emplace_back(w);
  return out;
}

using V = std::vector<std::string>;

TEST(BpePreTokenizer, Llama3Pattern) {
  EXPECT_EQ(Words(PreTokenizer::kLlama3, "Hello world, I'm 12345!\n\n  x"),
            (V{"Hello", " world", ",", " I", "'m", " ", "123", "45", "!\n\n", " ", " x"}));
  // Case-insensitive contractions; a non-letter, non-digit char may lead a letter run.
  EXPECT_EQ(Words(PreTokenizer::kLlama3, "WE'LL go-now"), (V{"WE", "'LL", " go", "-now"}));
  // \s*[\r\n]+ keeps spaces before a newline with it; trailing spaces at the end stay together.
  EXPECT_EQ(Words(PreTokenizer::kLlama3, "a  \n b   "), (V{"a", "  \n", " b", "   "}));
  // Unicode letters and numbers.
  EXPECT_EQ(Words(PreTokenizer::kLlama3, "Caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xD9\xA3\xD9\xA4"),
            (V{"Caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC", " ", "\xD9\xA3\xD9\xA4"}));
  EXPECT_EQ(Words(PreTokenizer::kLlama3, " \xF0\x9F\x98\x80!"), (V{" \xF0\x9F\x98\x80!"}));
}

TEST(BpePreTokenizer, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(Words(PreTokenizer::kQwen2, "x 2024"), (V{"x", " ", "2", "0", "2", "4"}));
}

TEST(BpePreTokenizer, Gpt2Pattern) {
  // Contractions are case-sensitive in GPT-2's pattern; a space leads letters, digits or symbols.
  EXPECT_EQ(Words(PreTokenizer::kGpt2, "I'M here 42 !!  ok"), (V{"I", "'", "M", " here", " 42", " !!", " ", " ok"}));
}

TEST(BpePreTokenizer, InvalidUtf8IsKeptByteForByte) {
  const std::string s = "a\xFF\xFE b";
  std::string joined;
  for (auto w : PreTokenize(PreTokenizer::kLlama3, s)) joined += w;
  EXPECT_EQ(joined, s);
}

TEST(BpePreTokenizer, ByteMapRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    std::string back;
    ASSERT_TRUE(UnicodeToBytes(ByteToUnicode(static_cast<uint8_t>(b)), &back));
    ASSERT_EQ(back, std::string(1, static_cast<char>(b)));
  }
  EXPECT_EQ(ByteToUnicode(' '), "\xC4\xA0");  // GPT-2's "Ġ"
  EXPECT_EQ(ByteToUnicode('A'), "A");
  std::string bytes;
  EXPECT_FALSE(UnicodeToBytes("\xE6\x97\xA5", &bytes));  // not one of the 256 characters
}

class BpeVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeVocab, RoundTripsAndSpecials) {
  const std::string path = std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/llm/" + GetParam();
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto t = Tokenizer::FromGguf(*f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (const std::string s : {"Once upon a time, there was a little girl named Lily.", "  leading and trailing  ",
                              "tabs\tand\nnew\r\nlines", "Caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80",
                              "x = [i ** 2 for i in range(10)]", "2024-11-30 12:34:56", "I'm sure you're right"}) {
    const auto ids = t->Encode(s, /*add_bos=*/false);
    EXPECT_EQ(t->Decode(ids), s);  // byte-level BPE adds no space
    EXPECT_EQ(t->DecodeText(ids), s);  // nor removes one
    for (int32_t id : ids) EXPECT_NE(t->Kind(id), TokenKind::kControl) << s;
  }
  // Merges apply: a frequent word of the training text is fewer tokens than bytes.
  EXPECT_LT(t->Encode(" little", false).size(), std::string(" little").size());
  // Special tokens in text only with parse_special.
  const auto eot = t->Encode("<|eot_id|>", false, true);
  ASSERT_EQ(eot.size(), 1u);
  EXPECT_EQ(t->Kind(eot[0]), TokenKind::kControl);
  EXPECT_TRUE(t->IsEndOfGeneration(eot[0]));
  EXPECT_GT(t->Encode("<|eot_id|>", false, false).size(), 1u);
  EXPECT_EQ(t->Piece(eot[0]), "");
  EXPECT_EQ(t->Piece(eot[0], true), "<|eot_id|>");
}

TEST_P(BpeVocab, BosFollowsTheFile) {
  const std::string path = std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/llm/" + GetParam();
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok());
  auto t = Tokenizer::FromGguf(*f);
  ASSERT_TRUE(t.ok());
  const auto ids = t->Encode("hi", true);
  const bool llama3 = std::string(GetParam()).find("llama3") != std::string::npos;
  EXPECT_EQ(!ids.empty() && ids[0] == t->bos(), llama3);  // qwen2 files say add_bos_token = false
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BpeVocab, ::testing::Values("bpe_llama3_vocab.gguf", "bpe_qwen2_vocab.gguf"));

}  // namespace
}  // namespace inferloop::llm
