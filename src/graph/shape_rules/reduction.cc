// Shape rules of the reductions: Reduce*, ArgMax / ArgMin, TopK.
#include <set>

#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using namespace shape_rules;

// Reduce* over the attribute / input axes (all when empty, unless noop_with_empty_axes); ArgMax
// and ArgMin over attribute axis, int64. keepdims keeps reduced axes as 1.
void InferReduce(ShapeContext& c) {
  const Node& n = c.node();
  const std::string& op = n.op_type;
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  bool keep = !n.FindAttribute("keepdims") || n.FindAttribute("keepdims")->i != 0;
  std::vector<int64_t> axes;
  DataType t = (op == "ArgMax" || op == "ArgMin") ? DataType::kInt64 : x.dtype;
  if (op == "ArgMax" || op == "ArgMin") axes = {n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0};
  else if (!c.Axes(1, &axes)) { c.Out(0, Unknown(t)); return; }
  bool noop = n.FindAttribute("noop_with_empty_axes") && n.FindAttribute("noop_with_empty_axes")->i;
  if (axes.empty() && noop) { c.Out(0, TensorInfo(t, x.dims)); return; }
  std::set<int64_t> ax;
  for (int64_t a : axes) ax.insert(NormAxis(a, r));
  Dims d;
  for (size_t k = 0; k < r; ++k) {
    bool reduced = axes.empty() || ax.count(static_cast<int64_t>(k));
    if (!reduced) d.push_back(x.dims[k]);
    else if (keep) d.push_back(Fixed(1));
  }
  c.Out(0, TensorInfo(t, d));
}

// ArgMax / ArgMin: int64 even when X's shape is unknown.
void InferArgExtreme(ShapeContext& c) {
  if (!c.In(0)->has_shape) { c.Out(0, Unknown(DataType::kInt64)); return; }
  InferReduce(c);
}

// TopK: X's shape with `axis` K long (unknown unless K is known); indices int64.
void InferTopK(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  const InferredValue* k = c.In(1);
  int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : -1, r);
  if (axis < 0 || axis >= static_cast<int64_t>(r)) return;
  Dims d = x.dims;
  d[axis] = k && k->has_value && k->value.size() == 1 ? Fixed(k->value[0]) : Dim{};
  c.Out(0, TensorInfo(x.dtype, d));
  c.Out(1, TensorInfo(DataType::kInt64, d));
}

}  // namespace

void RegisterReductionShapeRules(ShapeRuleRegistry& r) {
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                         "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
    r.Register("", op, InferReduce);
  r.Register("", "ArgMax", InferArgExtreme, ShapeRuleInput::kPresent);
  r.Register("", "ArgMin", InferArgExtreme, ShapeRuleInput::kPresent);
  r.Register("", "TopK", InferTopK);
}

}  // namespace inferloop
