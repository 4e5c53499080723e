// The prefix cache's disk tier: KV blocks evicted from memory, one file per block
// (kv_block_file.h) in <dir>/<model identity hex>/, kept within a byte budget, least recently
// used files deleted first.
//
// Writes are behind: Write copies the block's bytes into a bounded queue (so the engine's
// scheduler thread never waits on the disk) and the tier's own writer thread writes each to a
// temporary name and renames it (a file is whole or absent). A queue over its bound drops the
// write (counted), unless the caller asked to wait (the flush at shutdown). A block queued but not
// yet written is served from the queue. A write failure (ENOSPC, EIO...) removes the partial
// file and is counted; after 3 failures in a row writes pause for 10 s (dropped, counted).
//
// Open indexes the files already there (a restarted server finds its blocks; last use = the
// file's modification time, which a read refreshes), deletes leftover temporaries and damaged
// files of this format (wrong length), leaves foreign files alone, and measures the read speed
// on up to 8 MiB of existing blocks (or a probe file it writes and deletes). Each read from a
// file refines the speed (moving average). Read checks the whole file (kv_block_file.h): a
// damaged file is deleted and counted, a foreign one is a miss.
//
// What a kill -9 loses: the blocks still only in memory (cached but never evicted) and the
// writes queued; files already renamed are complete. Files are not fsync'ed: a power loss may
// leave empty or damaged files, which the checks drop.
//
// Thread-safe (the engine's scheduler thread and the writer thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "inferloop/status.h"
#include "llm/kv_block_file.h"

namespace inferloop::llm {

struct KvDiskTierOptions {
  std::string dir;                                  // root: blocks go to dir/<identity hex>/
  int64_t budget_bytes = int64_t{4096} << 20;       // bytes of block files kept at most
  int64_t max_pending_bytes = int64_t{64} << 20;    // copies waiting for the writer at most
};

struct KvDiskTierStats {
  int64_t bytes_read = 0;       // from files (totals since open)
  int64_t bytes_written = 0;
  int64_t blocks_read = 0;      // from files or the queue
  int64_t blocks_written = 0;
  int64_t bytes = 0;            // block files now indexed
  int64_t files = 0;
  int64_t evictions = 0;        // files deleted for the budget
  int64_t corrupt = 0;          // damaged files found (deleted)
  int64_t write_failures = 0;
  int64_t skipped_writes = 0;   // queue full, writes paused, or a block over the budget
  double read_bytes_per_second = 0;
};

class KvDiskTier {
 public:
  // Creates dir/<identity hex>/ (and checks it is writable), indexes it and starts the writer.
  // InvalidArgument for a non-positive budget; an error naming the folder when it cannot be used.
  static Result<std::unique_ptr<KvDiskTier>> Open(const KvDiskTierOptions& options, const KvModelIdentity& id,
                                                  int block_tokens, size_t kv_bytes);
  // Writes everything queued, then stops the writer.
  ~KvDiskTier();
  KvDiskTier(const KvDiskTier&) = delete;
  KvDiskTier& operator=(const KvDiskTier&) = delete;

  // Whether block `chain` is on disk or queued.
  bool Contains(uint64_t chain) const;
  // Queues a copy of one block (`tokens`: block_tokens ids, `kv`: kv_bytes bytes). With `wait`,
  // blocks while the queue is full; without, drops the write then (counted).
  void Write(uint64_t chain, uint64_t parent, std::span<const int32_t> tokens, std::span<const uint8_t> kv, bool wait);
  // Copies block `chain` into `out` (kv_bytes) when it is on disk or queued and holds `parent`
  // and `tokens`; false otherwise (a miss).
  bool Read(uint64_t chain, uint64_t parent, std::span<const int32_t> tokens, std::span<uint8_t> out);
  // Waits until the queue is written.
  void Flush();

  double read_bytes_per_second() const;
  size_t file_bytes() const { return file_bytes_; }
  const std::string& folder() const { return folder_; }
  KvDiskTierStats Stats() const;

 private:
  struct Pending {
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> kv;
  };
  KvDiskTier(const KvDiskTierOptions& o, const KvModelIdentity& id, int block_tokens, size_t kv_bytes);
  Status Index();
  void ProbeReadSpeed();
  void WriterLoop();
  bool WriteFile(uint64_t chain, const Pending& p);
  // Adds `chain` as the most recently used file and deletes the least recently used ones over
  // the budget. Caller holds mu_.
  void AddFileLocked(uint64_t chain);
  void DropFileLocked(uint64_t chain);
  bool ReadFile(uint64_t chain, uint64_t parent, std::span<const int32_t> tokens, std::span<uint8_t> out);
  std::string PathOf(uint64_t chain) const;

  const KvDiskTierOptions options_;
  const KvModelIdentity id_;
  const int block_tokens_;
  const size_t kv_bytes_;
  const size_t file_bytes_;
  std::string folder_;

  mutable std::mutex mu_;
  std::condition_variable cv_;       // the writer waits for work / stop
  std::condition_variable room_cv_;  // writers waiting for room, Flush waiting for an empty queue
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> files_;
  std::list<uint64_t> lru_;  // front: least recently used
  std::unordered_map<uint64_t, std::shared_ptr<const Pending>> pending_;
  std::deque<uint64_t> queue_;
  int64_t pending_bytes_ = 0;
  bool writing_ = false;  // the writer holds an item taken from the queue
  bool stop_ = false;
  int failures_in_row_ = 0;
  std::chrono::steady_clock::time_point paused_until_{};
  KvDiskTierStats stats_;
  std::thread writer_;
};

}  // namespace inferloop::llm
