// Fuzzes the prefix cache's block-file decoder (src/llm/kv_block_file.h): arbitrary bytes must
// give a record or a reason, never a crash, a read outside the input or a huge allocation. The
// expected shape is taken from the input's own header fields (bounded) so that well-formed
// headers reach the checksum; a decoded record must lie inside the input and encode back to the
// same bytes. Seeds: tests/fuzz/corpus_kv_block/ (kept current by tests/unit/llm/kv_disk_tier_test.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "llm/kv_block_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::llm;
  const std::span<const uint8_t> bytes(data, size);
  uint32_t tokens = 4;
  uint64_t kv = 256;
  if (size >= kKvBlockFileHeaderBytes) {
    std::memcpy(&tokens, data + 40, 4);
    std::memcpy(&kv, data + 48, 8);
  }
  const int block_tokens = tokens >= 1 && tokens <= 1024 ? static_cast<int>(tokens) : 4;
  const size_t kv_bytes = kv >= 1 && kv <= (uint64_t{1} << 20) ? static_cast<size_t>(kv) : 256;
  const KvModelIdentity id{0x0123456789abcdefull, 0xfedcba9876543210ull};
  const KvBlockDecode d = DecodeKvBlockFile(bytes, id, block_tokens, kv_bytes);
  if (d.problem != KvBlockFileProblem::kNone) {
    if (d.reason.empty()) std::abort();
    return 0;
  }
  if (d.record.tokens.size() != static_cast<size_t>(block_tokens) || d.record.kv.size() != kv_bytes ||
      d.record.kv.data() < data || d.record.kv.data() + d.record.kv.size() > data + size)
    std::abort();
  const auto again = EncodeKvBlockFile(id, d.record.tokens, d.record.chain, d.record.parent, d.record.kv);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  return 0;
}
