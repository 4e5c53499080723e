// Tensor, DataType and Value: the one tensor type used by the API and inside the engine.
//
// A Tensor is a dtype, a shape (inferloop/shape.h: vector-like, rank <= 8 kept inline) and a
// reference-counted buffer. Copies are shallow (they share
// the buffer); kernels never write into their inputs. Elements are stored unpacked: sub-byte
// types (int4, uint4, float4e2m1, int2, uint2) take one byte per element in memory and are
// packed only in files. 16-bit floats are stored as their raw uint16 bits, float8 as uint8.
// STRING tensors hold std::string elements.
//
// A Value is what flows along a graph edge: a Tensor, a Sequence of tensors, or an empty
// Optional.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inferloop/shape.h"
#include "inferloop/status.h"

namespace inferloop {

// Numbers match ONNX's TensorProto.DataType.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

// Lower-case ONNX-style name: "float", "int64", "float8e4m3fn", ...
const char* DataTypeName(DataType t);
// Bytes per element in memory (sub-byte types: 1). 0 for kUndefined and kString.
size_t DataTypeSize(DataType t);
// True if `t` is a value the loader understands.
bool IsKnownDataType(int32_t t);

// "[2,3,4]"
std::string ShapeToString(const Shape& s);
// Product of dims; -1 if any dim is negative; -2 on int64 overflow.
int64_t ShapeElementCount(const Shape& s);

class Tensor {
 public:
  Tensor() = default;  // undefined dtype, no buffer
  // Allocates a zero-filled tensor. Fails (does not abort) when the size is negative,
  // overflows, or exceeds max_bytes (kernels pass the session's limit).
  static Result<Tensor> Create(DataType dtype, Shape shape, size_t max_bytes = kDefaultMaxBytes);
  static constexpr size_t kDefaultMaxBytes = size_t{16} << 30;
  // Wraps a copy of `bytes` (nbytes must equal element count * DataTypeSize).
  static Result<Tensor> FromBytes(DataType dtype, Shape shape, const void* bytes, size_t nbytes);
  static Tensor FromStrings(Shape shape, std::vector<std::string> values);
  template <typename T>
  static Tensor FromVector(DataType dtype, Shape shape, const std::vector<T>& values);
  static Tensor Scalar(float v);
  // A tensor over memory it does not own (a runtime arena, a caller's buffer): `data` must hold
  // element count * DataTypeSize bytes, 64-byte aligned for kernels' sake, and stay valid while
  // `keep_alive` (shared by every copy of the tensor) lives. Not for STRING. Does not allocate
  // when the rank fits inline.
  static Tensor View(DataType dtype, Shape shape, void* data, std::shared_ptr<void> keep_alive);

  bool defined() const { return dtype_ != DataType::kUndefined; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t size() const { return size_; }  // element count
  size_t nbytes() const { return static_cast<size_t>(size_) * DataTypeSize(dtype_); }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() { return static_cast<T*>(data_); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }
  std::string* strings() { return static_cast<std::string*>(data_); }
  const std::string* strings() const { return static_cast<const std::string*>(data_); }

  // How many tensors share this tensor's buffer (or a View's keep-alive); 0 when there is none.
  long buffer_use_count() const { return buffer_.use_count(); }

  // Same buffer, new shape with the same element count.
  Result<Tensor> Reshaped(Shape new_shape) const;
  // Deep copy.
  Tensor Clone() const;

 private:
  struct Buffer;
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<void> buffer_;  // a Buffer, or a View's keep-alive
  void* data_ = nullptr;
};

template <typename T>
Tensor Tensor::FromVector(DataType dtype, Shape shape, const std::vector<T>& values) {
  auto r = FromBytes(dtype, std::move(shape), values.data(), values.size() * sizeof(T));
  return r.ok() ? std::move(r).value() : Tensor();
}

// What flows along a graph edge.
class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence };
  Value() = default;  // kNone: an absent optional
  Value(Tensor t) : kind_(Kind::kTensor), tensor_(std::move(t)) {}  // NOLINT
  static Value MakeSequence(std::vector<Tensor> elems, DataType elem_type);
  static Value None() { return Value(); }

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_none() const { return kind_ == Kind::kNone; }
  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  const std::vector<Tensor>& sequence() const { return *seq_; }
  DataType sequence_elem_type() const { return seq_type_; }
  std::string DebugString() const;

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<const std::vector<Tensor>> seq_;
  DataType seq_type_ = DataType::kUndefined;
};

}  // namespace inferloop
