// Shape rules of the ops that make or move shapes: Constant, ConstantOfShape, Shape, Size,
// Reshape, Flatten, Transpose, Squeeze / Unsqueeze, Concat, Gather, Slice, Expand, Tile, Pad,
// Split, DepthToSpace / SpaceToDepth, NonZero. Shape, Gather, Slice, Concat, Squeeze / Unsqueeze
// and Reshape carry the values (known or symbolic) of small int64 tensors: shape arithmetic.
#include <algorithm>
#include <set>
#include <string>

#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using namespace shape_rules;

// Constant: the tensor attribute, value_int(s) (with values) or value_float(s).
void InferConstant(ShapeContext& c) {
  const Node& n = c.node();
  const Attribute* a = n.attributes.empty() ? nullptr : &n.attributes[0];
  if (!a) return;
  if (a->type == Attribute::Type::kTensor || a->type == Attribute::Type::kSparseTensor) {
    c.OutConstant(a->t);
  } else if (a->name == "value_int") {
    InferredValue o = TensorInfo(DataType::kInt64, {});
    o.has_value = true;
    o.value = {a->i};
    c.Out(0, o);
  } else if (a->name == "value_ints") {
    InferredValue o = TensorInfo(DataType::kInt64, {Fixed(static_cast<int64_t>(a->ints.size()))});
    o.has_value = true;
    o.value = a->ints;
    c.Out(0, o);
  } else if (a->name == "value_float") {
    c.Out(0, TensorInfo(DataType::kFloat, {}));
  } else if (a->name == "value_floats") {
    c.Out(0, TensorInfo(DataType::kFloat, {Fixed(static_cast<int64_t>(a->floats.size()))}));
  }
}

// ConstantOfShape: the dims are X's values; dtype of attribute value (float32 without one).
void InferConstantOfShape(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  if (!x.has_value) return;
  Dims d;
  for (int64_t v : x.value) d.push_back(Fixed(v));
  DataType t = DataType::kFloat;
  if (const Attribute* a = c.node().FindAttribute("value")) t = a->t.dtype();
  c.Out(0, TensorInfo(t, d));
}

// Shape: X's dims [start, end) as values, known or symbolic.
void InferShape(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue* x = c.In(0);
  if (!x || !x->has_shape) { c.Out(0, Unknown(DataType::kInt64)); return; }
  int64_t r = static_cast<int64_t>(x->dims.size());
  int64_t start = n.FindAttribute("start") ? n.FindAttribute("start")->i : 0;
  int64_t end = n.FindAttribute("end") ? n.FindAttribute("end")->i : r;
  start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
  int64_t len = std::max<int64_t>(0, end - start);
  InferredValue o = TensorInfo(DataType::kInt64, {Fixed(len)});
  o.has_value = true;
  for (int64_t k = start; k < end; ++k) {
    if (!Known(x->dims[k])) { o.has_value = false; break; }
    o.value.push_back(x->dims[k].value);
  }
  if (!o.has_value) o.value.clear();
  o.has_sym = true;
  for (int64_t k = start; k < end; ++k) o.sym.push_back({Known(x->dims[k]), x->dims[k].value, x->dims[k]});
  c.Out(0, o);
}

// Size: an int64 scalar, with its value when X's dims are known (X may be unknown: made by an op
// of a domain without rules).
void InferSize(ShapeContext& c) {
  const InferredValue* x = c.In(0);
  InferredValue o = TensorInfo(DataType::kInt64, {});
  if (x != nullptr && AllKnown(*x)) {
    int64_t count = 1;
    for (auto& d : x->dims) count *= d.value;
    o.has_value = true;
    o.value = {count};
  }
  c.Out(0, o);
}

