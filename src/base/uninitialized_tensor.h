// Tensors whose bytes the caller overwrites anyway: Tensor::Create zero-fills every new tensor,
// which on a 4 MiB Relu output was a third of the run from Python (bench/python_overhead.py: 713
// us per run against 410 us through the C++ API, 25% of the samples in memset). Internal to the
// engine (the runtime's KernelContext::AllocateUninit), not part of the public API.
#pragma once

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

// As Tensor::Create (same limit, 64-byte alignment and errors), but numeric bytes are left as
// malloc gives them: the caller must write every element. String tensors are constructed empty,
// as Create makes them.
Result<Tensor> CreateUninitializedTensor(DataType dtype, Shape shape, size_t max_bytes = Tensor::kDefaultMaxBytes);

}  // namespace inferloop
