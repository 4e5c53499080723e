#include "optimizer/rewrite_rule.h"

#include <algorithm>
#include <utility>

namespace inferloop {
namespace {

bool Targets(const RewriteRule& rule, const Node& n) {
  if (rule.op_types.empty()) return true;
  return n.domain.empty() && std::find(rule.op_types.begin(), rule.op_types.end(), n.op_type) != rule.op_types.end();
}

class RewritePass : public GraphPass {
 public:
  RewritePass(std::string name, std::vector<RewriteRule> rules, bool (*ready)(GraphEditor&))
      : name_(std::move(name)), rules_(std::move(rules)), ready_(ready) {}

  std::string name() const override { return name_; }

  Result<int> Apply(Model& model, const PassContext& ctx) const override {
    GraphEditor ed(model, ctx);
    if (ready_ && !ready_(ed)) return 0;
    return ApplyRewriteRules(ed, rules_);
  }

 private:
  std::string name_;
  std::vector<RewriteRule> rules_;
  bool (*ready_)(GraphEditor&);
};

}  // namespace

int ApplyRewriteRules(GraphEditor& ed, const std::vector<RewriteRule>& rules) {
  int rewrites = 0;
  for (int i = 0; i < ed.num_nodes(); ++i) {
    if (ed.removed(i)) continue;
    for (const RewriteRule& rule : rules)
      if (Targets(rule, ed.node(i)) && rule.try_rewrite(ed, i)) {
        ++rewrites;
        break;
      }
  }
  ed.Commit();
  return rewrites;
}

std::unique_ptr<GraphPass> MakeRewritePass(std::string name, std::vector<RewriteRule> rules,
                                           bool (*ready)(GraphEditor& ed)) {
  return std::make_unique<RewritePass>(std::move(name), std::move(rules), ready);
}

}  // namespace inferloop
