// Static INT8 quantization of a graph into the shared QDQ format (docs/QUANTIZATION.md, "The QDQ
// convention"): QuantizeLinear/DequantizeLinear pairs that ONNX Runtime and inferloop's INT8
// executor both read.
//
// - Targets: Conv, Gemm and MatMul with a constant float weight (MatMul of two activations only
//   with quantize_activation_matmul); then residual Add (both inputs produced by quantized layers)
//   and MaxPool/AveragePool/GlobalAveragePool of a quantized layer's output. A Relu, or a Clip
//   with a constant lower bound >= 0, passes a quantized output through (the QDQ pair sits after
//   it; none between the layer and the Relu).
// - Every float activation input of a quantized node gets one QuantizeLinear -> DequantizeLinear
//   pair (uint8, asymmetric, per tensor, range from the calibrator, widened to include 0); all
//   consumers of that tensor read the DequantizeLinear output. Graph outputs keep their FP32 value.
// - Weights: int8 symmetric (zero point 0, values in [-127, 127], scale = max|w| / 127), per output
//   channel with per_channel (Conv axis 0, Gemm transB=1 axis 0, transB=0 and MatMul [K,N] axis 1)
//   else per tensor, feeding a DequantizeLinear. Conv bias and the 1-D bias of a Gemm with
//   alpha = beta = 1: int32, scale = x_scale * w_scale, zero point 0. Other biases stay float.
// - A quantized Add or pooling node's output (through a following Relu) always gets a pair (the
//   executor runs them as DQ -> op -> Q). A MaxPool's output, and that of Reshape / Flatten /
//   Transpose / Squeeze / Unsqueeze of a quantized tensor, reuse the input's scale and zero point.
// - Excluded nodes (by name; an unnamed node by its first output) stay FP32.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tools/calibration.h"

namespace inferloop {

// The calibrated range of a tensor, or nullopt when there is none (the tensor is not quantized).
using RangeLookup = std::function<std::optional<QuantRange>(const std::string&)>;

struct QdqOptions {
  bool per_channel = false;
  bool reduce_range = false;  // weights in [-64, 64] (kReducedWeightLevel) instead of [-127, 127]
  std::set<std::string> exclude;            // node ids kept FP32
  bool quantize_activation_matmul = false;  // also MatMuls of two activations
  // Non-empty: quantize only these weight layers (and no Add/pooling): `compare --sensitivity`.
  std::set<std::string> only;
};

// How a node is named in --exclude and reports: its name, or its first output when unnamed.
std::string NodeId(const Node& n);

// The layers WriteQdqModel would quantize with no exclusions (Conv/Gemm/MatMul targets), in graph
// order, as node ids.
std::vector<std::string> QuantizableLayers(const Model& m, const QdqOptions& opts);

struct QdqResult {
  Model model;
  int quantized_nodes = 0;    // Conv/Gemm/MatMul/Add/pooling nodes between QDQ pairs
  int qdq_tensors = 0;        // activation tensors given a Q->DQ pair
  std::vector<std::string> warnings;
};

// Activation quantization parameters for a calibrated range (uint8 asymmetric; 0 is exact).
struct ActivationQuant {
  float scale = 1;
  uint8_t zero_point = 0;
};
ActivationQuant ActivationParams(const QuantRange& r);

// Symmetric int8 quantization of a float weight: per slice along `axis` (-1 = per tensor), to
// [-max_level, max_level] (scale = max|w| / max_level): 127, or kReducedWeightLevel.
struct WeightQuant {
  Tensor values;             // int8, the weight's shape
  std::vector<float> scales; // one per slice (one for per tensor)
};
// 7-bit weights (reduce_range, as ONNX Runtime's quantizer writes them): on CPUs without VNNI the
// int8 kernels multiply them with no saturation to guard against (docs/QUANTIZATION.md).
constexpr int kReducedWeightLevel = 64;
// The weights' max_level: kReducedWeightLevel with reduce_range, else 127.
constexpr int WeightLevel(bool reduce_range) { return reduce_range ? kReducedWeightLevel : 127; }
Result<WeightQuant> QuantizeWeightSymmetric(const Tensor& w, int axis, int max_level = 127);

// Errors: an --exclude / only name no node has, an opset below 10, non-float weights.
Result<QdqResult> WriteQdqModel(const Model& fp32, const RangeLookup& ranges, const QdqOptions& opts);

}  // namespace inferloop
