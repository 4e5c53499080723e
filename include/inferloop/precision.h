// Precision modes of a session (SessionOptions::precision; the --precision flag of run, bench
// and serve; docs/QUANTIZATION.md "Precision modes").
#pragma once

#include <string>

#include "inferloop/status.h"

namespace inferloop {

enum class Precision {
  // int8 for a model holding QuantizeLinear/DequantizeLinear nodes (the optimizer fuses them into
  // int8 kernels), fp32 otherwise.
  kAuto,
  // Everything in float32; the Q/DQ nodes of a QDQ model run as written, in float (no int8
  // fusion): a debugging aid.
  kFp32,
  // float32 Conv/MatMul/Gemm compute in bfloat16 (weights packed as bf16 once, activations
  // converted per call, accumulation and outputs float32) where the CPU has AVX512_BF16;
  // elsewhere the same as kFp16. Other ops stay float32.
  kBf16,
  // Constant weights of float32 Conv/MatMul/Gemm stored as float16 (half the memory), widened to
  // float32 per call; compute in float32.
  kFp16,
  // The QDQ model's int8 execution (as kAuto); an error for a model without Q/DQ nodes.
  kInt8,
};

// "auto", "fp32", "bf16", "fp16", "int8".
const char* PrecisionName(Precision p);

// Parses a name PrecisionName gives (case-sensitive; "" = auto). Anything else: InvalidArgument
// listing the accepted names.
Result<Precision> ParsePrecision(const std::string& name);

}  // namespace inferloop
