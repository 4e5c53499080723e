#include "compute/kernel_registry.h"

#include "compute/kernels/dnnl_kernels.h"

namespace inferloop {

void KernelRegistry::Register(const std::string& domain, const std::string& op_type, int since_version,
                              KernelFactory factory, int end_version) {
  entries_[{domain, op_type}].push_back({since_version, end_version, std::move(factory)});
}

const KernelFactory* KernelRegistry::Find(const std::string& domain, const std::string& op_type, int64_t opset) const {
  auto it = entries_.find({domain, op_type});
  if (it == entries_.end()) return nullptr;
  const Entry* best = nullptr;
  for (const auto& e : it->second)
    if (opset >= e.since && opset <= e.end && (!best || e.since > best->since)) best = &e;
  return best ? &best->factory : nullptr;
}

bool KernelRegistry::HasOp(const std::string& domain, const std::string& op_type) const {
  return entries_.count({domain, op_type}) > 0;
}

std::vector<std::string> KernelRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const auto& [k, v] : entries_) names.push_back((k.first.empty() ? "ai.onnx" : k.first) + ":" + k.second);
  return names;
}

const KernelRegistry& DefaultKernelRegistry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterElementwiseKernels(r);
    RegisterReductionKernels(r);
    RegisterLossKernels(r);
    RegisterMatmulKernels(r);
    RegisterLinalgKernels(r);
    RegisterShapeKernels(r);
    RegisterNnKernels(r);
    RegisterRnnKernels(r);
    RegisterAttentionKernels(r);
    RegisterCastKernels(r);
    RegisterQuantizeKernels(r);
    RegisterStringKernels(r);
    RegisterSequenceKernels(r);
    RegisterControlFlowKernels(r);
    RegisterMlKernels(r);
    RegisterTrainingKernels(r);
    RegisterRandomKernels(r);
    RegisterImageKernels(r);
    RegisterSignalKernels(r);
    RegisterFusedGeluKernel(r);
    RegisterFusedAttentionKernel(r);
    RegisterInt8Kernels(r);
    return r;
  }();
  return registry;
}

bool DefaultKernelsComputeBf16() { return dnnl_kernels::Bf16ComputeSupported(); }

}  // namespace inferloop
