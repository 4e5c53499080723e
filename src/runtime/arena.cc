#include "runtime/arena.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace inferloop {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kMmapMin = size_t{1} << 20;
size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

std::shared_ptr<ArenaBuffer> ArenaBuffer::Create(size_t bytes) {
  if (bytes == 0) return nullptr;
  std::shared_ptr<ArenaBuffer> b(new (std::nothrow) ArenaBuffer());
  if (!b) return nullptr;
  bytes = RoundUp(bytes, kAlign);
  if (bytes >= kMmapMin) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    b->data_ = static_cast<uint8_t*>(p);
    b->mapped_ = true;
  } else {
    b->data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlign, bytes));
    if (!b->data_) return nullptr;
  }
  b->size_ = bytes;
  return b;
}

ArenaBuffer::~ArenaBuffer() {
  if (!data_) return;
  if (mapped_) munmap(data_, size_);
  else std::free(data_);
}

void* ScratchArena::Take(size_t bytes) {
  bytes = RoundUp(bytes == 0 ? 1 : bytes, kAlign);
  const size_t cap = capacity();
  void* p = nullptr;
  if (overflow_.empty() && used_ + bytes <= cap) {
    p = block_->data() + used_;
  } else {
    auto extra = ArenaBuffer::Create(bytes);
    if (!extra) return nullptr;
    p = extra->data();
    overflow_marks_.push_back(used_);
    overflow_.push_back(std::move(extra));
  }
  used_ += bytes;
  if (used_ > high_water_) high_water_ = used_;
  return p;
}

void ScratchArena::Release(size_t mark) {
  while (!overflow_marks_.empty() && overflow_marks_.back() >= mark) {
    overflow_marks_.pop_back();
    overflow_.pop_back();
  }
  used_ = mark;
  if (used_ == 0 && high_water_ > capacity()) {
    // Nothing is outstanding: size the block for the most any run needed so far.
    block_ = ArenaBuffer::Create(high_water_);
    if (!block_) high_water_ = 0;
  }
}

void ScratchArena::Clear() {
  if (used_ != 0) return;
  block_.reset();
  overflow_.clear();
  overflow_marks_.clear();
  high_water_ = 0;
}

}  // namespace inferloop
