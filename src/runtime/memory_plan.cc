#include "runtime/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

namespace inferloop {
namespace {

constexpr size_t kAlign = 64;

size_t Bytes(const TypeInfo& t, bool* known) {
  *known = false;
  if (t.kind != TypeInfo::Kind::kTensor || !t.has_shape || t.elem_type == DataType::kUndefined ||
      t.elem_type == DataType::kString)
    return 0;
  size_t n = 1;
  for (const auto& d : t.dims) {
    if (d.value < 0) return 0;
    n *= static_cast<size_t>(d.value);
  }
  *known = true;
  return (n * DataTypeSize(t.elem_type) + kAlign - 1) / kAlign * kAlign;
}

}  // namespace

MemoryPlan PlanMemory(const ExecutionPlan& plan, const ShapeInferenceResult& shapes) {
  MemoryPlan mp;
  std::set<std::string> graph_outputs;
  for (size_t i = 0; i < plan.num_outputs(); ++i) graph_outputs.insert(plan.output(i).name);
  std::map<size_t, size_t> free_blocks;  // offset -> size
  std::map<std::string, MemoryPlan::Block> live;
  size_t live_bytes = 0;
  auto release = [&](const std::string& name) {
    auto it = live.find(name);
    if (it == live.end()) return;
    live_bytes -= it->second.bytes;
    size_t off = it->second.offset, len = it->second.bytes;
    // Merge with neighbours.
    auto next = free_blocks.lower_bound(off);
    if (next != free_blocks.end() && off + len == next->first) {
      len += next->second;
      next = free_blocks.erase(next);
    }
    if (next != free_blocks.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        prev->second += len;
        live.erase(it);
        return;
      }
    }
    free_blocks[off] = len;
    live.erase(it);
  };
  for (const auto& step : plan.Schedule()) {
    for (const auto& name : step.defines) {
      auto t = shapes.types.find(name);
      bool known = false;
      size_t bytes = t == shapes.types.end() ? 0 : Bytes(t->second, &known);
      if (!known) { ++mp.unplanned; continue; }
      ++mp.planned;
      mp.naive_bytes += bytes;
      // Best fit among free blocks, else grow the arena.
      auto best = free_blocks.end();
      for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
        if (it->second >= bytes && (best == free_blocks.end() || it->second < best->second)) best = it;
      size_t off;
      if (best != free_blocks.end()) {
        off = best->first;
        size_t rest = best->second - bytes;
        free_blocks.erase(best);
        if (rest) free_blocks[off + bytes] = rest;
      } else if (!free_blocks.empty() && std::prev(free_blocks.end())->first + std::prev(free_blocks.end())->second == mp.arena_bytes) {
        auto last = std::prev(free_blocks.end());  // extend the free tail block
        off = last->first;
        free_blocks.erase(last);
        mp.arena_bytes = off + bytes;
      } else {
        off = mp.arena_bytes;
        mp.arena_bytes += bytes;
      }
      MemoryPlan::Block b{name, off, bytes};
      mp.blocks.push_back(b);
      live[name] = b;
      live_bytes += bytes;
      mp.peak_bytes = std::max(mp.peak_bytes, live_bytes);
    }
    for (const auto& name : step.releases)
      if (!graph_outputs.count(name)) release(name);
  }
  return mp;
}

}  // namespace inferloop
