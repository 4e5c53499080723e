#include "runtime/memory_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace inferloop {
namespace {

constexpr size_t kAlign = 64;

// Ops whose output element i is a function of the inputs' elements at i only, and which inputs
// may give their memory to the output. The kernels must honour kernel.h's AllocateUninit note.
struct InPlaceRule {
  const char* op;
  int candidates;  // inputs 0..candidates-1 may be overwritten
};
constexpr InPlaceRule kInPlaceOps[] = {
    {"Relu", 1},     {"LeakyRelu", 1},  {"Sigmoid", 1},  {"Tanh", 1},      {"Exp", 1},     {"Log", 1},
    {"Neg", 1},      {"Abs", 1},        {"Sqrt", 1},     {"Reciprocal", 1}, {"Erf", 1},     {"Elu", 1},
    {"Selu", 1},     {"Celu", 1},       {"HardSigmoid", 1}, {"HardSwish", 1}, {"Softplus", 1}, {"Softsign", 1},
    {"Floor", 1},    {"Ceil", 1},       {"Round", 1},    {"Sin", 1},       {"Cos", 1},     {"Gelu", 1},
    {"Mish", 1},     {"ThresholdedRelu", 1}, {"Sign", 1}, {"Clip", 1},     {"PRelu", 1},
    {"Add", 2},      {"Sub", 2},        {"Mul", 2},      {"Div", 2},       {"Pow", 1},
};

int InPlaceCandidates(const std::string& domain, const std::string& op) {
  if (!domain.empty() && domain != "com.inferloop") return 0;
  for (const auto& r : kInPlaceOps)
    if (op == r.op) return (domain.empty() || op == "Gelu") ? r.candidates : 0;
  return 0;
}

struct SlotType {
  bool known = false;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  int64_t elements = 0;
  size_t bytes = 0;  // rounded up to kAlign
};

SlotType TypeOf(const ShapeInferenceResult& shapes, const std::string& name) {
  SlotType st;
  auto it = shapes.types.find(name);
  if (it == shapes.types.end()) return st;
  const TypeInfo& t = it->second;
  if (t.kind != TypeInfo::Kind::kTensor || !t.has_shape || t.elem_type == DataType::kUndefined ||
      t.elem_type == DataType::kString)
    return st;
  Shape shape;
  for (const auto& d : t.dims) {
    if (d.value < 0) return st;
    shape.push_back(d.value);
  }
  int64_t n = ShapeElementCount(shape);
  if (n < 0) return st;
  const size_t esize = DataTypeSize(t.elem_type);
  if (esize == 0 || static_cast<uint64_t>(n) > (std::numeric_limits<size_t>::max() / 2) / esize) return st;
  st.known = true;
  st.dtype = t.elem_type;
  st.shape = std::move(shape);
  st.elements = n;
  st.bytes = std::max<size_t>((static_cast<size_t>(n) * esize + kAlign - 1) / kAlign * kAlign, kAlign);
  return st;
}

// Free blocks of the arena being laid out: best fit, merging neighbours, growing at the end.
class FreeList {
 public:
  size_t Take(size_t bytes) {
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
    size_t off;
    if (best != free_.end()) {
      off = best->first;
      size_t rest = best->second - bytes;
      free_.erase(best);
      if (rest) free_[off + bytes] = rest;
    } else if (!free_.empty() && std::prev(free_.end())->first + std::prev(free_.end())->second == size_) {
      auto last = std::prev(free_.end());  // extend the free tail block
      off = last->first;
      free_.erase(last);
      size_ = off + bytes;
    } else {
      off = size_;
      size_ += bytes;
    }
    return off;
  }
  void Give(size_t off, size_t len) {
    auto next = free_.lower_bound(off);
    if (next != free_.end() && off + len == next->first) {
      len += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        prev->second += len;
        return;
      }
    }
    free_[off] = len;
  }
  size_t size() const { return size_; }

 private:
  std::map<size_t, size_t> free_;  // offset -> length
  size_t size_ = 0;
};

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(int a, int b) { parent[Find(a)] = Find(b); }
};

}  // namespace

bool IsInPlaceOp(const std::string& domain, const std::string& op_type) { return InPlaceCandidates(domain, op_type) > 0; }

