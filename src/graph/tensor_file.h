// Tensor files: one tensor per file, as NumPy .npy or as a serialized ONNX TensorProto (.pb).
// The input data format of `inferloop run --input`, `compare`, `quantize` (data folders) and the
// ONNX backend test cases.
#pragma once

#include <string>

#include "inferloop/tensor.h"

namespace inferloop {

// True for a path ending in ".npy" or ".pb" (by extension only; the file is not read).
bool IsTensorFile(const std::string& path);

// Reads a tensor file: ".npy" as NumPy, anything else as a TensorProto (external data resolved
// next to the file). Errors name the file. `name`, when given, receives the tensor's name: the
// TensorProto's name field when set, else the file name without extension.
Result<Tensor> LoadTensorFile(const std::string& path, std::string* name = nullptr);

}  // namespace inferloop
