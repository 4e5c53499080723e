// Int8NhwcLayout (once, after the fusions): chains of QConv / QAdd / QMaxPool /
// QGlobalAveragePool / QAveragePool / QConcat (channel axis) keep their rank-4 8-bit tensors
// channels-last (layout "NHWC"), the layout oneDNN's int8 convolutions run on, instead of
// reordering at every convolution; a Transpose converts where the chain starts and for every
// other reader (like NchwcLayout for float32). The int8 ops come from QdqFusion (qdq_fusion.cc).
#include <map>
#include <set>

#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"

namespace inferloop {
namespace {

bool NhwcCapable(const Node& n) {
  return n.domain == kInferloopDomain && (n.op_type == "QConv" || n.op_type == "QAdd" || n.op_type == "QMaxPool" ||
                                          n.op_type == "QGlobalAveragePool" || n.op_type == "QConcat" || n.op_type == "QAveragePool");
}

class Int8NhwcLayout : public GraphPass {
 public:
  std::string name() const override { return "Int8NhwcLayout"; }

  Result<int> Apply(Model& model, const PassContext& ctx) const override {
    GraphEditor ed(model, ctx);
    Graph& g = model.graph;
    bool any = false;
    for (const Node& n : g.nodes) any = any || (n.domain == kInferloopDomain && n.op_type == "QConv");
    if (!any || !ed.HasKernel("", "Transpose", ed.Opset())) return 0;
    auto may_nhwc = [&](const std::string& v) {
      if (ed.IsGraphOutput(v) || ed.ReadBySubgraph(v)) return false;
      for (int r : ed.Readers(v))
        if (!NhwcCapable(ed.node(r))) return false;
      return true;
    };
    std::map<std::string, std::string> nhwc;  // plain name -> channels-last name
    std::set<std::string> restored;
    std::map<std::string, std::string> to_nhwc;  // plain name -> its Transpose copy
    std::vector<Node> out;
    int rewrites = 0;
    auto transpose = [&](const std::string& in, const std::string& o, std::vector<int64_t> perm) {
      Node t = MakeNode("Transpose", "", {in}, {o}, o + "_transpose");
      SetAttr(t, "perm", perm);
      out.push_back(std::move(t));
    };
    auto plain = [&](const std::string& name) {
      auto it = nhwc.find(name);
      if (it == nhwc.end() || restored.count(name)) return;
      transpose(it->second, name, {0, 3, 1, 2});
      restored.insert(name);
    };
    auto as_nhwc = [&](const std::string& name) {
      if (auto it = nhwc.find(name); it != nhwc.end()) return it->second;
      auto [it, fresh] = to_nhwc.try_emplace(name, "");
      if (fresh) {
        it->second = ed.UniqueName(name + "__nhwc_in");
        transpose(name, it->second, {0, 2, 3, 1});
      }
      return it->second;
    };
    auto emit = [&](Node n) {
      const std::string plain_name = n.outputs[0];
      const std::string nname = ed.UniqueName(plain_name + "__nhwc");
      nhwc[plain_name] = nname;
      n.outputs[0] = nname;
      out.push_back(std::move(n));
      if (!may_nhwc(plain_name)) plain(plain_name);
      ++rewrites;
    };
    for (Node n : g.nodes) {
      const bool is = n.domain == kInferloopDomain;
      if (is && n.op_type == "QConv" && AttrString(n, "layout", "NCHW") == "NCHW" && ed.Rank(n.inputs[0]) == 4 &&
          (nhwc.count(n.inputs[0]) || may_nhwc(n.outputs[0]))) {
        n.inputs[0] = as_nhwc(n.inputs[0]);
        SetAttr(n, "layout", std::string("NHWC"));
        emit(std::move(n));
        continue;
      }
      if (is && (n.op_type == "QMaxPool" || n.op_type == "QGlobalAveragePool" || n.op_type == "QAveragePool") &&
          nhwc.count(n.inputs[0])) {
        n.inputs[0] = nhwc[n.inputs[0]];
        SetAttr(n, "layout", std::string("NHWC"));
        emit(std::move(n));
        continue;
      }
      if (is && n.op_type == "QConcat") {
        const int64_t axis = AttrInt(n, "axis", 0);
        bool all = axis == 1 || axis == -3;
        for (size_t k = 2; all && k < n.inputs.size(); k += 3) all = nhwc.count(n.inputs[k]) > 0;
        if (all) {  // channel concat of channels-last tensors: the storage's last axis
          for (size_t k = 2; k < n.inputs.size(); k += 3) n.inputs[k] = nhwc[n.inputs[k]];
          SetAttr(n, "axis", int64_t{3});
          emit(std::move(n));
          continue;
        }
      }
      if (is && n.op_type == "QAdd" && nhwc.count(n.inputs[0]) && nhwc.count(n.inputs[3])) {
        n.inputs[0] = nhwc[n.inputs[0]];
        n.inputs[3] = nhwc[n.inputs[3]];
        emit(std::move(n));
        continue;
      }
      for (const auto& in : n.inputs)
        if (!in.empty()) plain(in);
      out.push_back(std::move(n));
    }
    for (const auto& o : g.outputs) plain(o.name);
    if (rewrites == 0) return 0;
    g.nodes = std::move(out);
    return rewrites;
  }
};

}  // namespace

std::unique_ptr<GraphPass> MakeInt8NhwcLayoutPass() { return std::make_unique<Int8NhwcLayout>(); }

}  // namespace inferloop
