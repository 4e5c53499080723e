// NchwcLayout: keeps chains of 2-D convolutions channel-blocked (NCHW16c, or NCHW8c where the
// convolutions run on AVX2: graph/channel_block.h, docs/DNNL_KERNELS.md) instead of converting
// every convolution's input and output between NCHW and oneDNN's blocked layout. A float32 Conv /
// FusedConv with a constant rank-4 W becomes FusedConv with layout "NCHW16c" / "NCHW8c" (output
// blocked; its input blocked when its producer's is, else plain, so a network's first
// convolution needs no reorder) when its input is already blocked or every reader of its output
// can take a blocked tensor. Pools on a blocked input become the com.inferloop pools with that
// layout; Relu / Clip / Add / Mul / Sigmoid / LeakyRelu / HardSwish / HardSigmoid / Tanh whose
// tensor inputs are all blocked with the same channel count stay as they are (elementwise, so
// they work on the blocked storage, broadcasting included; each maps the zero padding channels
// to a finite value, which the next convolution multiplies by zero weights). Any other reader of
// a blocked value, every graph output and every value read from a subgraph gets the plain tensor
// back from a ReorderFromNchwc under the value's original name.
//
// The block is dnnl_kernels::PreferredChannelBlock(): oneDNN's AVX2 convolutions take 8-channel
// blocks only, so a 16-blocked chain there reordered every convolution's input and output
// (ResNet-50, batch 8, 2 threads, INFERLOOP_ISA=avx2 on a Zen 4: 44 of 358 ms in 122 reorders).
// Which convolutions: only 2-D ones whose output channels pad to a multiple of the block with at
// most a third more (block 16: 64 -> 64, 24 -> 32; not 8 -> 16). Measured (1 thread, p50 ms,
// inferloop bench): ResNet-50 59.1 -> 54.3 and MobileNetV2 8.8 -> 5.8 blocked; the 3-D U-Net of
// the zoo (8 to 32 channels, ConvTranspose and Concat between its convolutions) went 89 ->
// 107-130, so 3-D convolutions and small channel counts stay NCHW. Runs once, after the fusions
// (optimizer.cc).
#include <set>

#include "compute/kernels/dnnl_kernels.h"
#include "graph/channel_block.h"
#include "optimizer/fusion_util.h"
#include "optimizer/layout_rewrite.h"
#include "optimizer/passes.h"

namespace inferloop {
namespace {

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

// Readers that can take a blocked input.
bool TakesNchwc(const Node& n) {
  return IsConv(n) || BlockablePool(n) || (n.domain.empty() && ElementwiseOps().count(n.op_type));
}

Node ToNchwc(const std::string& in, const std::string& out, int64_t block) {
  Node r = MakeNode("ReorderToNchwc", kInferloopDomain, {in}, {out}, in + "_to_nchwc");
  SetAttr(r, "layout", ChannelBlockedLayoutName(block));
  return r;
}

Node FromNchwc(const std::string& in, const std::string& out, int64_t channels, int64_t block) {
  Node r = MakeNode("ReorderFromNchwc", kInferloopDomain, {in}, {out}, out + "_from_nchwc");
  SetAttr(r, "channels", channels);
  SetAttr(r, "layout", ChannelBlockedLayoutName(block));
  return r;
}

class NchwcLayout : public GraphPass {
 public:
  explicit NchwcLayout(int64_t block) : block_(block > 0 ? block : dnnl_kernels::PreferredChannelBlock()) {}
  std::string name() const override { return "NchwcLayout"; }

  Result<int> Apply(Model& model, const PassContext& ctx) const override {
    GraphEditor ed(model, ctx);
    for (const char* op : {"FusedConv", "ReorderToNchwc", "ReorderFromNchwc", "MaxPool", "AveragePool", "GlobalAveragePool",
                           "GlobalMaxPool"})
      if (!ed.HasKernel(kInferloopDomain, op, 1)) return 0;
    Graph& g = model.graph;
    const int64_t block = block_;
    const std::string layout_name = ChannelBlockedLayoutName(block);

    // Conv output channels (W dims[0]) when node i may become a blocked FusedConv; 0 otherwise.
    auto conv_channels = [&](const Node& n) -> int64_t {
      if (!IsConv(n) || n.inputs.size() < 2 || n.outputs.size() != 1) return 0;
      if (AttrString(n, "layout", "NCHW") != "NCHW") return 0;
      const Tensor* w = ed.Constant(n.inputs[1]);
      if (!w || w->dtype() != DataType::kFloat || w->rank() != 4 || !ed.IsFloat32(n.inputs[0])) return 0;
      const int64_t m = w->dim(0);
      const int64_t padded = (m + block - 1) / block * block;
      if (m <= 0 || 3 * padded > 4 * m) return 0;
      if (ed.Rank(n.inputs[0]) != 4 && ed.Rank(n.inputs[0]) != -1) return 0;
      return m;
    };
    LayoutRewrite layout(ed, {"nchwc", TakesNchwc,
                              [block](const std::string& in, const std::string& out) { return ToNchwc(in, out, block); },
                              [block](const std::string& in, const std::string& out, int64_t channels) {
                                return FromNchwc(in, out, channels, block);
                              }});
    for (Node n : g.nodes) {
      const LayoutRewrite::LayoutValue* in0 = n.inputs.empty() ? nullptr : layout.Find(n.inputs[0]);
      if (const int64_t m = conv_channels(n)) {
        if (in0 || layout.MayStayInLayout(n.outputs[0])) {
          n.domain = kInferloopDomain;
          n.op_type = "FusedConv";
          SetAttr(n, "layout", layout_name);
          if (in0) n.inputs[0] = in0->name;
          if (n.inputs.size() > 3 && !n.inputs[3].empty()) n.inputs[3] = layout.AsLayout(n.inputs[3]);
          layout.Emit(std::move(n), m);
          continue;
        }
      }
      if (BlockablePool(n) && in0) {
        const int64_t ch = in0->tag;
        n.domain = kInferloopDomain;
        n.inputs[0] = in0->name;
        n.outputs.resize(1);
        SetAttr(n, "layout", layout_name);
        layout.Emit(std::move(n), ch);
        continue;
      }
      if (n.domain.empty() && ElementwiseOps().count(n.op_type) && n.outputs.size() == 1 && in0) {
        const int64_t ch = in0->tag;
        const size_t tensor_inputs = n.op_type == "Clip" ? 1 : n.inputs.size();
        bool ok = true;
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          const LayoutRewrite::LayoutValue* l = layout.Find(n.inputs[k]);
          if (k < tensor_inputs) ok = ok && l && l->tag == ch;
          else ok = ok && !l;  // Clip's bounds stay plain scalars
        }
        if (ok) {
          for (size_t k = 0; k < tensor_inputs; ++k) n.inputs[k] = layout.Find(n.inputs[k])->name;
          layout.Emit(std::move(n), ch);
          continue;
        }
      }
      layout.Keep(std::move(n));
    }
    const int rewrites = layout.Finish();
    if (rewrites > 0) ed.ImportDomain(kInferloopDomain, 1);
    return rewrites;
  }

 private:
  int64_t block_;
};

}  // namespace

std::unique_ptr<GraphPass> MakeNchwcLayoutPass(int64_t block) { return std::make_unique<NchwcLayout>(block); }

}  // namespace inferloop
