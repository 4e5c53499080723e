// The files of the prefix cache's disk tier: one KV block per file, tied to the model it was
// computed with.
//
// A model's identity is XXH3-128 over the model file's bytes and the KV cache shape (type,
// layers, kv dim, head dim, block tokens): blocks are only ever read back into the same weights
// and the same layout. Files live in <dir>/<identity hex>/<chain hash hex>.ilkv.
//
// Format (version 2, little-endian; version 1 held the KV bytes with every head's rows
// interleaved, before KvBlockPool's blocks became head-major: such files are foreign now, left
// alone and never read into the new layout):
//   0  "ILKV"                       magic
//   4  u32 format version           (kKvBlockFileVersion)
//   8  16 bytes model identity      (hi, lo)
//   24 u64 chain hash               (PrefixCache::ChainHash of the prefix through this block)
//   32 u64 parent chain hash        (0 for a first block)
//   40 u32 block tokens
//   44 u32 reserved (0)
//   48 u64 KV bytes
//   56 u64 XXH3-64 of bytes [0, 56) and everything after byte 64
//   64 block tokens x i32           the block's token ids
//   .. KV bytes                     the pool's block, as KvBlockPool stores it
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "llm/kv_block_pool.h"

namespace inferloop::llm {

inline constexpr uint32_t kKvBlockFileVersion = 2;
inline constexpr size_t kKvBlockFileHeaderBytes = 64;
inline constexpr const char* kKvBlockFileExtension = ".ilkv";

struct KvModelIdentity {
  uint64_t hi = 0, lo = 0;
  bool operator==(const KvModelIdentity&) const = default;
};
// 32 lower-case hex digits: the folder name of the model's blocks.
std::string ToHex(const KvModelIdentity& id);
// 16 lower-case hex digits.
std::string ChainHashHex(uint64_t chain);

// The identity of `model_bytes` (e.g. a GGUF file's bytes) with KV cache `shape`.
KvModelIdentity KvModelIdentityOf(std::span<const uint8_t> model_bytes, const KvCacheShape& shape);
// The same, reading the file at `path` in chunks (so mapped weights are not paged in);
// NotFound naming the path when it cannot be read.
Result<KvModelIdentity> KvModelIdentityOfFile(const std::string& path, const KvCacheShape& shape);

// One block as decoded from a file.
struct KvBlockRecord {
  uint64_t chain = 0;
  uint64_t parent = 0;
  std::vector<int32_t> tokens;    // block_tokens ids
  std::span<const uint8_t> kv;    // the pool's block bytes (a view into the decoded bytes)
};

// Bytes of a block file for `block_tokens` tokens and `kv_bytes` bytes of keys and values.
size_t KvBlockFileBytes(int block_tokens, size_t kv_bytes);

// The file's bytes for one block.
std::vector<uint8_t> EncodeKvBlockFile(const KvModelIdentity& id, std::span<const int32_t> tokens, uint64_t chain,
                                       uint64_t parent, std::span<const uint8_t> kv);

// Why a file was not accepted.
enum class KvBlockFileProblem {
  kNone,
  kForeign,   // not a block file of this format version and model: left alone
  kDamaged,   // one of ours (magic, version, identity) but truncated, inconsistent or failing its checksum
};

struct KvBlockDecode {
  KvBlockFileProblem problem = KvBlockFileProblem::kNone;
  std::string reason;     // set when problem != kNone
  KvBlockRecord record;   // valid when problem == kNone
};

// Checks and decodes a file's bytes: magic, version and identity (kForeign when they differ),
// then lengths against `block_tokens` and `kv_bytes` and the checksum (kDamaged). Never reads
// past `bytes`; allocates only after the lengths are checked.
KvBlockDecode DecodeKvBlockFile(std::span<const uint8_t> bytes, const KvModelIdentity& id, int block_tokens,
                                size_t kv_bytes);

}  // namespace inferloop::llm
