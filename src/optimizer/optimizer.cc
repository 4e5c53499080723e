#include "optimizer/optimizer.h"

#include <iomanip>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "graph/topological_sort.h"
#include "optimizer/passes.h"

namespace inferloop {
namespace {

// Orders the main graph's nodes topologically (stable) when it is a valid DAG: every value
// defined once and every explicit input defined. False (graph unchanged) otherwise.
bool SortTopologically(Graph& g) {
  auto order = TopologicalNodeOrder(g);
  if (!order.ok()) return false;
  std::vector<Node> sorted;
  sorted.reserve(g.nodes.size());
  for (int i : *order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  return true;
}

std::vector<std::unique_ptr<GraphPass>> PassesFor(int level, bool fuse_qdq) {
  std::vector<std::unique_ptr<GraphPass>> p;
  if (level <= 0) return p;
  // QDQ patterns first: constant folding would turn DequantizeLinear(int8 weights) into floats.
  if (level >= 2 && fuse_qdq) p.push_back(MakeQdqFusionPass());
  p.push_back(MakeConstantFoldingPass());
  p.push_back(MakeIdentityEliminationPass());
  p.push_back(MakeTransposeReshapeCancellationPass());
  p.push_back(MakeDeadNodeEliminationPass());
  if (level >= 2) {
    p.push_back(MakeConvBatchNormFoldingPass());
    p.push_back(MakeLayerNormFusionPass());
    p.push_back(MakeGeluFusionPass());
    p.push_back(MakeAttentionFusionPass());
    p.push_back(MakeMatMulAddFusionPass());
    p.push_back(MakeResidualAddFusionPass());
    p.push_back(MakeActivationFusionPass());
    p.push_back(MakeDeadNodeEliminationPass());
  }
  return p;
}

}  // namespace

std::map<std::string, int> CountOps(const Graph& g) {
  std::map<std::string, int> counts;
  for (const auto& n : g.nodes) ++counts[n.domain.empty() ? n.op_type : n.domain + ":" + n.op_type];
  return counts;
}

Result<OptimizeReport> OptimizeModel(Model& model, const OptimizeOptions& opts) {
  OptimizeReport report;
  report.ops_before = CountOps(model.graph);
  report.nodes_before = static_cast<int>(model.graph.nodes.size());
  auto finish = [&]() {
    report.ops_after = CountOps(model.graph);
    report.nodes_after = static_cast<int>(model.graph.nodes.size());
    return report;
  };
  if (opts.level <= 0) return finish();
  // Work on a copy (tensors share buffers) so a failing pass leaves the caller's model intact.
  Model work = model;
  if (!SortTopologically(work.graph)) {
    report.skipped = true;
    return finish();
  }
  PassContext ctx;
  ctx.registry = opts.registry;
  ctx.max_folding_growth_bytes = opts.max_folding_growth_bytes;
  auto passes = PassesFor(opts.level, opts.fuse_qdq);
  for (auto& p : passes) report.rewrites[p->name()] += 0;
  for (int it = 0; it < opts.max_iterations; ++it) {
    ++report.iterations;
    int changed = 0;
    for (auto& p : passes) {
      auto r = p->Apply(work, ctx);
      if (!r.ok()) return r.status().WithContext("optimizer pass " + p->name());
      report.rewrites[p->name()] += *r;
      changed += *r;
    }
    if (changed == 0) break;
  }
  if (opts.level >= 2) {  // layout last: the fusions above match plain-layout patterns only
    std::vector<std::unique_ptr<GraphPass>> layouts;
    if (opts.fuse_qdq) layouts.push_back(MakeInt8NhwcLayoutPass());
    layouts.push_back(MakeNchwcLayoutPass(opts.channel_block));
    for (auto& layout : layouts) {
      auto r = layout->Apply(work, ctx);
      if (!r.ok()) return r.status().WithContext("optimizer pass " + layout->name());
      report.rewrites[layout->name()] += *r;
    }
  }
  model = std::move(work);
  return finish();
}

std::string FormatOptimizeReport(const OptimizeReport& r) {
  std::set<std::string> ops;
  for (const auto& [k, v] : r.ops_before) ops.insert(k);
  for (const auto& [k, v] : r.ops_after) ops.insert(k);
  size_t w = 5;
  for (const auto& op : ops) w = std::max(w, op.size());
  std::ostringstream os;
  os << std::left << std::setw(static_cast<int>(w)) << "op" << std::right << std::setw(8) << "before" << std::setw(8)
     << "after" << "\n";
  auto get = [](const std::map<std::string, int>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  };
  for (const auto& op : ops)
    os << std::left << std::setw(static_cast<int>(w)) << op << std::right << std::setw(8) << get(r.ops_before, op)
       << std::setw(8) << get(r.ops_after, op) << "\n";
  os << std::left << std::setw(static_cast<int>(w)) << "total" << std::right << std::setw(8) << r.nodes_before
     << std::setw(8) << r.nodes_after;
  if (r.nodes_before > 0)
    os << "  (" << std::fixed << std::setprecision(1)
       << 100.0 * (r.nodes_before - r.nodes_after) / r.nodes_before << "% fewer)";
  os << "\n";
  return os.str();
}

}  // namespace inferloop
