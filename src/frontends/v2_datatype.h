// The v2 protocol's tensor datatype names ("BOOL", "UINT8".."UINT64", "INT8".."INT64", "FP16",
// "BF16", "FP32", "FP64", "BYTES") and inferloop DataTypes. BYTES is DataType::kString (each
// element a byte string); BOOL is one byte per element, 0 or 1.
#pragma once

#include <string_view>

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop::frontends {

// The DataType named `name` (case-sensitive, as the protocol spells it); an InvalidArgument
// naming the accepted datatypes otherwise.
Result<DataType> DataTypeFromV2Name(std::string_view name);
// The v2 name of `dtype`, or nullptr for types the protocol cannot carry (float8, int4, ...).
const char* V2DataTypeName(DataType dtype);

}  // namespace inferloop::frontends
