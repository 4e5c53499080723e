// Dynamic (weight-only, calibration-free) INT8 quantization in ONNX Runtime's dynamic format
// (`inferloop quantize --dynamic`, docs/QUANTIZATION.md): each MatMul with a constant 2-D float
// weight B [K,N] (and each Gemm with transA = 0 and a constant B) becomes
//
//   DynamicQuantizeLinear(A) -> A_q (uint8), A_scale, A_zero_point
//   Mul(A_scale, B_scale) -> scales
//   MatMulInteger(A_q, B_q int8, A_zero_point, B_zero_point) -> int32
//   Cast(to float) -> Mul(., scales) [-> Add(., bias) for a Gemm's C]
//
// B is int8 symmetric (zero point 0), per tensor, or per output column N with per_channel. A
// Gemm's alpha is folded into B's scale, beta into the bias. An activation shared by several
// MatMuls (Q/K/V projections) is quantized once.
#pragma once

#include <set>
#include <string>

#include "tools/qdq_writer.h"

namespace inferloop {

struct DynamicQuantOptions {
  bool per_channel = false;
  bool reduce_range = false;  // weights in [-64, 64] (qdq_writer.h kReducedWeightLevel)
  std::set<std::string> exclude;  // node ids (qdq_writer.h NodeId) kept FP32
};

// Errors: an --exclude name no node has, an opset below 11 (DynamicQuantizeLinear).
Result<QdqResult> WriteDynamicQuantModel(const Model& fp32, const DynamicQuantOptions& opts);

}  // namespace inferloop
