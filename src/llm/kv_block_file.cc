#include "llm/kv_block_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>

namespace inferloop::llm {
namespace {

constexpr char kMagic[4] = {'I', 'L', 'K', 'V'};
constexpr size_t kChecksumAt = 56;

void Put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void Put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t Get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string Hex(uint64_t v, int digits) {
  static const char* d = "0123456789abcdef";
  std::string s(digits, '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[i] = d[v & 15];
  return s;
}

// XXH3-64 of the header before the checksum and everything after the header.
uint64_t Checksum(std::span<const uint8_t> file) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, file.data(), kChecksumAt);
  XXH3_64bits_update(st, file.data() + kKvBlockFileHeaderBytes, file.size() - kKvBlockFileHeaderBytes);
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

void HashShape(XXH3_state_t* st, const KvCacheShape& shape) {
  const int32_t fields[] = {static_cast<int32_t>(shape.type), shape.n_layer, shape.kv_dim,
                            shape.head_dim == 0 ? shape.kv_dim : shape.head_dim, shape.block_tokens};
  XXH3_128bits_update(st, fields, sizeof(fields));
}

KvModelIdentity Digest(XXH3_state_t* st) {
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return {h.high64, h.low64};
}

KvBlockDecode Problem(KvBlockFileProblem p, std::string reason) {
  KvBlockDecode d;
  d.problem = p;
  d.reason = std::move(reason);
  return d;
}

}  // namespace

std::string ToHex(const KvModelIdentity& id) { return Hex(id.hi, 16) + Hex(id.lo, 16); }
std::string ChainHashHex(uint64_t chain) { return Hex(chain, 16); }

KvModelIdentity KvModelIdentityOf(std::span<const uint8_t> model_bytes, const KvCacheShape& shape) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, model_bytes.data(), model_bytes.size());
  HashShape(st, shape);
  return Digest(st);
}

Result<KvModelIdentity> KvModelIdentityOfFile(const std::string& path, const KvCacheShape& shape) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open '" + path + "' to identify the model: " + std::strerror(errno));
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  std::vector<uint8_t> buf(size_t{4} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      XXH3_freeState(st);
      return Status::NotFound("cannot read '" + path + "' to identify the model: " + std::strerror(errno));
    }
    if (n == 0) break;
    XXH3_128bits_update(st, buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  HashShape(st, shape);
  return Digest(st);
}

size_t KvBlockFileBytes(int block_tokens, size_t kv_bytes) {
  return kKvBlockFileHeaderBytes + static_cast<size_t>(block_tokens) * sizeof(int32_t) + kv_bytes;
}

std::vector<uint8_t> EncodeKvBlockFile(const KvModelIdentity& id, std::span<const int32_t> tokens, uint64_t chain,
                                       uint64_t parent, std::span<const uint8_t> kv) {
  std::vector<uint8_t> f(KvBlockFileBytes(static_cast<int>(tokens.size()), kv.size()));
  uint8_t* p = f.data();
  std::memcpy(p, kMagic, 4);
  Put32(p + 4, kKvBlockFileVersion);
  Put64(p + 8, id.hi);
  Put64(p + 16, id.lo);
  Put64(p + 24, chain);
  Put64(p + 32, parent);
  Put32(p + 40, static_cast<uint32_t>(tokens.size()));
  Put32(p + 44, 0);
  Put64(p + 48, kv.size());
  if (!tokens.empty()) std::memcpy(p + kKvBlockFileHeaderBytes, tokens.data(), tokens.size_bytes());
  if (!kv.empty()) std::memcpy(p + kKvBlockFileHeaderBytes + tokens.size_bytes(), kv.data(), kv.size());
  Put64(p + kChecksumAt, Checksum(f));
  return f;
}

KvBlockDecode DecodeKvBlockFile(std::span<const uint8_t> bytes, const KvModelIdentity& id, int block_tokens,
                                size_t kv_bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    return Problem(KvBlockFileProblem::kForeign, "not a KV block file (no ILKV magic)");
  const uint32_t version = Get32(bytes.data() + 4);
  if (version != kKvBlockFileVersion)
    return Problem(KvBlockFileProblem::kForeign, "format version " + std::to_string(version) + ", this server reads " +
                                                     std::to_string(kKvBlockFileVersion));
  if (bytes.size() < kKvBlockFileHeaderBytes)
    return Problem(KvBlockFileProblem::kDamaged, "truncated header (" + std::to_string(bytes.size()) + " bytes)");
  const uint8_t* p = bytes.data();
  if (KvModelIdentity{Get64(p + 8), Get64(p + 16)} != id)
    return Problem(KvBlockFileProblem::kForeign, "written for another model or KV cache layout");
  const uint32_t tokens = Get32(p + 40);
  const uint64_t kv = Get64(p + 48);
  if (tokens != static_cast<uint32_t>(block_tokens) || kv != kv_bytes || Get32(p + 44) != 0)
    return Problem(KvBlockFileProblem::kDamaged, "block of " + std::to_string(tokens) + " tokens and " +
                                                     std::to_string(kv) + " bytes, expected " +
                                                     std::to_string(block_tokens) + " and " + std::to_string(kv_bytes));
  const size_t want = KvBlockFileBytes(block_tokens, kv_bytes);
  if (bytes.size() != want)
    return Problem(KvBlockFileProblem::kDamaged,
                   std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want) + " (truncated or padded)");
  if (Checksum(bytes) != Get64(p + kChecksumAt)) return Problem(KvBlockFileProblem::kDamaged, "checksum mismatch");
  KvBlockDecode d;
  d.record.chain = Get64(p + 24);
  d.record.parent = Get64(p + 32);
  d.record.tokens.resize(tokens);
  std::memcpy(d.record.tokens.data(), p + kKvBlockFileHeaderBytes, tokens * sizeof(int32_t));
  d.record.kv = bytes.subspan(kKvBlockFileHeaderBytes + tokens * sizeof(int32_t), kv_bytes);
  return d;
}

}  // namespace inferloop::llm
