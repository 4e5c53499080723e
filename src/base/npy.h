// Reading and writing NumPy .npy files (format versions 1.0-3.0, C order, little-endian).
#pragma once

#include <string>

#include "inferloop/tensor.h"

namespace inferloop {

// Parses .npy bytes. Supports bool, int8..int64, uint8..uint64, float16, float32, float64,
// complex64/128 and fixed-width unicode strings ('<U'); Fortran order is transposed to C order.
Result<Tensor> ParseNpy(const std::string& bytes);
Result<Tensor> ReadNpyFile(const std::string& path);
// Serializes a tensor as .npy (version 1.0; strings as '<U<maxlen>'). Types NumPy lacks
// (bfloat16, float8, int4, ...) are an error.
Result<std::string> SerializeNpy(const Tensor& t);
Status WriteNpyFile(const std::string& path, const Tensor& t);

}  // namespace inferloop
