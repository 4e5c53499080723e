// Calls a generic lambda with the C++ type of a DataType: f(TypeTag<T>{}).
// Float16/BFloat16 are not dispatched here (kernels convert them to float, see tensor_cast.h).
#pragma once

#include <cstdint>
#include <string>

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

template <typename T>
struct TypeTag {
  using type = T;
};

inline Status UnsupportedType(const char* what, DataType t) {
  return Status::Unimplemented(std::string(what) + " does not support dtype " + DataTypeName(t));
}

// float, double, all fixed-width integers.
template <typename F>
Status DispatchNumeric(DataType t, F&& f, const char* what = "operator") {
  switch (t) {
    case DataType::kFloat: return f(TypeTag<float>{});
    case DataType::kDouble: return f(TypeTag<double>{});
    case DataType::kInt8: return f(TypeTag<int8_t>{});
    case DataType::kInt16: return f(TypeTag<int16_t>{});
    case DataType::kInt32: return f(TypeTag<int32_t>{});
    case DataType::kInt64: return f(TypeTag<int64_t>{});
    case DataType::kUInt8: return f(TypeTag<uint8_t>{});
    case DataType::kUInt16: return f(TypeTag<uint16_t>{});
    case DataType::kUInt32: return f(TypeTag<uint32_t>{});
    case DataType::kUInt64: return f(TypeTag<uint64_t>{});
    default: return UnsupportedType(what, t);
  }
}

// float and double.
template <typename F>
Status DispatchFloating(DataType t, F&& f, const char* what = "operator") {
  switch (t) {
    case DataType::kFloat: return f(TypeTag<float>{});
    case DataType::kDouble: return f(TypeTag<double>{});
    default: return UnsupportedType(what, t);
  }
}

// Fixed-width integers only.
template <typename F>
Status DispatchInteger(DataType t, F&& f, const char* what = "operator") {
  switch (t) {
    case DataType::kInt8: return f(TypeTag<int8_t>{});
    case DataType::kInt16: return f(TypeTag<int16_t>{});
    case DataType::kInt32: return f(TypeTag<int32_t>{});
    case DataType::kInt64: return f(TypeTag<int64_t>{});
    case DataType::kUInt8: return f(TypeTag<uint8_t>{});
    case DataType::kUInt16: return f(TypeTag<uint16_t>{});
    case DataType::kUInt32: return f(TypeTag<uint32_t>{});
    case DataType::kUInt64: return f(TypeTag<uint64_t>{});
    default: return UnsupportedType(what, t);
  }
}

// Dispatches on element byte size (for data movement ops: copy/gather/transpose of any
// non-string dtype). T is uint8_t/uint16_t/uint32_t/uint64_t or a 16-byte struct.
struct Bytes16 {
  uint64_t lo, hi;
};
template <typename F>
Status DispatchBySize(DataType t, F&& f, const char* what = "operator") {
  switch (DataTypeSize(t)) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    case 16: return f(TypeTag<Bytes16>{});
    default: return UnsupportedType(what, t);
  }
}

inline bool IsFloat16Like(DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; }

}  // namespace inferloop
