#include "graph/shape_rules/dims.h"

#include <algorithm>

namespace inferloop::shape_rules {

bool SameDim(const Dim& a, const Dim& b) {
  if (Known(a) || Known(b)) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

bool AllKnown(const InferredValue& i) {
  if (!i.has_shape) return false;
  for (const auto& d : i.dims)
    if (!Known(d)) return false;
  return true;
}

Dim Broadcast(const Dim& a, const Dim& b) {
  if (a.value == 1) return b;
  if (b.value == 1) return a;
  if (Known(a)) return a;
  if (Known(b)) return b;
  if (SameDim(a, b)) return a;
  return Dim{};
}

bool BroadcastAll(const std::vector<const InferredValue*>& ins, Dims* out) {
  size_t rank = 0;
  for (auto* i : ins) {
    if (!i || !i->has_shape) return false;
    rank = std::max(rank, i->dims.size());
  }
  out->assign(rank, Fixed(1));
  for (auto* i : ins)
    for (size_t k = 0; k < i->dims.size(); ++k) {
      Dim& o = (*out)[rank - i->dims.size() + k];
      o = Broadcast(o, i->dims[k]);
    }
  return true;
}

InferredValue TensorInfo(DataType t, Dims d) {
  InferredValue i;
  i.dtype = t;
  i.has_shape = true;
  i.dims = std::move(d);
  return i;
}

InferredValue Unknown(DataType t) {
  InferredValue i;
  i.dtype = t;
  return i;
}

bool SymOf(const InferredValue* i, std::vector<SymbolicElement>* out) {
  if (!i) return false;
  if (i->has_value) {
    out->clear();
    for (int64_t v : i->value) out->push_back({true, v, Dim{}});
    return true;
  }
  if (!i->has_sym) return false;
  *out = i->sym;
  return true;
}

}  // namespace inferloop::shape_rules