// Reshape's output dims for a target whose entries may be symbolic: 0 copies the input dim
// (unless allowzero), -1 is solved when the other entries' fixed product and symbols cancel
// against the input's.
Dims ReshapeDims(const InferredValue& x, const std::vector<SymbolicElement>& target, bool allowzero) {
  Dims d;
  int neg = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    const SymbolicElement& t = target[k];
    if (!t.literal) d.push_back(t.dim);
    else if (t.value == 0 && !allowzero) d.push_back(x.has_shape && k < x.dims.size() ? x.dims[k] : Dim{});
    else if (t.value == -1) { neg = static_cast<int>(k); d.push_back(Dim{}); }
    else d.push_back(t.value >= 0 ? Fixed(t.value) : Dim{});
  }
  if (neg < 0 || !x.has_shape) return d;
  int64_t in_known = 1, out_known = 1;
  std::multiset<std::string> in_sym, out_sym;
  for (const Dim& v : x.dims) {
    if (Known(v)) in_known *= v.value;
    else if (!v.symbol.empty()) in_sym.insert(v.symbol);
    else return d;
  }
  for (size_t k = 0; k < d.size(); ++k) {
    if (static_cast<int>(k) == neg) continue;
    if (Known(d[k])) out_known *= d[k].value;
    else if (!d[k].symbol.empty()) out_sym.insert(d[k].symbol);
    else return d;
  }
  if (in_sym != out_sym || out_known <= 0 || in_known % out_known != 0) return d;
  d[neg] = Fixed(in_known / out_known);
  return d;
}

// Reshape to a known or symbolic target shape; X's values carry over.
void InferReshape(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const InferredValue* s = c.In(1);
  const bool allowzero = n.FindAttribute("allowzero") && n.FindAttribute("allowzero")->i;
  std::vector<SymbolicElement> target;
  if (s && !s->has_value && SymOf(s, &target)) {
    c.Out(0, TensorInfo(x.dtype, ReshapeDims(x, target, allowzero)));
    return;
  }
  if (!s || !s->has_value) { c.Out(0, Unknown(x.dtype)); return; }
  Dims d;
  int neg = -1;
  for (size_t k = 0; k < s->value.size(); ++k) {
    int64_t v = s->value[k];
    if (v == 0 && !allowzero) d.push_back(x.has_shape && k < x.dims.size() ? x.dims[k] : Dim{});
    else if (v == -1) { neg = static_cast<int>(k); d.push_back(Dim{}); }
    else d.push_back(Fixed(v));
  }
  if (neg >= 0 && AllKnown(x)) {
    int64_t total = 1, rest = 1;
    for (auto& dd : x.dims) total *= dd.value;
    bool ok = true;
    for (size_t k = 0; k < d.size(); ++k)
      if (static_cast<int>(k) != neg) { if (!Known(d[k])) ok = false; else rest *= d[k].value; }
    if (ok && rest > 0) d[neg] = Fixed(total / rest);
  }
  InferredValue o = TensorInfo(x.dtype, d);
  if (x.has_value) { o.has_value = true; o.value = x.value; }
  c.Out(0, o);
}

// Flatten: [prod(dims before axis), prod(dims from axis)].
void InferFlatten(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  int64_t axis = NormAxis(c.node().FindAttribute("axis") ? c.node().FindAttribute("axis")->i : 1, r);
  Dim a = Fixed(1), b = Fixed(1);
  for (size_t k = 0; k < r; ++k) {
    Dim& t = static_cast<int64_t>(k) < axis ? a : b;
    t = (Known(t) && Known(x.dims[k])) ? Fixed(t.value * x.dims[k].value) : Dim{};
  }
  c.Out(0, TensorInfo(x.dtype, {a, b}));
}

// Transpose by perm (reversed dims without one).
void InferTranspose(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  std::vector<int64_t> perm = c.node().FindAttribute("perm") ? c.node().FindAttribute("perm")->ints : std::vector<int64_t>{};
  if (perm.empty()) for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  Dims d;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r)) return;
    d.push_back(x.dims[p]);
  }
  c.Out(0, TensorInfo(x.dtype, d));
}

