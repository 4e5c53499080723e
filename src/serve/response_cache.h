// ResponseCache: caches the outputs of inference requests by a key over everything that decides
// the result (issue 21; docs/SERVING.md "Response cache"). Two tiers:
//   memory: LRU by a byte budget; entries are immutable and shared by readers;
//   disk (optional, response_cache_disk.h): one checksummed file per entry in a directory, LRU
//     by a byte budget, written behind on the cache's own writer thread; a restarted server
//     finds the entries of the previous one.
// The cache never decides whether a model may be cached: its caller (CachedModelVersion) does.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/infer_request.h"
#include "serve/response_cache_lru.h"

namespace inferloop::serve {

class EventLog;
class ResponseCacheDisk;

struct ResponseCacheKey {
  uint64_t hi = 0, lo = 0;
  bool operator==(const ResponseCacheKey&) const = default;
};
struct ResponseCacheKeyHash {
  size_t operator()(const ResponseCacheKey& k) const { return static_cast<size_t>(k.lo ^ (k.hi * 0x9e3779b97f4a7c15ull)); }
};
// Hex of the 128 bits (32 lower-case chars, hi first): the disk tier's file name stem.
std::string ToHex(const ResponseCacheKey& k);

// Request parameters that do not change the result, left out of the key: "priority" and
// "timeout" (scheduling), "binary_data_output" (how outputs are encoded on the wire). The
// per-tensor "binary_data_size" (inputs) and "binary_data" (requested outputs) are left out too.
inline constexpr const char* kResponseCacheIgnoredParameters[] = {"priority", "timeout", kBinaryDataOutputParam};

// The key of a request to a model version: XXH3-128 over a canonical encoding of
//   model name, version number, `fingerprint` (identity of the loaded version's files),
//   every input in name order: name, dtype, shape, the tensor's bytes (BYTES: each string's
//     length + bytes), its parameters except "binary_data_size",
//   requested outputs sorted by name (none: all), each with its parameters except "binary_data",
//   request parameters except those in kResponseCacheIgnoredParameters.
// Each field is length-prefixed, so that no two different requests encode alike. The request's
// model_name, model_version and id are not part of it (the arguments name the version served).
ResponseCacheKey MakeResponseCacheKey(const std::string& model, int64_t version,
                                      const std::string& fingerprint, const InferRequest& request);

struct ResponseCacheOptions {
  int64_t memory_bytes = int64_t{256} << 20;  // memory tier budget; 0: no memory tier
  std::string disk_dir;                        // "": no disk tier
  int64_t disk_bytes = int64_t{1} << 30;       // disk tier budget (file sizes); > 0 with a dir
  // Where the disk tier logs its first write failure (and each backoff). Null: stderr.
  EventLog* log = nullptr;
};

struct CachedResponse {              // immutable once inserted; shared by readers
  std::vector<InferOutput> outputs;  // name, tensor, parameters as the model answered
  int64_t bytes = 0;                 // accounted size (tensor bytes + names + overhead)
};
// The accounted size of `outputs` in the memory tier: tensor bytes (BYTES: each string's length
// plus 32), names and parameters, plus 64 bytes per output and 64 per entry.
int64_t CachedResponseBytes(const std::vector<InferOutput>& outputs);

struct ResponseCacheTierStats {
  int64_t hits = 0, inserts = 0, evictions = 0, bytes = 0, entries = 0, budget_bytes = 0;
};
struct ResponseCacheStats {
  int64_t lookups = 0, hits = 0, misses = 0;
  int64_t lookup_ns = 0, insert_ns = 0;  // cumulative
  ResponseCacheTierStats memory, disk;
  int64_t disk_corrupt_dropped = 0;  // entries failing their check on read (deleted)
  int64_t disk_write_failures = 0;   // ENOSPC, EIO...: counted, logged once, never surfaced
  int64_t disk_skipped_writes = 0;   // writes dropped (queue full / disk tier backing off)
  int64_t too_large = 0;             // responses over a tier's budget (not stored; once per tier)
};

class ResponseCache {
 public:
  // Creates the directory (and checks it is writable) when disk_dir is set, and indexes the
  // entries already there (a restarted server finds them; unreadable or foreign files ignored,
  // never deleted unless they are ours and damaged). InvalidArgument for bad options (negative
  // sizes, a disk_dir with disk_bytes 0), an error naming the directory when it cannot be used.
  static Result<std::unique_ptr<ResponseCache>> Create(ResponseCacheOptions options);
  ~ResponseCache();  // flushes pending disk writes
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  // Memory tier first, then disk (a disk hit is checked: magic, format version, key, lengths,
  // checksum; a bad entry is deleted, counted, and reported as a miss; a good one is promoted
  // into memory, which does not count as a memory insert). Null: miss. Thread-safe; no lock is
  // held while a file is read, so a lookup never waits for another's disk read.
  std::shared_ptr<const CachedResponse> Lookup(const ResponseCacheKey& key);
  // Stores a response (memory tier; the disk tier is written behind, on the cache's own writer
  // thread, bounded queue). Responses over a tier's budget are not stored in it. Thread-safe.
  void Insert(const ResponseCacheKey& key, std::vector<InferOutput> outputs);
  ResponseCacheStats Stats() const;
  const ResponseCacheOptions& options() const { return options_; }
  // For tests: waits until queued disk writes are done.
  void FlushForTesting();

 private:
  explicit ResponseCache(ResponseCacheOptions options);
  // Puts `entry` in the memory tier (evicting LRU entries) when it fits the budget.
  void InsertMemory(const ResponseCacheKey& key, std::shared_ptr<const CachedResponse> entry, bool count_insert);

  ResponseCacheOptions options_;
  std::unique_ptr<ResponseCacheDisk> disk_;  // null: no disk tier
  mutable std::mutex mu_;                    // guards everything below
  using MemoryTier = ByteLru<ResponseCacheKey, std::shared_ptr<const CachedResponse>, ResponseCacheKeyHash>;
  MemoryTier memory_;
  ResponseCacheStats stats_;                 // memory-tier and lookup counters (disk: disk_)
};

}  // namespace inferloop::serve
