// The response cache's disk tier (response_cache.h): one file per entry, `<dir>/<hex key>.ilrc`.
//
// File format (all integers little-endian):
//   header (40 bytes): magic "ILRC", format version u32 (kResponseCacheFormatVersion), key hi u64,
//     key lo u64, payload length u64, XXH3-64 of the payload u64;
//   payload: output count u32, then per output: name (u32 length + bytes), dtype i32 (ONNX
//     numbering), rank u32, dims i64 each, parameters (u32 count, then name, type tag u8 and
//     value each, in name order), data (BYTES: u32 length + bytes per element; others: u64
//     length + the bytes).
// A file is written to `<hex>.ilrc.tmp` and renamed over its final name, so a reader sees a whole
// file or none. A file whose check fails on read (magic, version, key, lengths, checksum, the
// payload's structure) is deleted and counted as corrupt; so is one whose header fails the scan
// at Create (leftover .ilrc.tmp files are deleted uncounted). Files that are not ours (any
// other name, folders) are never touched.
//
// Index: in memory, key -> file size, least recently used first. At Create the directory's
// entries are indexed with their modification time as the last use (so after a restart the order
// is the order of writing); over the budget, the least recently used files are deleted.
// Bytes are file sizes (not file-system blocks). One server per directory.
//
// Writes happen behind, on the disk tier's own thread, from a bounded queue (256 entries,
// 64 MiB); a full queue drops the write (counted as skipped). A failing write (ENOSPC, EIO, a
// removed directory...) removes its temp file and is counted; the first is logged. After 3
// failures in a row writes stop for 10 s (skipped, counted), then one is tried again; each
// further failure doubles the pause up to 5 minutes; a success ends the backoff. Reads go on
// throughout.
//
// Why files and not an embedded store (RocksDB, LMDB): entries are write-once blobs of 1 KB to
// a few MB, read whole by key, which is what a file per entry does with no runtime dependency
// (RocksDB would add an 11 MB library to the image), no compaction (RocksDB rewrites large values
// at each compaction unless BlobDB is set up), no second copy in a write-ahead log, and an index
// rebuilt by listing one directory; a damaged entry is one file to delete, never a database to
// repair. Measured side by side in one run (bench/response_cache_rocksdb_bench.cc; Debian's
// RocksDB 7.8 with default options, as its users run it; ext4 on a virtual disk, 2 shared cores,
// page cache warm, no fsync on either side, medians of 300, two runs):
//   4 KB entry:   write files 139-140 us, rocksdb 12-17 us;  read files 13-15 us, rocksdb 2-3 us
//   600 KB entry: write files 473 us, rocksdb 1285-1437 us;  read files 198-228 us, rocksdb 134-183 us
// RocksDB wins small entries (its writes go to a memtable; its reads here come from it) and
// loses large writes. Neither matters on the request path: writes happen behind, on the tier's
// own thread, and a disk-tier read (after a memory-tier miss) of 13 us or 200 us replaces a
// model run of milliseconds. So the simpler, dependency-free store stays.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/response_cache.h"

namespace inferloop::serve {

inline constexpr char kResponseCacheFileSuffix[] = ".ilrc";
inline constexpr char kResponseCacheTempSuffix[] = ".ilrc.tmp";
inline constexpr uint32_t kResponseCacheFormatVersion = 1;
inline constexpr size_t kResponseCacheHeaderBytes = 40;

// The whole file for `outputs` stored under `key`.
std::vector<uint8_t> EncodeCachedResponse(const ResponseCacheKey& key, const std::vector<InferOutput>& outputs);
// The outputs of a whole file, checked: magic, version, that it is stored under `key`, every
// length, the checksum, known dtypes, shapes matching the data, nothing left over. Any
// failure: InvalidArgument saying what. Never reads outside `file`, never allocates more than
// the file's size asks for.
Result<std::vector<InferOutput>> DecodeCachedResponse(std::span<const uint8_t> file, const ResponseCacheKey& key);

class ResponseCacheDisk {
 public:
  struct Options {
    std::string dir;
    int64_t budget_bytes = 0;
    EventLog* log = nullptr;  // null: stderr
    size_t max_queue_entries = 256;
    int64_t max_queue_bytes = int64_t{64} << 20;
  };
  // Creates `dir` when missing, checks a file can be written there, and indexes the entries
  // already in it (damaged ones of ours deleted, over-budget ones deleted oldest first).
  static Result<std::unique_ptr<ResponseCacheDisk>> Create(Options options);
  ~ResponseCacheDisk();  // finishes the queued writes, then stops the writer thread
  ResponseCacheDisk(const ResponseCacheDisk&) = delete;
  ResponseCacheDisk& operator=(const ResponseCacheDisk&) = delete;

  // The entry's outputs when its file is indexed and passes its check; nullopt otherwise (a
  // damaged file is deleted and counted). No lock is held while the file is read.
  std::optional<std::vector<InferOutput>> Read(const ResponseCacheKey& key);
  // Queues `entry` to be written (nothing when already on disk, queue full, or backing off).
  void Enqueue(const ResponseCacheKey& key, std::shared_ptr<const CachedResponse> entry);
  // Waits until the queue is empty and no write is in progress.
  void Flush();
  // Fills stats->disk and the disk_* and too_large counters (too_large is added to).
  void AddStats(ResponseCacheStats* stats) const;

 private:
  struct State;
  explicit ResponseCacheDisk(Options options);
  void WriterLoop();
  void WriteOne(const ResponseCacheKey& key, const CachedResponse& entry);
  std::string PathOf(const ResponseCacheKey& key, const char* suffix) const;

  Options options_;
  std::unique_ptr<State> state_;
};

}  // namespace inferloop::serve
