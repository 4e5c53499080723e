// A numeric tensor's elements as doubles, for steps that read model outputs of any numeric type
// (ensemble conditions, reports): float, double, float16, bfloat16, bool and every integer type.
#pragma once

#include <vector>

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop::backends {

// InvalidArgument naming the type for STRING and other non-numeric tensors.
Result<std::vector<double>> NumericValues(const Tensor& t);

}  // namespace inferloop::backends
