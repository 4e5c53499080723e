#include "llm/kv_block_pool.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>

namespace inferloop::llm {

const char* KvTypeName(KvType t) { return t == KvType::kQ8_0 ? "q8_0" : "f16"; }

Result<KvType> ParseKvType(std::string_view name) {
  if (name == "f16") return KvType::kF16;
  if (name == "q8_0") return KvType::kQ8_0;
  return Status::InvalidArgument("unknown KV cache type '" + std::string(name) + "' (f16 or q8_0)");
}

size_t KvCacheShape::row_bytes() const {
  if (type == KvType::kQ8_0) return static_cast<size_t>(kv_dim) / kQ8_0BlockValues * kQ8_0BlockBytes;
  return static_cast<size_t>(kv_dim) * sizeof(uint16_t);
}

Result<KvBlockPool> KvBlockPool::Create(const KvCacheShape& shape, int num_blocks) {
  if (shape.n_layer <= 0 || shape.kv_dim <= 0 || shape.block_tokens <= 0 || num_blocks <= 0 || shape.head_dim < 0) {
    return Status::InvalidArgument("KV cache sizes must be positive (layers " + std::to_string(shape.n_layer) +
                                   ", kv dim " + std::to_string(shape.kv_dim) + ", block tokens " +
                                   std::to_string(shape.block_tokens) + ", blocks " + std::to_string(num_blocks) + ")");
  }
  const int head_dim = shape.head_dim == 0 ? shape.kv_dim : shape.head_dim;
  if (shape.kv_dim % head_dim != 0) {
    return Status::InvalidArgument("KV cache: kv dim " + std::to_string(shape.kv_dim) + " is not a multiple of head dim " +
                                   std::to_string(head_dim));
  }
  if (shape.type == KvType::kQ8_0 && head_dim % kQ8_0BlockValues != 0) {
    return Status::InvalidArgument("KV cache type q8_0 needs a head dim that is a multiple of 32 (blocks of 32 "
                                   "values per head); this model's head dim is " + std::to_string(head_dim) +
                                   ": use KV cache type f16");
  }
  KvBlockPool p;
  p.shape_ = shape;
  p.head_units_ = shape.head_row_bytes() / sizeof(uint16_t);
  p.block_units_ = shape.block_bytes() / sizeof(uint16_t);
  try {
    p.storage_.assign(p.block_units_ * num_blocks, 0);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("cannot allocate " + std::to_string(shape.block_bytes() * num_blocks) +
                                     " bytes for the KV cache");
  }
  p.refs_.assign(num_blocks, 0);
  p.free_.reserve(num_blocks);
  for (int b = num_blocks - 1; b >= 0; --b) p.free_.push_back(b);
  return p;
}

bool KvBlockPool::EnsureFree(int n) {
  if (static_cast<int>(free_.size()) < n && evictor_) evictor_(n - static_cast<int>(free_.size()));
  return static_cast<int>(free_.size()) >= n;
}

int KvBlockPool::Take() {
  if (free_.empty() && !EnsureFree(1)) return -1;
  const int b = free_.back();
  free_.pop_back();
  refs_[b] = 1;
  return b;
}

void KvBlockPool::Retain(int block) { ++refs_[block]; }

void KvBlockPool::CopyBlock(int from, int to) {
  std::copy_n(storage_.data() + static_cast<size_t>(from) * block_units_, block_units_,
              storage_.data() + static_cast<size_t>(to) * block_units_);
}

void KvBlockPool::Release(int block) {
  if (--refs_[block] == 0) free_.push_back(block);
}

KvSequence::KvSequence(KvSequence&& o) noexcept : pool_(o.pool_), blocks_(std::move(o.blocks_)) {
  o.blocks_.clear();
}

KvSequence& KvSequence::operator=(KvSequence&& o) noexcept {
  if (this != &o) {
    Reset();
    pool_ = o.pool_;
    blocks_ = std::move(o.blocks_);
    o.blocks_.clear();
  }
  return *this;
}

int KvSequence::capacity() const { return static_cast<int>(blocks_.size()) * pool_->shape().block_tokens; }

Status KvSequence::Reserve(int length) {
  const int bt = pool_->shape().block_tokens;
  const int need = (length + bt - 1) / bt - static_cast<int>(blocks_.size());
  if (need <= 0) return Status::Ok();
  if (!pool_->EnsureFree(need)) {
    return Status::ResourceExhausted("KV cache full: " + std::to_string(need) + " more blocks needed, " +
                                     std::to_string(pool_->free_blocks()) + " free of " +
                                     std::to_string(pool_->num_blocks()));
  }
  for (int i = 0; i < need; ++i) blocks_.push_back(pool_->Take());
  return Status::Ok();
}

void KvSequence::Adopt(std::vector<int> blocks) {
  Reset();
  blocks_ = std::move(blocks);
}

KvSequence KvSequence::Fork() const {
  KvSequence s(pool_);
  for (int b : blocks_) pool_->Retain(b);
  s.blocks_ = blocks_;
  return s;
}

Status KvSequence::PrepareWrite(int pos) {
  const int bt = pool_->shape().block_tokens;
  const size_t i = static_cast<size_t>(pos / bt);
  if (i >= blocks_.size() || pool_->RefCount(blocks_[i]) <= 1) return Status::Ok();
  const int fresh = pool_->Take();
  if (fresh < 0) return Status::ResourceExhausted("KV cache full: no block free for a copy on write");
  pool_->CopyBlock(blocks_[i], fresh);
  pool_->Release(blocks_[i]);
  blocks_[i] = fresh;
  return Status::Ok();
}

void KvSequence::Reset() {
  for (int b : blocks_) pool_->Release(b);
  blocks_.clear();
}

uint8_t* KvSequence::KeyHead(int layer, int head, int pos) const {
  const int bt = pool_->shape().block_tokens;
  return pool_->KeyHead(blocks_[pos / bt], layer, head, pos % bt);
}

uint8_t* KvSequence::ValueHead(int layer, int head, int pos) const {
  const int bt = pool_->shape().block_tokens;
  return pool_->ValueHead(blocks_[pos / bt], layer, head, pos % bt);
}

}  // namespace inferloop::llm
