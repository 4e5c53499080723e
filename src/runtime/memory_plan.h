// Static memory plan: from inferred shapes and the execution schedule, assigns every
// intermediate tensor an offset in one arena, reusing memory whose value is dead (best fit).
// Values whose size is unknown before running (data-dependent shapes) are counted, not placed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/shape_inference.h"
#include "runtime/plan.h"

namespace inferloop {

struct MemoryPlan {
  size_t arena_bytes = 0;  // size of the one arena holding all planned intermediates
  size_t peak_bytes = 0;   // largest sum of simultaneously live planned intermediates
  size_t naive_bytes = 0;  // sum of all planned intermediates (no reuse)
  int planned = 0;         // intermediates with a known size
  int unplanned = 0;       // intermediates whose size depends on data
  struct Block {
    std::string name;
    size_t offset, bytes;
  };
  std::vector<Block> blocks;
};

MemoryPlan PlanMemory(const ExecutionPlan& plan, const ShapeInferenceResult& shapes);

}  // namespace inferloop
