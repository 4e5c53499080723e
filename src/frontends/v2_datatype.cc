#include "frontends/v2_datatype.h"

#include <string>

namespace inferloop::frontends {
namespace {

struct Entry {
  const char* name;
  DataType dtype;
};

constexpr Entry kEntries[] = {
    {"BOOL", DataType::kBool},     {"UINT8", DataType::kUInt8},       {"UINT16", DataType::kUInt16},
    {"UINT32", DataType::kUInt32}, {"UINT64", DataType::kUInt64},     {"INT8", DataType::kInt8},
    {"INT16", DataType::kInt16},   {"INT32", DataType::kInt32},       {"INT64", DataType::kInt64},
    {"FP16", DataType::kFloat16},  {"BF16", DataType::kBFloat16},     {"FP32", DataType::kFloat},
    {"FP64", DataType::kDouble},   {"BYTES", DataType::kString},
};

}  // namespace

Result<DataType> DataTypeFromV2Name(std::string_view name) {
  for (const auto& e : kEntries) {
    if (name == e.name) return e.dtype;
  }
  std::string accepted;
  for (const auto& e : kEntries) accepted += std::string(accepted.empty() ? "" : ", ") + e.name;
  return Status::InvalidArgument("unknown datatype '" + std::string(name) + "' (expected one of " + accepted + ")");
}

const char* V2DataTypeName(DataType dtype) {
  for (const auto& e : kEntries) {
    if (e.dtype == dtype) return e.name;
  }
  return nullptr;
}

}  // namespace inferloop::frontends
