// The paged KV cache's storage: one pool of fixed-size blocks, each holding the keys and values
// of `block_tokens` consecutive positions of one sequence for every layer. Within a block, per
// layer, the keys come first and then the values, each head-major: one key/value head's
// block_tokens rows one after another, then the next head's (see KvBlockPool::KeyHead). Sequences own blocks
// through a block table (KvSequence); blocks are taken on demand and returned when released.
// Blocks are reference-counted so that sequences can share the blocks of a common prefix.
// Keys and values are stored in the pool's KV type, chosen when it is created: IEEE half floats
// (F16, the default, as llama.cpp's default cache) or Q8_0 (each head's row of head_dim values
// in ggml's q8_0 blocks: 32 int8 values and an F16 scale, 34 bytes, as llama.cpp's q8_0 cache;
// head_dim must be a multiple of 32). Q8_0 takes 34/64 of F16's bytes, so the same memory holds
// about 1.9x the positions.
// Not thread-safe: one scheduler thread owns a pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::llm {

// Element type of the cached keys and values.
enum class KvType { kF16, kQ8_0 };
// "f16" / "q8_0" (the names the CLI options take).
const char* KvTypeName(KvType t);
// Parses "f16" or "q8_0"; InvalidArgument naming the accepted values otherwise.
Result<KvType> ParseKvType(std::string_view name);

// Q8_0 block layout (ggml's block_q8_0): F16 scale d, then 32 int8 q; value i = d * q[i].
inline constexpr int kQ8_0BlockValues = 32;
inline constexpr int kQ8_0BlockBytes = 34;

struct KvCacheShape {
  int n_layer = 0;
  int kv_dim = 0;        // n_head_kv * head_dim: values per position for K (and again for V)
  int block_tokens = 16;
  KvType type = KvType::kF16;
  int head_dim = 0;      // values per head (0: kv_dim, one head); Q8_0 needs a multiple of 32

  // Bytes of one position's keys (or values) of one layer: kv_dim values in `type`.
  size_t row_bytes() const;
  // Key/value heads per position: kv_dim / head_dim (1 when head_dim is 0).
  int n_heads() const { return head_dim > 0 ? kv_dim / head_dim : 1; }
  // Bytes of one head's keys (or values) at one position: row_bytes() / n_heads().
  size_t head_row_bytes() const { return row_bytes() / static_cast<size_t>(n_heads()); }
  // Bytes of one block: every layer's keys and values of block_tokens positions.
  size_t block_bytes() const { return static_cast<size_t>(n_layer) * 2 * block_tokens * row_bytes(); }
};

class KvBlockPool {
 public:
  // Storage for `num_blocks` blocks, allocated up front. InvalidArgument for non-positive sizes
  // or a Q8_0 shape whose head_dim is not a multiple of 32; ResourceExhausted when the
  // allocation fails.
  static Result<KvBlockPool> Create(const KvCacheShape& shape, int num_blocks);

  const KvCacheShape& shape() const { return shape_; }
  int num_blocks() const { return static_cast<int>(refs_.size()); }
  int free_blocks() const { return static_cast<int>(free_.size()); }
  int used_blocks() const { return num_blocks() - free_blocks(); }
  KvType type() const { return shape_.type; }
  size_t bytes_per_block() const { return block_units_ * sizeof(uint16_t); }

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
  // The bytes of block `block` (bytes_per_block() of them: what the disk tier stores).
  std::span<uint8_t> BlockBytes(int block) {
    return {reinterpret_cast<uint8_t*>(storage_.data() + static_cast<size_t>(block) * block_units_), bytes_per_block()};
  }

  // Keys / values of head `head` (< n_heads()) at position slot `slot` (< block_tokens) of
  // `layer` in `block`: head_row_bytes() bytes in the pool's type (F16: head_dim halves; Q8_0:
  // head_dim / 32 blocks of 34 bytes). The slots of one head follow one another, head_row_bytes()
  // apart, so attention reads a head's keys of a block as one contiguous run. With the rows of
  // all heads interleaved (the layout before 2026-12-05) each head read 128 bytes of every 512:
  // bench_llm_attention (TinyLlama-shaped, one Zen 4 core, medians of 3 alternating runs) at 1024
  // / 4096 positions, F16 avx2 6.98 / 31.1 ms -> 5.50 / 23.1, avx512 7.43 / 31.4 -> 5.19 / 25.6;
  // Q8_0 avx2 10.9 / 48.4 -> 7.58 / 31.4; the same at 256 positions.
  uint8_t* KeyHead(int block, int layer, int head, int slot) {
    return reinterpret_cast<uint8_t*>(At(block, layer, 0, head, slot));
  }
  uint8_t* ValueHead(int block, int layer, int head, int slot) {
    return reinterpret_cast<uint8_t*>(At(block, layer, 1, head, slot));
  }

 private:
  KvBlockPool() = default;
  // Storage is counted in 2-byte units: an F16 head row is head_dim units, a Q8_0 one (an even
  // number of bytes) head_row_bytes / 2.
  uint16_t* At(int block, int layer, int kv, int head, int slot) {
    return storage_.data() + static_cast<size_t>(block) * block_units_ +
           ((static_cast<size_t>(layer) * 2 + kv) * shape_.n_heads() + head) * shape_.block_tokens * head_units_ +
           static_cast<size_t>(slot) * head_units_;
  }

  KvCacheShape shape_;
  size_t head_units_ = 0;
  size_t block_units_ = 0;
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

  // Head `head`'s keys / values at position `pos` of `layer` (see KvBlockPool::KeyHead).
  uint8_t* KeyHead(int layer, int head, int pos) const;
  uint8_t* ValueHead(int layer, int head, int pos) const;

 private:
  KvBlockPool* pool_;
  std::vector<int> blocks_;
};

}  // namespace inferloop::llm
