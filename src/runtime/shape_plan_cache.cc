#include "runtime/shape_plan_cache.h"

#include <algorithm>
#include <map>
#include <string>

#include "graph/shape_inference.h"
#include "runtime/memory_plan.h"

namespace inferloop {

namespace {
// Ops whose kernels return a view of input 0 (same buffer): planned as one block from the
// start, so the first run need not discover it.
bool IsViewOp(const Node& n) {
  if (!n.domain.empty()) return false;
  return n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze" ||
         n.op_type == "Identity";
}
constexpr int64_t kAbsentInput = -1;
constexpr int64_t kNonTensorInput = -2;
}  // namespace

ShapePlanCache::ShapePlanCache(const Model& model, const ExecutionPlan& plan, size_t capacity)
    : model_(model), plan_(plan), capacity_(std::max<size_t>(capacity, 1)) {
  for (size_t p = 0; p < plan.num_steps(); ++p) {
    const auto& ins = plan.step_inputs(p);
    const auto& outs = plan.step_outputs(p);
    if (IsViewOp(plan.step_node(p)) && !ins.empty() && !outs.empty() && outs[0] >= 0 && ins[0].depth == 0 && ins[0].slot >= 0)
      aliases_.emplace_back(outs[0], ins[0].slot);
  }
}

// Per graph input: dtype, rank, dims; or a marker for absent / non-tensor inputs.
std::vector<int64_t> ShapePlanCache::KeyOf(const Value* const* inputs) const {
  std::vector<int64_t> key;
  for (size_t i = 0; i < plan_.num_inputs(); ++i) {
    const Value* v = inputs[i];
    if (!v || v->is_none()) {
      key.push_back(kAbsentInput);
    } else if (!v->is_tensor()) {
      key.push_back(kNonTensorInput);
    } else {
      const Tensor& t = v->tensor();
      key.push_back(static_cast<int64_t>(t.dtype()));
      key.push_back(t.rank());
      for (int64_t d : t.shape()) key.push_back(d);
    }
  }
  return key;
}

bool ShapePlanCache::Matches(const std::vector<int64_t>& key, const Value* const* inputs) const {
  size_t k = 0;
  auto next = [&](int64_t want) { return k < key.size() && key[k++] == want; };
  for (size_t i = 0; i < plan_.num_inputs(); ++i) {
    const Value* v = inputs[i];
    if (!v || v->is_none()) {
      if (!next(kAbsentInput)) return false;
    } else if (!v->is_tensor()) {
      if (!next(kNonTensorInput)) return false;
    } else {
      const Tensor& t = v->tensor();
      if (!next(static_cast<int64_t>(t.dtype())) || !next(t.rank())) return false;
      for (int64_t d : t.shape())
        if (!next(d)) return false;
    }
  }
  return k == key.size();
}

std::shared_ptr<const ArenaLayout> ShapePlanCache::Build(const Value* const* inputs,
                                                         const std::vector<std::pair<int, int>>& aliases) const {
  std::map<std::string, Shape> shapes;
  for (size_t i = 0; i < plan_.num_inputs(); ++i)
    if (inputs[i] && inputs[i]->is_tensor()) shapes[plan_.input(i).name] = inputs[i]->tensor().shape();
  auto inferred = InferShapes(model_, shapes);
  if (!inferred.ok()) return std::make_shared<ArenaLayout>();  // run on the heap
  return std::make_shared<ArenaLayout>(PlanArena(plan_, *inferred, aliases));
}

std::shared_ptr<const ArenaLayout> ShapePlanCache::Get(const Value* const* inputs) {
  std::vector<std::pair<int, int>> aliases;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t e = 0; e < entries_.size(); ++e) {
      if (!Matches(entries_[e].key, inputs)) continue;
      if (entries_[e].generation != generation_) break;  // stale: rebuild below
      std::rotate(entries_.begin(), entries_.begin() + e, entries_.begin() + e + 1);
      return entries_.front().layout;
    }
    aliases = aliases_;
    generation = generation_;
  }
  // Build without the lock: shape inference can take a while on big graphs.
  Entry fresh{KeyOf(inputs), generation, Build(inputs, aliases)};
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t e = 0; e < entries_.size(); ++e)
    if (entries_[e].key == fresh.key) {
      entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(e));
      break;
    }
  entries_.insert(entries_.begin(), std::move(fresh));
  if (entries_.size() > capacity_) entries_.resize(capacity_);
  return entries_.front().layout;
}

void ShapePlanCache::ReportAlias(int slot, int source_slot) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& a : aliases_)
    if (a.first == slot && a.second == source_slot) return;
  aliases_.emplace_back(slot, source_slot);
  ++generation_;
}

void ShapePlanCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

int ShapePlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(entries_.size());
}

}  // namespace inferloop
