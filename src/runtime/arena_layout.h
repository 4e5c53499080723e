// ArenaLayout: where each value of the main graph lives in the arena for one set of input
// shapes (built by runtime/memory_plan.h, used by the executor in runtime/plan.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "inferloop/tensor.h"

namespace inferloop {

struct SlotPlacement {
  int64_t offset = -1;       // byte offset of the value's block; -1 = not in the arena (heap)
  size_t bytes = 0;          // the block's size (64-byte multiple)
  DataType dtype = DataType::kUndefined;
  Shape shape;               // what the kernel must ask for to get the block
  int alias_of = -1;         // >= 0: the value is a view of that slot's buffer (no block of its own)
  bool reuses_input = false; // in-place: the block is an input's that dies at this node
};

struct ArenaLayout {
  std::vector<SlotPlacement> slots;  // by slot of the main graph
  size_t arena_bytes = 0;            // the arena's size
  size_t peak_bytes = 0;             // most bytes of placed values alive at once
  size_t naive_bytes = 0;            // all placed values without reuse
  int planned = 0;                   // values with a block (or sharing one in place)
  int unplanned = 0;                 // values whose size depends on data (graph outputs, strings
                                     // and views of inputs are on the heap too, but not counted)
};

// Receives buffer sharing the plan did not foresee: `slot`'s value turned out to view the
// buffer of `source_slot` (-1 when the source is not known). The executor copies such a value
// out of the arena for this run; later plans keep the two together.
class AliasSink {
 public:
  virtual ~AliasSink() = default;
  virtual void ReportAlias(int slot, int source_slot) = 0;
};

}  // namespace inferloop
