// Dim arithmetic shared by the shape rules (src/graph/shape_rules/*.cc): fixed and symbolic
// dims, broadcasting, axis normalisation, and building InferredValues.
#pragma once

#include <vector>

#include "graph/shape_rules.h"

namespace inferloop::shape_rules {

using Dims = std::vector<Dim>;

inline Dim Fixed(int64_t v) { return Dim{v, ""}; }
inline bool Known(const Dim& d) { return d.value >= 0; }
// Equal when known, or the same symbol.
bool SameDim(const Dim& a, const Dim& b);
// Has a shape with every dim known.
bool AllKnown(const InferredValue& i);
Dim Broadcast(const Dim& a, const Dim& b);
// Numpy broadcast of the shapes of `ins`; false when one is absent or has no shape.
bool BroadcastAll(const std::vector<const InferredValue*>& ins, Dims* out);
inline int64_t NormAxis(int64_t a, size_t rank) { return a < 0 ? a + static_cast<int64_t>(rank) : a; }

// A tensor of type `t` and dims `d`; one of type `t` with nothing else known.
InferredValue TensorInfo(DataType t, Dims d);
InferredValue Unknown(DataType t);

// The elements of a small int64 tensor: its known values, else its symbolic ones.
bool SymOf(const InferredValue* i, std::vector<SymbolicElement>* out);

}  // namespace inferloop::shape_rules
