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
// True when the default kernels can compute float32 ops in bfloat16 (Precision::kBf16): the
// oneDNN kernels are on and the CPU has AVX512_BF16. Otherwise kBf16 falls back to kFp16.
bool DefaultKernelsComputeBf16();

// One function per kernel family (src/compute/kernels/<family>_kernels.cc).
void RegisterElementwiseKernels(KernelRegistry& r);   // unary/binary math, logic, comparisons, activations, Where
void RegisterReductionKernels(KernelRegistry& r);     // Reduce*, ArgMax/Min, CumSum, TopK, Hardmax, Softmax, LogSoftmax
void RegisterLossKernels(KernelRegistry& r);          // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void RegisterMatmulKernels(KernelRegistry& r);        // MatMul, Gemm, Einsum, MatMulInteger, QLinearMatMul
void RegisterLinalgKernels(KernelRegistry& r);        // Det
void RegisterShapeKernels(KernelRegistry& r);         // Reshape, Transpose, Concat, Split, Slice, Gather, Pad, ...
void RegisterNnKernels(KernelRegistry& r);            // Conv family, pooling, normalization, Dropout
void RegisterRnnKernels(KernelRegistry& r);           // RNN, GRU, LSTM
void RegisterAttentionKernels(KernelRegistry& r);     // Attention, RotaryEmbedding
void RegisterCastKernels(KernelRegistry& r);          // Cast, CastLike
void RegisterQuantizeKernels(KernelRegistry& r);      // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
void RegisterStringKernels(KernelRegistry& r);        // StringConcat, StringNormalizer, StringSplit, RegexFullMatch
void RegisterSequenceKernels(KernelRegistry& r);      // Sequence*, Optional*, SplitToSequence, ConcatFromSequence
void RegisterControlFlowKernels(KernelRegistry& r);   // If, Loop, Scan, SequenceMap
void RegisterMlKernels(KernelRegistry& r);            // ai.onnx.ml operators
void RegisterTrainingKernels(KernelRegistry& r);      // ai.onnx.preview.training operators
void RegisterRandomKernels(KernelRegistry& r);        // Random*, Bernoulli, Multinomial
void RegisterImageKernels(KernelRegistry& r);         // Resize, Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression, ImageDecoder
void RegisterSignalKernels(KernelRegistry& r);        // DFT, STFT, window functions, MelWeightMatrix, TfIdfVectorizer
void RegisterFusedGeluKernel(KernelRegistry& r);      // com.inferloop Gelu (fused_gelu.cc)
void RegisterFusedAttentionKernel(KernelRegistry& r); // com.inferloop MultiHeadAttention (fused_attention.cc)
void RegisterInt8Kernels(KernelRegistry& r);          // com.inferloop int8 ops of the QDQ fusion (dnnl_int8.cc)

}  // namespace inferloop
