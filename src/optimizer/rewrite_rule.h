// RewriteRule: one local graph rewrite, tried at a node (as ONNX Runtime's rewrite rules), and
// the one driver that applies a list of rules to the main graph as a GraphPass.
//
// Contract of a rule: it names the ai.onnx op types it looks at (none: every node, any domain);
// try_rewrite(ed, i) is called only for node i still in the graph and of one of those types,
// checks the whole pattern, and either rewrites it through the editor and returns true, or
// returns false having changed nothing the next rule could see. Rules with preconditions for
// the whole sweep (a kernel set, types inferred on the unedited graph) give the pass a `ready`
// check instead.
//
// The driver makes one sweep, first node to last: at each node still in the graph it tries the
// rules in list order and stops at the first that rewrites; it commits the editor at the end.
// Repeating passes until nothing changes is OptimizeModel's loop (optimizer.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "optimizer/graph_editor.h"
#include "optimizer/graph_pass.h"

namespace inferloop {

struct RewriteRule {
  std::vector<std::string> op_types;  // ai.onnx ops the rule is tried on; empty: every node
  bool (*try_rewrite)(GraphEditor& ed, int node) = nullptr;
};

// One sweep of `rules` over the editor's graph, then Commit(); returns how many rewrites.
int ApplyRewriteRules(GraphEditor& ed, const std::vector<RewriteRule>& rules);

// A pass named `name` that is one sweep of `rules`. `ready` (optional) runs first, on the
// unedited graph; when it returns false the pass does nothing and reports 0 rewrites.
std::unique_ptr<GraphPass> MakeRewritePass(std::string name, std::vector<RewriteRule> rules,
                                           bool (*ready)(GraphEditor& ed) = nullptr);

}  // namespace inferloop
