// ShapePlanCache: the arena layout of the main graph per distinct set of input shapes.
//
// Get() finds the layout for the run's inputs (no allocation when it is cached) or builds it:
// shape inference with the inputs' shapes, then PlanArena. At most `capacity` layouts are
// kept; the least recently used is dropped. The cache also collects buffer sharing the
// executor discovers (AliasSink); layouts built before a discovery are rebuilt on next use.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "runtime/arena_layout.h"
#include "runtime/plan.h"

namespace inferloop {

class ShapePlanCache : public AliasSink {
 public:
  ShapePlanCache(const Model& model, const ExecutionPlan& plan, size_t capacity);

  // inputs: by graph input, nullptr = not given. Never null: a layout with no arena when
  // shapes cannot be inferred.
  std::shared_ptr<const ArenaLayout> Get(const Value* const* inputs);
  void ReportAlias(int slot, int source_slot) override;
  void Clear();
  int size() const;

 private:
  struct Entry {
    std::vector<int64_t> key;
    uint64_t generation = 0;
    std::shared_ptr<const ArenaLayout> layout;
  };
  bool Matches(const std::vector<int64_t>& key, const Value* const* inputs) const;
  std::vector<int64_t> KeyOf(const Value* const* inputs) const;
  std::shared_ptr<const ArenaLayout> Build(const Value* const* inputs, const std::vector<std::pair<int, int>>& aliases) const;

  const Model& model_;
  const ExecutionPlan& plan_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;                // most recently used first
  std::vector<std::pair<int, int>> aliases_;  // (slot, source slot) sharing seen so far
  uint64_t generation_ = 0;                   // bumped when aliases_ grows
};

}  // namespace inferloop
