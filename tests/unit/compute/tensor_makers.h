// Tensor makers for the compute tests: a tensor of the given shape holding the given values
// (row-major), one per element type the tests feed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inferloop/tensor.h"

namespace inferloop::testing {

inline Tensor F32(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(DataType::kFloat, std::move(shape), v); }
inline Tensor I32(Shape shape, std::vector<int32_t> v) { return Tensor::FromVector<int32_t>(DataType::kInt32, std::move(shape), v); }
inline Tensor I64(Shape shape, std::vector<int64_t> v) { return Tensor::FromVector<int64_t>(DataType::kInt64, std::move(shape), v); }
inline Tensor U8(Shape shape, std::vector<uint8_t> v) { return Tensor::FromVector<uint8_t>(DataType::kUInt8, std::move(shape), v); }
// Bool tensors hold one byte per element, 0 or 1.
inline Tensor Bool(Shape shape, std::vector<uint8_t> v) { return Tensor::FromVector<uint8_t>(DataType::kBool, std::move(shape), v); }
inline Tensor Str(Shape shape, std::vector<std::string> v) { return Tensor::FromStrings(std::move(shape), std::move(v)); }

}  // namespace inferloop::testing
