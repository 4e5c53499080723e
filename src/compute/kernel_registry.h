// Maps (domain, op type, opset version) to a kernel factory.
// Built once (DefaultKernelRegistry) and read-only afterwards, so lookups are thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compute/kernel.h"

namespace inferloop {

class KernelRegistry {
 public:
  // Registers `factory` for opset versions [since_version, end_version] of domain.op_type.
  // Domain "" is ai.onnx.
  void Register(const std::string& domain, const std::string& op_type, int since_version,
                KernelFactory factory, int end_version = 1 << 30);
  // The factory for the newest registration whose range holds `opset`; nullptr if none.
  const KernelFactory* Find(const std::string& domain, const std::string& op_type, int64_t opset) const;
  bool HasOp(const std::string& domain, const std::string& op_type) const;
  std::vector<std::string> OpNames() const;  // "domain:Op" for every registered op

 private:
  struct Entry {
    int since, end;
    KernelFactory factory;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> entries_;
};

// Every kernel inferloop ships, registered once.
const KernelRegistry& DefaultKernelRegistry();

// One function per kernel family (src/compute/kernels/*.cc).
void RegisterElementwiseKernels(KernelRegistry& r);   // unary/binary math, logic, comparisons, activations
void RegisterReductionKernels(KernelRegistry& r);     // Reduce*, ArgMax/Min, CumSum, TopK, Hardmax, Softmax family
void RegisterShapeKernels(KernelRegistry& r);         // Reshape, Transpose, Concat, Split, Slice, Gather, Pad, ...
void RegisterNnKernels(KernelRegistry& r);            // Conv, pooling, normalization, MatMul, Gemm, attention, ...
void RegisterCastKernels(KernelRegistry& r);          // Cast, CastLike, QuantizeLinear, DequantizeLinear, ...
void RegisterSequenceKernels(KernelRegistry& r);      // Sequence*, Optional*, SplitToSequence, ConcatFromSequence
void RegisterControlFlowKernels(KernelRegistry& r);   // If, Loop, Scan
void RegisterRnnKernels(KernelRegistry& r);           // RNN, GRU, LSTM
void RegisterMiscKernels(KernelRegistry& r);          // strings, signal (DFT, STFT, windows), random, ml, training ops
void RegisterImageKernels(KernelRegistry& r);         // Resize, GridSample, RoiAlign, NonMaxSuppression, ...

}  // namespace inferloop
