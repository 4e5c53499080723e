// NchwcLayout: keeps chains of 2-D convolutions channel-blocked (NCHW16c, docs/DNNL_KERNELS.md)
// instead of converting every convolution's input and output between NCHW and oneDNN's blocked
// layout. A float32 Conv / FusedConv with a constant rank-4 W becomes FusedConv with layout
// "NCHW16c" (output blocked; its input blocked when its producer's is, else plain, so a network's
// first convolution needs no reorder) when its input is already blocked or every reader of its
// output can take a blocked tensor. Pools on a blocked input become the com.inferloop pools with
// that layout; Relu / Clip / Add / Mul / Sigmoid / LeakyRelu / HardSwish / HardSigmoid / Tanh
// whose tensor inputs are all blocked with the same channel count stay as they are (elementwise,
// so they work on the blocked storage, broadcasting included; each maps the zero padding channels
// to a finite value, which the next convolution multiplies by zero weights). Any other reader of
// a blocked value, every graph output and every value read from a subgraph gets the plain tensor
// back from a ReorderFromNchwc under the value's original name.
//
// Which convolutions: only 2-D ones whose output channels pad to a multiple of 16 with at most a
// third more (64 -> 64, 24 -> 32; not 8 -> 16). Measured (1 thread, p50 ms, inferloop bench):
// ResNet-50 59.1 -> 54.3 and MobileNetV2 8.8 -> 5.8 blocked; the 3-D U-Net of the zoo (8 to 32
// channels, ConvTranspose and Concat between its convolutions) went 89 -> 107-130, so 3-D
// convolutions and small channel counts stay NCHW. Runs once, after the fusions (optimizer.cc).
#include <map>
#include <set>

#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"

namespace inferloop {
namespace {

constexpr int64_t kBlock = 16;
const std::set<std::string>& ElementwiseOps() {
  static const std::set<std::string> ops = {"Relu", "Clip", "Add", "Mul", "Sigmoid", "LeakyRelu", "HardSwish", "HardSigmoid", "Tanh"};
  return ops;
}
const std::set<std::string>& PoolOps() {
  static const std::set<std::string> ops = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"};
  return ops;
}

bool IsConv(const Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") || (n.domain == kInferloopDomain && n.op_type == "FusedConv");
}

// Pools whose blocked kernel takes every attribute combination this node has.
bool BlockablePool(const Node& n) {
  if (!n.domain.empty() || !PoolOps().count(n.op_type) || n.inputs.size() != 1) return false;
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return false;  // MaxPool's Indices
  if (n.op_type == "AveragePool" && AttrInt(n, "ceil_mode", 0) != 0 && AttrInt(n, "count_include_pad", 0) != 0) return false;
  return true;
}

class NchwcLayout : public GraphPass {
 public:
  std::string name() const override { return "NchwcLayout"; }

