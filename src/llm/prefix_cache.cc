#include "llm/prefix_cache.h"

#include <algorithm>

namespace inferloop::llm {

PrefixCache::PrefixCache(KvBlockPool* pool, int budget_blocks) : pool_(pool), budget_(std::max(0, budget_blocks)) {}

PrefixCache::~PrefixCache() { Clear(); }

uint64_t PrefixCache::ChainHash(uint64_t parent, std::span<const int32_t> block_tokens) {
  // FNV-1a over the parent hash and the token ids, then a final mix (splitmix64).
  uint64_t h = 1469598103934665603ull ^ parent;
  for (int32_t t : block_tokens) {
    h ^= static_cast<uint32_t>(t);
    h *= 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h == 0 ? 1 : h;
}

void PrefixCache::Touch(Entry& e) { lru_.splice(lru_.end(), lru_, e.lru); }

std::vector<int> PrefixCache::Match(std::span<const int32_t> tokens, int max_blocks, int* from_disk) {
  const int bt = pool_->shape().block_tokens;
  std::vector<int> out;
  if (from_disk) *from_disk = 0;
  uint64_t parent = 0;
  // Runs of blocks in memory, then on disk, then in memory again... (the budget evicts a prefix's
  // least recently used blocks, its first ones, before its later ones).
  for (;;) {
    for (int i = static_cast<int>(out.size()); i < max_blocks && static_cast<size_t>((i + 1) * bt) <= tokens.size(); ++i) {
      const auto blk = tokens.subspan(i * bt, bt);
      const uint64_t h = ChainHash(parent, blk);
      auto it = entries_.find(h);
      if (it == entries_.end() || it->second.parent != parent || !std::equal(blk.begin(), blk.end(), it->second.tokens.begin())) break;
      Touch(it->second);
      pool_->Retain(it->second.block);
      out.push_back(it->second.block);
      parent = h;
    }
    const size_t in_memory = out.size();
    if (disk_.disk == nullptr) break;
    MatchOnDisk(tokens, static_cast<int>(in_memory), max_blocks, parent, out, from_disk);
    if (out.size() == in_memory) break;
  }
  return out;
}

void PrefixCache::MatchOnDisk(std::span<const int32_t> tokens, int index, int max_blocks, uint64_t& parent,
                              std::vector<int>& out, int* from_disk) {
  const int bt = pool_->shape().block_tokens;
  std::vector<uint64_t> hashes;  // the run of blocks on disk from `index`
  for (uint64_t p = parent; index + static_cast<int>(hashes.size()) < max_blocks;) {
    const size_t at = static_cast<size_t>(index + hashes.size()) * bt;
    if (at + bt > tokens.size()) break;
    const uint64_t h = ChainHash(p, tokens.subspan(at, bt));
    if (entries_.count(h) > 0 || !disk_.disk->Contains(h)) break;
    hashes.push_back(h);
    p = h;
  }
  if (hashes.empty()) return;
  const int n = static_cast<int>(hashes.size());
  const std::optional<double> prefill =
      disk_.prefill ? disk_.prefill->Seconds(index * bt, (index + n) * bt) : std::optional<double>();
  if (!disk_.always_read &&
      !ReadBeatsPrefill(static_cast<double>(n) * disk_.disk->file_bytes(), disk_.disk->read_bytes_per_second(), prefill))
    return;
  for (int k = 0; k < n; ++k) {
    const auto blk = tokens.subspan(static_cast<size_t>(index + k) * bt, bt);
    const int b = pool_->Take();
    if (b < 0) return;
    if (!disk_.disk->Read(hashes[k], parent, blk, pool_->BlockBytes(b))) {
      pool_->Release(b);
      return;
    }
    // The cache keeps Take's reference; the caller gets one more.
    lru_.push_back(hashes[k]);
    entries_.emplace(hashes[k], Entry{b, std::vector<int32_t>(blk.begin(), blk.end()), parent, std::prev(lru_.end())});
    pool_->Retain(b);
    out.push_back(b);
    if (from_disk) ++*from_disk;
    parent = hashes[k];
  }
}

bool PrefixCache::Insert(std::span<const int32_t> tokens, int index, int block) {
  const int bt = pool_->shape().block_tokens;
  if (static_cast<size_t>((index + 1) * bt) > tokens.size()) return false;
  uint64_t parent = 0;
  for (int i = 0; i < index; ++i) parent = ChainHash(parent, tokens.subspan(i * bt, bt));
  const auto blk = tokens.subspan(index * bt, bt);
  const uint64_t h = ChainHash(parent, blk);
  auto it = entries_.find(h);
  if (it != entries_.end()) {
    Touch(it->second);
    return false;
  }
  pool_->Retain(block);
  lru_.push_back(h);
  entries_.emplace(h, Entry{block, std::vector<int32_t>(blk.begin(), blk.end()), parent, std::prev(lru_.end())});
  Trim();
  return true;
}

int PrefixCache::Evict(int n) {
  int freed = 0;
  for (auto it = lru_.begin(); it != lru_.end() && freed < n;) {
    auto e = entries_.find(*it);
    if (pool_->RefCount(e->second.block) == 1) {  // only the cache holds it
      if (disk_.disk != nullptr)
        disk_.disk->Write(e->first, e->second.parent, e->second.tokens, pool_->BlockBytes(e->second.block), false);
      pool_->Release(e->second.block);
      entries_.erase(e);
      it = lru_.erase(it);
      ++freed;
    } else {
      ++it;
    }
  }
  return freed;
}

int PrefixCache::idle_blocks() const {
  int n = 0;
  for (const auto& [h, e] : entries_) n += pool_->RefCount(e.block) == 1 ? 1 : 0;
  return n;
}

void PrefixCache::Trim() {
  const int idle = idle_blocks();
  if (idle > budget_) Evict(idle - budget_);
}

void PrefixCache::Clear() {
  for (auto& [h, e] : entries_) pool_->Release(e.block);
  entries_.clear();
  lru_.clear();
}

void PrefixCache::WriteAllToDisk() {
  if (disk_.disk == nullptr) return;
  for (uint64_t h : lru_) {
    const Entry& e = entries_.at(h);
    disk_.disk->Write(h, e.parent, e.tokens, pool_->BlockBytes(e.block), true);
  }
}

}  // namespace inferloop::llm
