// DeadNodeElimination: removes nodes none of whose outputs is read (by a node, a subgraph or
// as a graph output), last to first so chains go in one run, then initializers nothing reads
// (an initializer that is also a graph input stays: it is part of the model's interface).
#include "optimizer/graph_editor.h"
#include "optimizer/passes.h"

namespace inferloop {
namespace {

class DeadNodeElimination : public GraphPass {
 public:
  std::string name() const override { return "DeadNodeElimination"; }

  Result<int> Apply(Model& model, const PassContext& ctx) const override {
    GraphEditor ed(model, ctx);
    int rewrites = 0;
    for (int i = ed.num_nodes() - 1; i >= 0; --i) {
      bool used = false;
      for (const auto& o : ed.node(i).outputs)
        if (!o.empty() && !ed.Unused(o)) used = true;
      if (used) continue;
      ed.RemoveNode(i);
      ++rewrites;
    }
    rewrites += ed.RemoveUnusedInitializers();
    ed.Commit();
    return rewrites;
  }
};

}  // namespace

std::unique_ptr<GraphPass> MakeDeadNodeEliminationPass() { return std::make_unique<DeadNodeElimination>(); }

}  // namespace inferloop