// Unsqueeze inserts 1s at axes; Squeeze drops axes (all 1s without axes). Values carry over.
void InferSqueezeUnsqueeze(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  std::vector<int64_t> axes;
  if (!c.Axes(1, &axes)) { c.Out(0, Unknown(x.dtype)); return; }
  Dims d;
  if (c.node().op_type == "Unsqueeze") {
    size_t out_r = r + axes.size();
    std::set<int64_t> ax;
    for (int64_t a : axes) ax.insert(NormAxis(a, out_r));
    size_t src = 0;
    for (size_t k = 0; k < out_r; ++k) d.push_back(ax.count(static_cast<int64_t>(k)) ? Fixed(1) : x.dims[src++]);
  } else {
    std::set<int64_t> ax;
    for (int64_t a : axes) ax.insert(NormAxis(a, r));
    for (size_t k = 0; k < r; ++k) {
      if (axes.empty() ? x.dims[k].value == 1 : ax.count(static_cast<int64_t>(k)) > 0) continue;
      if (axes.empty() && !Known(x.dims[k])) { c.Out(0, Unknown(x.dtype)); return; }
      d.push_back(x.dims[k]);
    }
  }
  InferredValue o = TensorInfo(x.dtype, d);
  if (x.has_value) { o.has_value = true; o.value = x.value; }
  if (x.has_sym && d.size() <= 1) { o.has_sym = true; o.sym = x.sym; }
  c.Out(0, o);
}

// Concat along axis; 1-D inputs' values (known or symbolic) concatenate.
void InferConcat(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0, r);
  Dims d = x.dims;
  bool vals = true, syms = true;
  std::vector<int64_t> v;
  std::vector<SymbolicElement> sv;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const InferredValue* in = c.In(i);
    if (!in || !in->has_shape || in->dims.size() != r) { c.Out(0, Unknown(x.dtype)); return; }
    if (i) d[axis] = (Known(d[axis]) && Known(in->dims[axis])) ? Fixed(d[axis].value + in->dims[axis].value) : Dim{};
    if (in->has_value) v.insert(v.end(), in->value.begin(), in->value.end());
    else vals = false;
    std::vector<SymbolicElement> part;
    if (syms && SymOf(in, &part)) sv.insert(sv.end(), part.begin(), part.end());
    else syms = false;
  }
  InferredValue o = TensorInfo(x.dtype, d);
  if (vals && r == 1) { o.has_value = true; o.value = v; }
  if (syms && r == 1) { o.has_sym = true; o.sym = sv; }
  c.Out(0, o);
}

// Gather along axis; on a 1-D X with known indices the values (known or symbolic) are gathered.
void InferGather(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  const InferredValue* idx = c.In(1);
  if (!idx || !idx->has_shape) { c.Out(0, Unknown(x.dtype)); return; }
  int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0, r);
  if (axis < 0 || axis >= static_cast<int64_t>(r)) return;
  Dims d(x.dims.begin(), x.dims.begin() + axis);
  d.insert(d.end(), idx->dims.begin(), idx->dims.end());
  d.insert(d.end(), x.dims.begin() + axis + 1, x.dims.end());
  InferredValue o = TensorInfo(x.dtype, d);
  if (x.has_value && idx->has_value && r == 1) {
    o.has_value = true;
    for (int64_t k : idx->value) {
      int64_t kk = k < 0 ? k + static_cast<int64_t>(x.value.size()) : k;
      if (kk < 0 || kk >= static_cast<int64_t>(x.value.size())) { o.has_value = false; break; }
      o.value.push_back(x.value[kk]);
    }
    if (!o.has_value) o.value.clear();
  }
  std::vector<SymbolicElement> xs;
  if (!o.has_value && idx->has_value && r == 1 && SymOf(&x, &xs)) {
    o.has_sym = true;
    for (int64_t k : idx->value) {
      int64_t kk = k < 0 ? k + static_cast<int64_t>(xs.size()) : k;
      if (kk < 0 || kk >= static_cast<int64_t>(xs.size())) { o.has_sym = false; break; }
      o.sym.push_back(xs[kk]);
    }
    if (!o.has_sym) o.sym.clear();
  }
  c.Out(0, o);
}

