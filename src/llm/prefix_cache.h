// Prefix cache of the paged KV cache: full blocks of computed keys/values, found again by the
// tokens that produced them (the block's tokens and everything before them), so a later
// sequence starting with the same tokens reuses the blocks instead of recomputing them.
//
// The cache holds one reference on each block it knows. A block only the cache references is
// idle: it stays cached until the pool needs room, then idle blocks are evicted least recently
// used first. A block still used by a sequence is never evicted. `budget_blocks` caps how many
// idle blocks are kept. Not thread-safe (owned by the engine's scheduler thread).
//
// With a disk tier (SetDiskTier, kv_disk_tier.h) below it, an evicted block is queued for the
// disk (a copy: the block is free at once), and Match continues past the blocks in memory with
// blocks on disk: when reading them is cheaper than computing them (kv_tier_cost.h), they are
// read into free blocks of the pool and cached in memory again.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "llm/kv_block_pool.h"
#include "llm/kv_disk_tier.h"
#include "llm/kv_tier_cost.h"

namespace inferloop::llm {

// The disk tier below the prefix cache and when to read from it.
struct PrefixDiskTier {
  KvDiskTier* disk = nullptr;
  const PrefillSpeed* prefill = nullptr;  // measured by the engine (null: never measured)
  bool always_read = false;               // read whatever is on disk (tests, benchmarks)
};

class PrefixCache {
 public:
  PrefixCache(KvBlockPool* pool, int budget_blocks);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Hash of a block given the hash of everything before it (0 for the first block).
  static uint64_t ChainHash(uint64_t parent, std::span<const int32_t> block_tokens);

  // Blocks evicted go to `tier.disk` (which must outlive the cache), and Match reads from it.
  void SetDiskTier(PrefixDiskTier tier) { disk_ = tier; }

  // The cached blocks holding the longest prefix of `tokens` made of whole blocks, at most
  // `max_blocks` of them; each returned block has one more reference, owned by the caller.
  // `from_disk` (optional) gets how many of them were read from the disk tier (runs of blocks in
  // memory and on disk alternate as far as the prefix goes).
  std::vector<int> Match(std::span<const int32_t> tokens, int max_blocks, int* from_disk = nullptr);

  // Records that `block` holds the keys/values of block number `index` of `tokens` (the whole
  // prefix through that block). The cache takes a reference. Returns false (and takes none)
  // when an equal prefix is already cached.
  bool Insert(std::span<const int32_t> tokens, int index, int block);

  // Frees up to `n` idle blocks (least recently used first); returns how many were freed.
  int Evict(int n);

  // Evicts idle blocks beyond the budget (call after sequences released blocks).
  void Trim();

  int cached_blocks() const { return static_cast<int>(entries_.size()); }
  int idle_blocks() const;
  // Forgets every block (idle ones are freed; blocks in use keep their other references).
  void Clear();
  // Queues every cached block the disk tier lacks, least recently used first, waiting for room
  // in its queue (a graceful stop: the blocks in memory survive a restart).
  void WriteAllToDisk();

 private:
  struct Entry {
    int block;
    std::vector<int32_t> tokens;  // the block's own tokens (checked on lookup: no false hits)
    uint64_t parent;
    std::list<uint64_t>::iterator lru;
  };
  void Touch(Entry& e);
  // Match's continuation on disk from block `index` (whose parent hash is `parent`, advanced to
  // the last block read).
  void MatchOnDisk(std::span<const int32_t> tokens, int index, int max_blocks, uint64_t& parent, std::vector<int>& out,
                   int* from_disk);

  KvBlockPool* pool_;
  int budget_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // front = least recently used
  PrefixDiskTier disk_;
};

}  // namespace inferloop::llm
