#include "compute/activation.h"

#include <algorithm>
#include <cmath>

#include "compute/simd/float_kernels.h"

namespace inferloop {

std::string Activation::Name() const {
  switch (kind) {
    case ActivationKind::kNone: return "";
    case ActivationKind::kRelu: return "Relu";
    case ActivationKind::kLeakyRelu: return "LeakyRelu";
    case ActivationKind::kClip: return "Clip";
    case ActivationKind::kSigmoid: return "Sigmoid";
    case ActivationKind::kTanh: return "Tanh";
    case ActivationKind::kHardSigmoid: return "HardSigmoid";
    case ActivationKind::kHardSwish: return "HardSwish";
    case ActivationKind::kElu: return "Elu";
    case ActivationKind::kGelu: return "Gelu";
    case ActivationKind::kGeluTanh: return "GeluTanh";
  }
  return "";
}

std::vector<float> Activation::Params() const {
  switch (kind) {
    case ActivationKind::kLeakyRelu: case ActivationKind::kElu: return {alpha};
    case ActivationKind::kClip: case ActivationKind::kHardSigmoid: return {alpha, beta};
    default: return {};
  }
}

Result<Activation> ParseActivation(const std::string& name, const std::vector<float>& params) {
  Activation a;
  size_t want = 0;
  if (name.empty()) a.kind = ActivationKind::kNone;
  else if (name == "Relu") a.kind = ActivationKind::kRelu;
  else if (name == "LeakyRelu") { a.kind = ActivationKind::kLeakyRelu; want = 1; }
  else if (name == "Clip") { a.kind = ActivationKind::kClip; want = 2; }
  else if (name == "Sigmoid") a.kind = ActivationKind::kSigmoid;
  else if (name == "Tanh") a.kind = ActivationKind::kTanh;
  else if (name == "HardSigmoid") { a.kind = ActivationKind::kHardSigmoid; want = 2; }
  else if (name == "HardSwish") a.kind = ActivationKind::kHardSwish;
  else if (name == "Elu") { a.kind = ActivationKind::kElu; want = 1; }
  else if (name == "Gelu") a.kind = ActivationKind::kGelu;
  else if (name == "GeluTanh") a.kind = ActivationKind::kGeluTanh;
  else return Status::InvalidArgument("unknown fused activation '" + name + "'");
  if (params.size() != want)
    return Status::InvalidArgument("activation '" + name + "' takes " + std::to_string(want) + " parameter(s), got " +
                                   std::to_string(params.size()));
  if (want >= 1) a.alpha = params[0];
  if (want >= 2) a.beta = params[1];
  return a;
}

namespace {

// The vectorized form of `act` (compute/simd), when it has one.
bool SimdForm(const Activation& act, simd::UnaryOp* op, simd::UnaryArgs* args) {
  *args = {act.alpha, act.beta};
  switch (act.kind) {
    case ActivationKind::kRelu: *op = simd::UnaryOp::kRelu; return true;
    case ActivationKind::kLeakyRelu: *op = simd::UnaryOp::kLeakyRelu; return true;
    case ActivationKind::kClip: *op = simd::UnaryOp::kClip; return !std::isnan(act.alpha) && !std::isnan(act.beta);
    case ActivationKind::kSigmoid: *op = simd::UnaryOp::kSigmoid; return true;
    case ActivationKind::kTanh: *op = simd::UnaryOp::kTanh; return true;
    case ActivationKind::kHardSigmoid: *op = simd::UnaryOp::kHardSigmoid; return true;
    case ActivationKind::kHardSwish: *op = simd::UnaryOp::kHardSwish; return true;
    case ActivationKind::kGelu: *op = simd::UnaryOp::kGelu; return true;
    case ActivationKind::kGeluTanh: *op = simd::UnaryOp::kGeluTanh; return true;
    default: return false;
  }
}

}  // namespace

void ApplyActivation(const Activation& act, float* x, int64_t n) {
  const float a = act.alpha, b = act.beta;
  simd::UnaryOp op;
  simd::UnaryArgs args;
  if (SimdForm(act, &op, &args)) {
    simd::Unary(nullptr, op, x, x, n, args);
    return;
  }
  switch (act.kind) {
    case ActivationKind::kNone: return;
    case ActivationKind::kRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.f ? x[i] : 0.f; return;
    case ActivationKind::kLeakyRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= 0.f ? x[i] : a * x[i]; return;
    case ActivationKind::kClip: for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], a), b); return;
    case ActivationKind::kSigmoid: for (int64_t i = 0; i < n; ++i) x[i] = 1.f / (1.f + std::exp(-x[i])); return;
    case ActivationKind::kTanh: for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]); return;
    case ActivationKind::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(0.f, std::min(1.f, a * x[i] + b));
      return;
    case ActivationKind::kHardSwish:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] * std::max(0.f, std::min(1.f, x[i] / 6.f + 0.5f));
      return;
    case ActivationKind::kElu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= 0.f ? x[i] : a * (std::exp(x[i]) - 1.f); return;
    case ActivationKind::kGelu:
      for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * 0.70710678118654752f));
      return;
    case ActivationKind::kGeluTanh:
      for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        x[i] = 0.5f * v * (1.f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
      }
      return;
  }
}

}  // namespace inferloop
