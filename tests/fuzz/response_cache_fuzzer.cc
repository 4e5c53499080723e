// Fuzzes the response cache's entry file decoder (src/serve/response_cache_disk.h): arbitrary bytes
// must give outputs or a Status, never a crash, hang, leak or huge allocation. Each input is
// decoded twice: as it is (the header's checks), and with its header's length and checksum
// rewritten to fit the rest (so that mutated payloads get past the checksum to the payload's
// parser). The key checked is the header's own. A file that decodes must encode back to the
// same bytes (the format has one encoding per content).
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "serve/response_cache_disk.h"

namespace {

using inferloop::serve::ResponseCacheKey;

void DecodeAndCheck(std::span<const uint8_t> file) {
  ResponseCacheKey key;
  if (file.size() >= 24) {
    std::memcpy(&key.hi, file.data() + 8, 8);  // little-endian hosts only, as the fuzz builds are
    std::memcpy(&key.lo, file.data() + 16, 8);
  }
  auto outputs = inferloop::serve::DecodeCachedResponse(file, key);
  if (!outputs.ok()) return;
  const auto again = inferloop::serve::EncodeCachedResponse(key, *outputs);
  if (again.size() != file.size() || std::memcmp(again.data(), file.data(), file.size()) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  DecodeAndCheck(std::span<const uint8_t>(data, size));
  constexpr size_t kHeader = inferloop::serve::kResponseCacheHeaderBytes;
  if (size < kHeader) return 0;
  std::vector<uint8_t> sealed(data, data + size);
  const uint64_t len = size - kHeader, sum = XXH3_64bits(sealed.data() + kHeader, len);
  std::memcpy(sealed.data() + 24, &len, 8);
  std::memcpy(sealed.data() + 32, &sum, 8);
  DecodeAndCheck(sealed);
  return 0;
}
