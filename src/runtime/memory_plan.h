// Static memory plan: from inferred shapes and the execution schedule, assigns every
// intermediate tensor of the main graph an offset in one arena, reusing memory whose value is
// dead (best fit) and, for elementwise ops, the memory of an input that dies at the node
// (in place). Values whose size is unknown before running (data-dependent shapes), strings and
// graph outputs (the caller keeps them after the run) are left to the heap.
//
// Values that share a buffer (a kernel returned a view of its input: Reshape, Identity, ...)
// are planned as one block living as long as the longest of them; the executor reports such
// sharing the first time it sees it (runtime/arena_layout.h AliasSink).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/shape_inference.h"
#include "runtime/arena_layout.h"
#include "runtime/plan.h"

namespace inferloop {

// aliases: (slot, source slot) pairs known to share a buffer; source -1 = unknown.
ArenaLayout PlanArena(const ExecutionPlan& plan, const ShapeInferenceResult& shapes,
                      const std::vector<std::pair<int, int>>& aliases = {}, bool in_place = true);

// True for ops whose kernels may write their output over a dying input (see kernel.h
// AllocateUninit): output element i depends only on the inputs' elements at i.
bool IsInPlaceOp(const std::string& domain, const std::string& op_type);

// A summary of PlanArena's layout, by value name.
struct MemoryPlan {
  size_t arena_bytes = 0;  // size of the one arena holding all planned intermediates
  size_t peak_bytes = 0;   // largest sum of simultaneously live planned intermediates
  size_t naive_bytes = 0;  // sum of all planned intermediates (no reuse)
  int planned = 0;         // intermediates placed in the arena
  int unplanned = 0;       // intermediates whose size depends on data
  struct Block {
    std::string name;
    size_t offset, bytes;
  };
  std::vector<Block> blocks;
};

MemoryPlan PlanMemory(const ExecutionPlan& plan, const ShapeInferenceResult& shapes);

}  // namespace inferloop
