// The --precision option of run, bench and serve (inferloop/precision.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "inferloop/precision.h"

namespace inferloop::cli {

// Adds --precision to `cmd`, stored as text in `*value` (validated by CLI11: an unknown name is a
// parse error listing the accepted ones). ParsePrecision(*value) then gives the Precision.
inline CLI::Option* AddPrecisionOption(CLI::App* cmd, std::string* value) {
  return cmd
      ->add_option("--precision", *value,
                   "auto (default: int8 for a model with QuantizeLinear/DequantizeLinear nodes, else fp32) | fp32 "
                   "(QDQ nodes run in float, unfused) | bf16 (Conv/MatMul/Gemm in bfloat16 where the CPU has "
                   "AVX512_BF16, else fp16) | fp16 (Conv/MatMul/Gemm weights stored as float16) | int8 (a QDQ model's "
                   "int8 kernels; an error for other models)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16", "int8"}));
}

}  // namespace inferloop::cli
