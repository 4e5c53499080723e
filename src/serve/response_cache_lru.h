// ByteLru: a least-recently-used index of values with a size each, for a byte budget. The response
// cache's memory tier (values: the entries) and its disk tier's index (values: nothing, the files
// are on disk) both use it. Not thread-safe: its owner locks.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

namespace inferloop::serve {

template <typename Key, typename Value, typename Hash>
class ByteLru {
 public:
  struct Evicted {
    Key key;
    Value value;
    int64_t bytes;
  };

  // The value of `key`, marked most recently used; null when absent.
  Value* Touch(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }
  bool Contains(const Key& key) const { return index_.count(key) != 0; }

  // Inserts (or replaces) `key` as the most recently used entry. The caller evicts with
  // EvictTo afterwards.
  void Put(const Key& key, Value value, int64_t bytes) {
    Erase(key);
    order_.push_front(Node{key, std::move(value), bytes});
    index_[key] = order_.begin();
    bytes_ += bytes;
  }
  bool Erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    bytes_ -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }
  // Removes least recently used entries until the total is at most `budget`; returns them,
  // oldest first.
  std::vector<Evicted> EvictTo(int64_t budget) {
    std::vector<Evicted> out;
    while (bytes_ > budget && !order_.empty()) {
      Node& n = order_.back();
      out.push_back(Evicted{n.key, std::move(n.value), n.bytes});
      bytes_ -= n.bytes;
      index_.erase(n.key);
      order_.pop_back();
    }
    return out;
  }

  int64_t bytes() const { return bytes_; }
  int64_t entries() const { return static_cast<int64_t>(index_.size()); }

 private:
  struct Node {
    Key key;
    Value value;
    int64_t bytes;
  };
  std::list<Node> order_;  // most recently used first
  std::unordered_map<Key, typename std::list<Node>::iterator, Hash> index_;
  int64_t bytes_ = 0;
};

}  // namespace inferloop::serve
