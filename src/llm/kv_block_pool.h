// The paged KV cache's storage: one pool of fixed-size blocks, each holding the keys and values
// of `block_tokens` consecutive positions of one sequence for every layer. Sequences own blocks
// through a block table (KvSequence); blocks are taken on demand and returned when released.
// Blocks are reference-counted so that sequences can share the blocks of a common prefix.
// Keys and values are stored as IEEE half floats (F16), as llama.cpp does by default.
// Not thread-safe: one scheduler thread owns a pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::llm {

struct KvCacheShape {
  int n_layer = 0;
  int kv_dim = 0;        // n_head_kv * head_dim: values per position for K (and again for V)
  int block_tokens = 16;
};

class KvBlockPool {
 public:
  // Storage for `num_blocks` blocks, allocated up front. InvalidArgument for non-positive sizes;
  // ResourceExhausted when the allocation fails.
  static Result<KvBlockPool> Create(const KvCacheShape& shape, int num_blocks);

  const KvCacheShape& shape() const { return shape_; }
  int num_blocks() const { return static_cast<int>(refs_.size()); }
  int free_blocks() const { return static_cast<int>(free_.size()); }
  int used_blocks() const { return num_blocks() - free_blocks(); }
  size_t bytes_per_block() const { return block_elems_ * sizeof(uint16_t); }

  // A free block with reference count 1, or -1 when none is left (after asking the evictor).
  int Take();
  // Makes sure `n` blocks are free, asking the evictor (e.g. the prefix cache) to free idle
  // blocks if needed. False when that is not possible.
  bool EnsureFree(int n);
  // Called with the number of blocks wanted when too few are free; returns how many it freed.
  void SetEvictor(std::function<int(int)> evictor) { evictor_ = std::move(evictor); }
  // Adds a reference (a second sequence shares the block).
  void Retain(int block);
  // Drops a reference; the block is free again at zero.
  void Release(int block);
  int RefCount(int block) const { return refs_[block]; }
  // Copies every layer's keys and values of block `from` into block `to`.
  void CopyBlock(int from, int to);

  // Keys / values of position slot `slot` (< block_tokens) of `layer` in `block`: kv_dim halves.
  uint16_t* Key(int block, int layer, int slot) { return At(block, layer, 0, slot); }
  uint16_t* Value(int block, int layer, int slot) { return At(block, layer, 1, slot); }

 private:
  KvBlockPool() = default;
  uint16_t* At(int block, int layer, int kv, int slot) {
    return storage_.data() + static_cast<size_t>(block) * block_elems_ +
           (static_cast<size_t>(layer) * 2 + kv) * shape_.block_tokens * shape_.kv_dim +
           static_cast<size_t>(slot) * shape_.kv_dim;
  }

  KvCacheShape shape_;
  size_t block_elems_ = 0;
  std::vector<uint16_t> storage_;
  std::vector<int> refs_;
  std::vector<int> free_;  // stack of free block ids
  std::function<int(int)> evictor_;
};

// One sequence's block table: position p lives in blocks[p / block_tokens], slot
// p % block_tokens. Releases its blocks when destroyed or Reset.
class KvSequence {
 public:
  explicit KvSequence(KvBlockPool* pool) : pool_(pool) {}
  ~KvSequence() { Reset(); }
  KvSequence(KvSequence&& o) noexcept;
  KvSequence& operator=(KvSequence&& o) noexcept;
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  // Makes room for positions [0, length): takes the missing blocks. ResourceExhausted (and no
  // change) when the pool has too few free blocks.
  Status Reserve(int length);
  // Returns every block to the pool; the sequence is empty again.
  void Reset();
  // Starts from `blocks` (e.g. matched in the prefix cache), whose references the sequence now
  // owns. The sequence must be empty.
  void Adopt(std::vector<int> blocks);
  // A second sequence sharing every block of this one (copy on write: see PrepareWrite).
  KvSequence Fork() const;
  // Before writing position `pos`: if its block is shared with another sequence, moves this
  // sequence to a private copy of it. ResourceExhausted when no block is free for the copy.
  Status PrepareWrite(int pos);

  int capacity() const;
  const std::vector<int>& blocks() const { return blocks_; }
  KvBlockPool* pool() const { return pool_; }

  uint16_t* Key(int layer, int pos) const;
  uint16_t* Value(int layer, int pos) const;

 private:
  KvBlockPool* pool_;
  std::vector<int> blocks_;
};

}  // namespace inferloop::llm
