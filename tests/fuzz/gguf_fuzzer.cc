// Fuzzes GGUF parsing from memory (src/llm/gguf_file.h): arbitrary bytes must give a GgufFile or a
// Status, never a crash, hang, leak or huge allocation; for a file that parses, every getter
// and dequantizing every tensor's first rows must stay inside the input, and reading the
// hyperparameters, the chat format and the tokenizer (then tokenizing and detokenizing a text
// with special tokens) must give a result or a Status.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "llm/chat_template.h"
#include "llm/ggml_types.h"
#include "llm/gguf_file.h"
#include "llm/llama_hparams.h"
#include "llm/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::llm;
  auto file = GgufFile::Parse(std::span<const uint8_t>(data, size));
  if (!file.ok()) return 0;
  for (const auto& [key, value] : file->metadata()) {
    (void)file->GetUint32(key);
    (void)file->GetString(key);
    (void)file->GetUnsigned(key);
    (void)file->GetStringArray(key);
    (void)file->GetFloat32Array(key);
    double d;
    if (value.count) (void)value.ElementAsDouble(value.count - 1, &d);
  }
  for (const GgufTensorInfo& t : file->tensors()) {
    if (t.dims.empty() || t.dims[0] == 0 || t.dims[0] > 4096) continue;
    auto row_bytes = GgmlRowBytes(static_cast<uint32_t>(t.type), t.dims[0]);
    if (!row_bytes.ok() || *row_bytes > t.data.size()) continue;
    std::vector<float> row(t.dims[0]);
    (void)DequantizeRow(t.type, t.data.first(*row_bytes), row);
  }
  (void)ReadLlamaHparams(*file);
  auto tok = Tokenizer::FromGguf(*file);
  if (tok.ok()) {
    (void)ChatTemplate::FromGguf(*file, *tok);
    const auto ids = tok->Encode("Hello w\xC3\xB6rld <s></s><|eot_id|> 123\n\t  x\xFF", true, true);
    (void)tok->Decode(ids, true);
    for (int32_t id = -1; id < 8; ++id) (void)tok->Piece(id);
  }
  return 0;
}
