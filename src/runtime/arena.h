// Memory the runtime hands to kernels without a heap allocation per tensor.
//
// ArenaBuffer: one 64-byte-aligned block holding a shape plan's intermediates. Blocks of 1 MiB
// and more are mmapped, so freeing one returns its pages to the OS at once (glibc would keep a
// freed heap chunk). Tensors placed in it hold a shared_ptr to it (Tensor::View's keep-alive),
// so the memory stays valid while any of them lives.
//
// ScratchArena: per-run bump allocator behind KernelContext::Scratch. Allocations are released
// in stack order (Mark/Release around each kernel call, nested calls included). When a run
// needs more than the block holds, the extra comes from separate blocks for that run and the
// block grows to the high-water mark once nothing is outstanding, so later runs allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace inferloop {

class ArenaBuffer {
 public:
  // nullptr when bytes == 0 or the memory is not available.
  static std::shared_ptr<ArenaBuffer> Create(size_t bytes);
  ~ArenaBuffer();
  ArenaBuffer(const ArenaBuffer&) = delete;
  ArenaBuffer& operator=(const ArenaBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool Contains(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    return b >= data_ && b < data_ + size_;
  }

 private:
  ArenaBuffer() = default;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

class ScratchArena {
 public:
  ScratchArena() = default;
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  // 64-byte-aligned, uninitialized; nullptr if the memory is not available.
  void* Take(size_t bytes);
  size_t Mark() const { return used_; }
  // Frees everything taken since `mark`.
  void Release(size_t mark);
  // Drops the block (between runs, when idle).
  void Clear();
  size_t capacity() const { return block_ ? block_->size() : 0; }

 private:
  std::shared_ptr<ArenaBuffer> block_;
  size_t used_ = 0;        // bytes handed out (block and overflow together, in stack order)
  size_t high_water_ = 0;  // most bytes outstanding at once since the block was sized
  std::vector<std::shared_ptr<ArenaBuffer>> overflow_;
  std::vector<size_t> overflow_marks_;  // used_ before each overflow block was taken
};

}  // namespace inferloop