// Slice by attributes (old opsets) or known inputs starts, ends, axes, steps; a 1-D X's values
// are sliced too. Unknown bounds keep the rank only.
void InferSlice(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (const Attribute* a = n.FindAttribute("starts")) {
    starts = a->ints;
    ends = n.FindAttribute("ends") ? n.FindAttribute("ends")->ints : std::vector<int64_t>{};
    axes = n.FindAttribute("axes") ? n.FindAttribute("axes")->ints : std::vector<int64_t>{};
  } else {
    const InferredValue *s = c.In(1), *e = c.In(2), *a3 = c.In(3), *st = c.In(4);
    if (!s || !e || !s->has_value || !e->has_value || (a3 && !a3->has_value) || (st && !st->has_value)) {
      c.Out(0, TensorInfo(x.dtype, Dims(r, Dim{})));  // rank is still known
      return;
    }
    starts = s->value;
    ends = e->value;
    if (a3) axes = a3->value;
    if (st) steps = st->value;
  }
  if (axes.empty()) for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return;
  Dims d = x.dims;
  std::vector<int64_t> sliced_value;
  bool value_ok = x.has_value && r == 1;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t ax = NormAxis(axes[k], r);
    if (ax < 0 || ax >= static_cast<int64_t>(r) || steps[k] == 0) return;
    if (!Known(x.dims[ax])) { d[ax] = Dim{}; value_ok = false; continue; }
    int64_t dim = x.dims[ax].value, st = starts[k], en = ends[k], step = steps[k];
    if (st < 0) st += dim;
    if (en < 0) en += dim;
    if (step > 0) {
      st = std::clamp(st, int64_t{0}, dim);
      en = std::clamp(en, int64_t{0}, dim);
      d[ax] = Fixed(en > st ? (en - st + step - 1) / step : 0);
    } else {
      st = std::clamp(st, int64_t{-1}, dim - 1);
      en = std::clamp(en, int64_t{-1}, dim - 1);
      d[ax] = Fixed(st > en ? (st - en - step - 1) / (-step) : 0);
    }
    if (value_ok) for (int64_t i = st; step > 0 ? i < en : i > en; i += step) sliced_value.push_back(x.value[i]);
  }
  InferredValue o = TensorInfo(x.dtype, d);
  if (value_ok) { o.has_value = true; o.value = sliced_value; }
  c.Out(0, o);
}

// Expand: X broadcast with a known shape.
void InferExpand(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  const InferredValue* s = c.In(1);
  if (!s || !s->has_value) { c.Out(0, Unknown(x.dtype)); return; }
  InferredValue shape_info;
  shape_info.has_shape = true;
  for (int64_t v : s->value) shape_info.dims.push_back(Fixed(v));
  Dims d;
  if (BroadcastAll({&x, &shape_info}, &d)) c.Out(0, TensorInfo(x.dtype, d));
}

// Tile: each dim times its known repeat count.
void InferTile(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  const InferredValue* rep = c.In(1);
  if (!rep || !rep->has_value || rep->value.size() != r) { c.Out(0, Unknown(x.dtype)); return; }
  Dims d = x.dims;
  for (size_t k = 0; k < r; ++k) d[k] = Known(d[k]) ? Fixed(d[k].value * rep->value[k]) : Dim{};
  c.Out(0, TensorInfo(x.dtype, d));
}

// Pad: each padded axis grows by its begin and end pads (attribute or known input).
void InferPad(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  std::vector<int64_t> pads;
  if (const Attribute* a = n.FindAttribute("pads")) pads = a->ints;
  else if (c.In(1) && c.In(1)->has_value) pads = c.In(1)->value;
  else { c.Out(0, TensorInfo(x.dtype, Dims(r, Dim{}))); return; }
  std::vector<int64_t> axes;
  const InferredValue* ai = c.In(3);
  if (ai && ai->has_value) axes = ai->value;
  else for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
  if (pads.size() != 2 * axes.size()) return;
  Dims d = x.dims;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t ax = NormAxis(axes[k], r);
    if (ax < 0 || ax >= static_cast<int64_t>(r)) return;
    d[ax] = Known(d[ax]) ? Fixed(d[ax].value + pads[k] + pads[k + axes.size()]) : Dim{};
  }
  c.Out(0, TensorInfo(x.dtype, d));
}

