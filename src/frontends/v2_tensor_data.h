// Tensor data as the v2 protocol carries it outside JSON: the raw form shared by the REST
// binary tensor data extension and gRPC's raw_input_contents / raw_output_contents.
// Elements are little-endian, row-major, unpadded; BOOL is one byte (0 or 1); each BYTES element
// is a 4-byte little-endian length followed by that many bytes.
// Also the checks every decoder runs on a declared shape before it allocates anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop::frontends {

// Validates a declared shape for tensor `what` (used in messages, e.g. "input 'x'") and returns
// its element count: negative dimensions and element counts overflowing int64 are
// InvalidArgument; a byte size above max_bytes is ResourceExhausted (BYTES counts
// sizeof(std::string) per element, what holding it costs). Allocates nothing.
Result<int64_t> CheckDeclaredShape(const std::string& what, DataType dtype, const Shape& shape, size_t max_bytes);

// Decodes `bytes` into a new tensor of dtype/shape, which must match exactly (the byte count for
// fixed-size types; whole, in-bounds elements and nothing left over for BYTES).
Result<Tensor> TensorFromRawBytes(const std::string& what, DataType dtype, const Shape& shape, std::string_view bytes,
                                  size_t max_bytes);

// Size of the raw form of `t`, and the raw form appended to `out`.
size_t RawByteSize(const Tensor& t);
void AppendRawBytes(const Tensor& t, std::string* out);

}  // namespace inferloop::frontends
