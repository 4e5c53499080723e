// Activation epilogues shared by fused kernels (com.inferloop FusedConv / FusedGemm /
// FusedMatMul) and the optimizer passes that create them.
//
// A fused node carries attribute `activation` (string, "" = none) and optional
// `activation_params` (floats): LeakyRelu {alpha}, Clip {min, max}, HardSigmoid {alpha, beta},
// Elu {alpha}. Names are the ONNX op names whose semantics they follow exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inferloop/status.h"

namespace inferloop {

enum class ActivationKind { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh, kHardSigmoid, kHardSwish, kElu, kGelu, kGeluTanh };

struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0.f;  // LeakyRelu/Elu alpha, Clip min, HardSigmoid alpha
  float beta = 0.f;   // Clip max, HardSigmoid beta
  // ONNX op name ("Relu", ...; "Gelu" / "GeluTanh" for the two Gelu forms); "" for none.
  std::string Name() const;
  std::vector<float> Params() const;
};

// Parses the attribute pair; unknown names or wrong param counts are errors.
Result<Activation> ParseActivation(const std::string& name, const std::vector<float>& params);

// Applies `act` in place to n floats.
void ApplyActivation(const Activation& act, float* data, int64_t n);

}  // namespace inferloop