// Split along axis by the split attribute / known input, else into equal chunks.
void InferSplit(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0, r);
  if (axis < 0 || axis >= static_cast<int64_t>(r)) return;
  std::vector<int64_t> sizes;
  // Split lengths given as an input whose values are unknown: the output sizes are unknown.
  const bool split_input = n.inputs.size() > 1 && !n.inputs[1].empty();
  if (const Attribute* a = n.FindAttribute("split")) sizes = a->ints;
  else if (c.In(1) && c.In(1)->has_value) sizes = c.In(1)->value;
  const size_t outs = n.outputs.size();
  if (sizes.empty() && !split_input && Known(x.dims[axis]) && outs) {
    int64_t dim = x.dims[axis].value, chunk = (dim + static_cast<int64_t>(outs) - 1) / static_cast<int64_t>(outs);
    for (size_t k = 0; k < outs; ++k) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * static_cast<int64_t>(k))));
  }
  for (size_t k = 0; k < outs; ++k) {
    Dims d = x.dims;
    d[axis] = k < sizes.size() ? Fixed(sizes[k]) : Dim{};
    c.Out(k, TensorInfo(x.dtype, d));
  }
}

// DepthToSpace / SpaceToDepth on 4-D X by blocksize.
void InferDepthSpace(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  int64_t b = n.FindAttribute("blocksize") ? n.FindAttribute("blocksize")->i : 1;
  if (x.dims.size() != 4 || b <= 0) return;
  Dims d = x.dims;
  auto mul = [](const Dim& a, int64_t f) { return Known(a) ? Fixed(a.value * f) : Dim{}; };
  auto div = [](const Dim& a, int64_t f) { return Known(a) ? Fixed(a.value / f) : Dim{}; };
  if (n.op_type == "DepthToSpace") { d[1] = div(d[1], b * b); d[2] = mul(d[2], b); d[3] = mul(d[3], b); }
  else { d[1] = mul(d[1], b * b); d[2] = div(d[2], b); d[3] = div(d[3], b); }
  c.Out(0, TensorInfo(x.dtype, d));
}

// NonZero: int64, its shape depends on the data.
void InferNonZero(ShapeContext& c) {
  if (!c.In(0)->has_shape) { c.Out(0, Unknown(DataType::kInt64)); return; }
  for (size_t k = 0; k < c.node().outputs.size(); ++k) c.Out(k, Unknown(DataType::kUndefined));
}

}  // namespace

void RegisterShapeOpShapeRules(ShapeRuleRegistry& r) {
  r.Register("", "Constant", InferConstant, ShapeRuleInput::kAny);
  r.Register("", "Shape", InferShape, ShapeRuleInput::kAny);
  r.Register("", "Size", InferSize, ShapeRuleInput::kAny);
  r.Register("", "Reshape", InferReshape, ShapeRuleInput::kPresent);
  r.Register("", "NonZero", InferNonZero, ShapeRuleInput::kPresent);
  r.Register("", "ConstantOfShape", InferConstantOfShape);
  r.Register("", "Flatten", InferFlatten);
  r.Register("", "Transpose", InferTranspose);
  r.Register("", "Squeeze", InferSqueezeUnsqueeze);
  r.Register("", "Unsqueeze", InferSqueezeUnsqueeze);
  r.Register("", "Concat", InferConcat);
  r.Register("", "Gather", InferGather);
  r.Register("", "Slice", InferSlice);
  r.Register("", "Expand", InferExpand);
  r.Register("", "Tile", InferTile);
  r.Register("", "Pad", InferPad);
  r.Register("", "Split", InferSplit);
  r.Register("", "DepthToSpace", InferDepthSpace);
  r.Register("", "SpaceToDepth", InferDepthSpace);
}

}  // namespace inferloop