ArenaLayout PlanArena(const ExecutionPlan& plan, const ShapeInferenceResult& shapes,
                      const std::vector<std::pair<int, int>>& aliases, bool in_place) {
  const size_t n = plan.num_slots();
  const int steps = static_cast<int>(plan.num_steps());
  const int kNever = std::numeric_limits<int>::max();
  ArenaLayout layout;
  layout.slots.resize(n);

  std::vector<int> def(n, -1), last(n, -1);
  for (int p = 0; p < steps; ++p) {
    for (int s : plan.step_outputs(p))
      if (s >= 0) def[s] = p;
    for (int s : plan.step_releases(p)) last[s] = p;
  }
  std::vector<bool> graph_output(n, false), no_arena(n, false);
  for (const ValueRef& r : plan.output_refs())
    if (r.depth == 0 && r.slot >= 0) graph_output[r.slot] = true;

  // Groups of slots sharing one buffer.
  UnionFind uf(n);
  for (const auto& [a, b] : aliases) {
    if (a < 0 || a >= static_cast<int>(n)) continue;
    if (b < 0 || b >= static_cast<int>(n)) no_arena[a] = true;  // source unknown: leave it to the heap
    else uf.Union(a, b);
  }
  std::vector<SlotType> types(n);
  for (size_t s = 0; s < n; ++s)
    if (def[s] >= 0) types[s] = TypeOf(shapes, plan.slot_name(static_cast<int>(s)));

  // Per group: root (the member defined first), end (last use of any member), placeable.
  std::vector<int> root(n, -1), end(n, -1);
  std::vector<bool> placeable(n, true);
  for (size_t s = 0; s < n; ++s) {
    const int g = uf.Find(static_cast<int>(s));
    const int e = def[s] < 0 ? kNever : (last[s] < 0 ? kNever : last[s]);
    if (def[s] < 0 || graph_output[s] || no_arena[s]) placeable[g] = false;
    end[g] = std::max(end[g], e);
    if (def[s] >= 0 && (root[g] < 0 || def[s] < def[root[g]])) root[g] = static_cast<int>(s);
  }
  for (size_t s = 0; s < n; ++s) {
    const int g = uf.Find(static_cast<int>(s));
    if (static_cast<int>(s) != g) continue;
    if (root[g] < 0 || !types[root[g]].known || end[g] == kNever) placeable[g] = false;
  }
  // A view must fit in the block of the value it views.
  for (size_t s = 0; s < n; ++s) {
    const int g = uf.Find(static_cast<int>(s));
    if (placeable[g] && def[s] >= 0 && types[s].known && types[s].bytes > types[root[g]].bytes) placeable[g] = false;
  }

  std::vector<std::vector<int>> ends_at(steps);
  for (size_t s = 0; s < n; ++s) {
    const int g = uf.Find(static_cast<int>(s));
    if (static_cast<int>(s) == g && placeable[g] && end[g] < steps) ends_at[end[g]].push_back(g);
  }

  FreeList arena;
  std::vector<int64_t> block_off(n, -1);   // by group
  std::vector<size_t> block_len(n, 0);
  std::vector<bool> handed_on(n, false);   // block passed to an in-place output
  size_t live = 0;
  for (int p = 0; p < steps; ++p) {
    const auto& outs = plan.step_outputs(p);
    for (int o : outs) {
      if (o < 0) continue;
      const int g = uf.Find(o);
      if (root[g] != o) continue;
      if (!placeable[g]) {
        if (!types[o].known) ++layout.unplanned;  // its size depends on data
        continue;
      }
      const SlotType& t = types[o];
      int64_t off = -1;
      if (in_place && outs.size() == 1) {
        const Node& node = plan.step_node(p);
        const int cands = InPlaceCandidates(node.domain, node.op_type);
        const auto& ins = plan.step_inputs(p);
        for (int k = 0; k < cands && k < static_cast<int>(ins.size()) && off < 0; ++k) {
          const ValueRef& r = ins[k];
          if (r.depth != 0 || r.slot < 0) continue;
          const int ig = uf.Find(r.slot);
          if (!placeable[ig] || block_off[ig] < 0 || handed_on[ig] || end[ig] != p) continue;
          const SlotType& it = types[r.slot];
          if (!it.known || it.elements != t.elements || DataTypeSize(it.dtype) != DataTypeSize(t.dtype)) continue;
          if (block_len[ig] < t.bytes) continue;
          off = block_off[ig];
          block_len[g] = block_len[ig];
          handed_on[ig] = true;
          layout.slots[o].reuses_input = true;
        }
      }
      if (off < 0) {
        off = static_cast<int64_t>(arena.Take(t.bytes));
        block_len[g] = t.bytes;
        live += t.bytes;
        layout.peak_bytes = std::max(layout.peak_bytes, live);
      }
      block_off[g] = off;
      layout.naive_bytes += t.bytes;
    }
    for (int g : ends_at[p]) {
      if (block_off[g] < 0 || handed_on[g]) continue;
      arena.Give(static_cast<size_t>(block_off[g]), block_len[g]);
      live -= block_len[g];
    }
  }
  layout.arena_bytes = arena.size();

  for (size_t s = 0; s < n; ++s) {
    const int g = uf.Find(static_cast<int>(s));
    if (def[s] < 0 || block_off[g] < 0) continue;
    SlotPlacement& pl = layout.slots[s];
    pl.offset = block_off[g];
    pl.bytes = block_len[g];
    pl.dtype = types[s].dtype;
    pl.shape = types[s].shape;
    if (root[g] != static_cast<int>(s)) pl.alias_of = root[g];
    ++layout.planned;
  }
  return layout;
}

MemoryPlan PlanMemory(const ExecutionPlan& plan, const ShapeInferenceResult& shapes) {
  ArenaLayout layout = PlanArena(plan, shapes);
  MemoryPlan mp;
  mp.arena_bytes = layout.arena_bytes;
  mp.peak_bytes = layout.peak_bytes;
  mp.naive_bytes = layout.naive_bytes;
  mp.planned = layout.planned;
  mp.unplanned = layout.unplanned;
  for (size_t s = 0; s < layout.slots.size(); ++s) {
    const SlotPlacement& p = layout.slots[s];
    if (p.offset >= 0 && p.alias_of < 0) mp.blocks.push_back({plan.slot_name(static_cast<int>(s)), static_cast<size_t>(p.offset), p.bytes});
  }
  return mp;
}

}  // namespace inferloop
