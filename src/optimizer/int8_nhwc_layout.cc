// Int8NhwcLayout (once, after the fusions): chains of QConv / QAdd / QMaxPool /
// QGlobalAveragePool / QAveragePool / QConcat (channel axis) keep their rank-4 8-bit tensors
// channels-last (layout "NHWC"), the layout oneDNN's int8 convolutions run on, instead of
// reordering at every convolution; a Transpose converts where the chain starts and for every
// other reader (like NchwcLayout for float32). The int8 ops come from QdqFusion (qdq_fusion.cc).
#include "optimizer/fusion_util.h"
#include "optimizer/layout_rewrite.h"
#include "optimizer/passes.h"

namespace inferloop {
namespace {

bool NhwcCapable(const Node& n) {
  return n.domain == kInferloopDomain && (n.op_type == "QConv" || n.op_type == "QAdd" || n.op_type == "QMaxPool" ||
                                          n.op_type == "QGlobalAveragePool" || n.op_type == "QConcat" || n.op_type == "QAveragePool");
}

Node TransposeNode(const std::string& in, const std::string& out, const std::vector<int64_t>& perm) {
  Node t = MakeNode("Transpose", "", {in}, {out}, out + "_transpose");
  SetAttr(t, "perm", perm);
  return t;
}

Node ToNhwc(const std::string& in, const std::string& out) { return TransposeNode(in, out, {0, 2, 3, 1}); }

Node FromNhwc(const std::string& in, const std::string& out, int64_t) { return TransposeNode(in, out, {0, 3, 1, 2}); }

class Int8NhwcLayout : public GraphPass {
 public:
  std::string name() const override { return "Int8NhwcLayout"; }

  Result<int> Apply(Model& model, const PassContext& ctx) const override {
    GraphEditor ed(model, ctx);
    Graph& g = model.graph;
    bool any = false;
    for (const Node& n : g.nodes) any = any || (n.domain == kInferloopDomain && n.op_type == "QConv");
    if (!any || !ed.HasKernel("", "Transpose", ed.Opset())) return 0;
    LayoutRewrite layout(ed, {"nhwc", NhwcCapable, ToNhwc, FromNhwc});
    auto nhwc = [&](const std::string& v) -> const std::string* {
      const LayoutRewrite::LayoutValue* l = layout.Find(v);
      return l ? &l->name : nullptr;
    };
    for (Node n : g.nodes) {
      const bool is = n.domain == kInferloopDomain;
      if (is && n.op_type == "QConv" && AttrString(n, "layout", "NCHW") == "NCHW" && ed.Rank(n.inputs[0]) == 4 &&
          (nhwc(n.inputs[0]) || layout.MayStayInLayout(n.outputs[0]))) {
        n.inputs[0] = layout.AsLayout(n.inputs[0]);
        SetAttr(n, "layout", std::string("NHWC"));
        layout.Emit(std::move(n), 0);
        continue;
      }
      if (is && (n.op_type == "QMaxPool" || n.op_type == "QGlobalAveragePool" || n.op_type == "QAveragePool") &&
          nhwc(n.inputs[0])) {
        n.inputs[0] = *nhwc(n.inputs[0]);
        SetAttr(n, "layout", std::string("NHWC"));
        layout.Emit(std::move(n), 0);
        continue;
      }
      if (is && n.op_type == "QConcat") {
        const int64_t axis = AttrInt(n, "axis", 0);
        bool all = axis == 1 || axis == -3;
        for (size_t k = 2; all && k < n.inputs.size(); k += 3) all = nhwc(n.inputs[k]) != nullptr;
        if (all) {  // channel concat of channels-last tensors: the storage's last axis
          for (size_t k = 2; k < n.inputs.size(); k += 3) n.inputs[k] = *nhwc(n.inputs[k]);
          SetAttr(n, "axis", int64_t{3});
          layout.Emit(std::move(n), 0);
          continue;
        }
      }
      if (is && n.op_type == "QAdd" && nhwc(n.inputs[0]) && nhwc(n.inputs[3])) {
        n.inputs[0] = *nhwc(n.inputs[0]);
        n.inputs[3] = *nhwc(n.inputs[3]);
        layout.Emit(std::move(n), 0);
        continue;
      }
      layout.Keep(std::move(n));
    }
    return layout.Finish();
  }
};

}  // namespace

std::unique_ptr<GraphPass> MakeInt8NhwcLayoutPass() { return std::make_unique<Int8NhwcLayout>(); }

}  // namespace inferloop
