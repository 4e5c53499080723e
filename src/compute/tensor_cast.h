// Element type conversion of whole tensors, shared by Cast and by kernels that compute
// float16/bfloat16/float8 in float32.
#pragma once

#include "inferloop/tensor.h"

namespace inferloop {

// Converts every element to `to`. saturate applies to float8 targets (ONNX Cast semantics).
// Numbers <-> strings follow ONNX Cast (decimal text; "NaN", "INF", "-INF").
Result<Tensor> CastTensor(const Tensor& src, DataType to, bool saturate = true);

// Shortcut: a float32 copy of a float16/bfloat16/float8/double tensor, or `src` itself if float.
Result<Tensor> ToFloat32(const Tensor& src);

}  // namespace inferloop
