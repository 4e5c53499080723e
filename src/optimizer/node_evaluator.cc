#include "optimizer/node_evaluator.h"

#include "base/status_macros.h"

namespace inferloop {
namespace {

class ConstantInfo : public KernelInfo {
 public:
  ConstantInfo(const Node& n, int64_t opset, const std::vector<const Tensor*>& inputs)
      : node_(n), opset_(opset), inputs_(inputs) {}
  const Node& node() const override { return node_; }
  int64_t opset() const override { return opset_; }
  const Subgraph* subgraph(const std::string&) const override { return nullptr; }
  const Tensor* constant_input(int i) const override {
    return i >= 0 && i < static_cast<int>(inputs_.size()) ? inputs_[i] : nullptr;
  }

 private:
  const Node& node_;
  int64_t opset_;
  const std::vector<const Tensor*>& inputs_;
};

class ConstantContext : public KernelContext {
 public:
  ConstantContext(const Node& n, const std::vector<Value>& inputs, size_t max_bytes)
      : node_(n), inputs_(inputs), max_bytes_(max_bytes), outputs_(n.outputs.size()) {}
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const Value* input_value(int i) const override {
    if (i < 0 || i >= num_inputs() || inputs_[i].is_none()) return nullptr;
    return &inputs_[i];
  }
  int num_outputs() const override { return static_cast<int>(outputs_.size()); }
  bool output_wanted(int i) const override { return i >= 0 && i < num_outputs() && !node_.outputs[i].empty(); }
  void SetOutput(int i, Value v) override {
    if (output_wanted(i)) outputs_[i] = std::move(v);
  }
  Result<Tensor> Allocate(DataType dtype, Shape shape) override { return Tensor::Create(dtype, std::move(shape), max_bytes_); }
  Result<std::vector<Value>> RunSubgraph(const Subgraph&, std::vector<Value>) override {
    return Status::Unimplemented("constant folding does not run subgraphs");
  }
  const Node& node() const override { return node_; }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  const Node& node_;
  const std::vector<Value>& inputs_;
  size_t max_bytes_;
  std::vector<Value> outputs_;
};

}  // namespace

Result<std::vector<Value>> EvaluateNode(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                        const KernelRegistry& registry, size_t max_tensor_bytes) {
  const KernelFactory* f = registry.Find(node.domain, node.op_type, opset);
  if (!f) return Status::Unimplemented("no kernel for " + node.Describe());
  ConstantInfo info(node, opset, inputs);
  IL_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, (*f)(info));
  std::vector<Value> values;
  for (const Tensor* t : inputs) values.push_back(t ? Value(*t) : Value());
  ConstantContext ctx(node, values, max_tensor_bytes);
  IL_RETURN_IF_ERROR(kernel->Compute(ctx));
  return std::move(ctx.outputs());
}

}  // namespace inferloop