  Result<int> Apply(Model& model, const PassContext& ctx) const override {
    GraphEditor ed(model, ctx);
    for (const char* op : {"FusedConv", "ReorderToNchwc", "ReorderFromNchwc", "MaxPool", "AveragePool", "GlobalAveragePool",
                           "GlobalMaxPool"})
      if (!ed.HasKernel(kInferloopDomain, op, 1)) return 0;
    Graph& g = model.graph;

    // Conv output channels (W dims[0]) when node i may become a blocked FusedConv; 0 otherwise.
    auto conv_channels = [&](const Node& n) -> int64_t {
      if (!IsConv(n) || n.inputs.size() < 2 || n.outputs.size() != 1) return 0;
      if (AttrString(n, "layout", "NCHW") != "NCHW") return 0;
      const Tensor* w = ed.Constant(n.inputs[1]);
      if (!w || w->dtype() != DataType::kFloat || w->rank() != 4 || !ed.IsFloat32(n.inputs[0])) return 0;
      const int64_t m = w->dim(0);
      const int64_t padded = (m + kBlock - 1) / kBlock * kBlock;
      if (m <= 0 || 3 * padded > 4 * m) return 0;
      if (ed.Rank(n.inputs[0]) != 4 && ed.Rank(n.inputs[0]) != -1) return 0;
      return m;
    };
    auto blockable_reader = [&](const Node& n) {
      return IsConv(n) || BlockablePool(n) || (n.domain.empty() && ElementwiseOps().count(n.op_type));
    };
    // A value that may leave the plain world: no graph output, no subgraph reads it, every reader
    // can take it blocked.
    auto may_block = [&](const std::string& v) {
      if (ed.IsGraphOutput(v) || ed.ReadBySubgraph(v)) return false;
      for (int r : ed.Readers(v))
        if (!blockable_reader(ed.node(r))) return false;
      return true;
    };

    std::map<std::string, std::pair<std::string, int64_t>> blocked;  // plain name -> (blocked name, channels)
    std::set<std::string> restored;                                  // plain names given back by a ReorderFromNchwc
    std::map<std::string, std::string> to_blocked;                   // plain name -> its ReorderToNchwc copy
    std::vector<Node> out;
    out.reserve(g.nodes.size() + 8);
    int rewrites = 0;

    auto plain = [&](const std::string& name) {
      auto it = blocked.find(name);
      if (it == blocked.end() || restored.count(name)) return;
      Node r = MakeNode("ReorderFromNchwc", kInferloopDomain, {it->second.first}, {name}, name + "_from_nchwc");
      SetAttr(r, "channels", it->second.second);
      out.push_back(std::move(r));
      restored.insert(name);
    };
    auto as_blocked = [&](const std::string& name) -> std::string {
      if (auto it = blocked.find(name); it != blocked.end()) return it->second.first;
      auto [it, fresh] = to_blocked.try_emplace(name, "");
      if (fresh) {
        it->second = ed.UniqueName(name + "__nchwc_in");
        out.push_back(MakeNode("ReorderToNchwc", kInferloopDomain, {name}, {it->second}, name + "_to_nchwc"));
      }
      return it->second;
    };
    // Emits `n` writing its output blocked (under a new name), and right after it the plain
    // value under the original name when some reader needs that.
    auto emit_blocked = [&](Node n, int64_t channels) {
      const std::string plain_name = n.outputs[0];
      const bool keep_blocked = may_block(plain_name);
      const std::string bname = ed.UniqueName(plain_name + "__nchwc");
      blocked[plain_name] = {bname, channels};
      n.outputs[0] = bname;
      out.push_back(std::move(n));
      if (!keep_blocked) plain(plain_name);
      ++rewrites;
    };

    for (Node n : g.nodes) {
      if (const int64_t m = conv_channels(n)) {
        const bool in_blocked = blocked.count(n.inputs[0]) > 0;
        if (in_blocked || may_block(n.outputs[0])) {
          n.domain = kInferloopDomain;
          n.op_type = "FusedConv";
          SetAttr(n, "layout", std::string("NCHW16c"));
          if (in_blocked) n.inputs[0] = blocked[n.inputs[0]].first;
          if (n.inputs.size() > 3 && !n.inputs[3].empty()) n.inputs[3] = as_blocked(n.inputs[3]);
          emit_blocked(std::move(n), m);
          continue;
        }
      }
      if (BlockablePool(n) && blocked.count(n.inputs[0])) {
        const auto [bname, ch] = blocked[n.inputs[0]];
        n.domain = kInferloopDomain;
        n.inputs[0] = bname;
        n.outputs.resize(1);
        SetAttr(n, "layout", std::string("NCHW16c"));
        emit_blocked(std::move(n), ch);
        continue;
      }
      if (n.domain.empty() && ElementwiseOps().count(n.op_type) && n.outputs.size() == 1 && !n.inputs.empty() &&
          blocked.count(n.inputs[0])) {
        const int64_t ch = blocked[n.inputs[0]].second;
        const size_t tensor_inputs = n.op_type == "Clip" ? 1 : n.inputs.size();
        bool ok = true;
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          auto it = blocked.find(n.inputs[k]);
          if (k < tensor_inputs) ok = ok && it != blocked.end() && it->second.second == ch;
          else ok = ok && it == blocked.end();  // Clip's bounds stay plain scalars
        }
        if (ok) {
          for (size_t k = 0; k < tensor_inputs; ++k) n.inputs[k] = blocked[n.inputs[k]].first;
          emit_blocked(std::move(n), ch);
          continue;
        }
      }
      for (const auto& in : n.inputs)
        if (!in.empty()) plain(in);
      out.push_back(std::move(n));
    }
    for (const auto& o : g.outputs) plain(o.name);
    if (rewrites == 0) return 0;
    g.nodes = std::move(out);
    ed.ImportDomain(kInferloopDomain, 1);
    return rewrites;
  }
};

}  // namespace

std::unique_ptr<GraphPass> MakeNchwcLayoutPass() { return std::make_unique<NchwcLayout>(); }

}  // namespace inferloop
