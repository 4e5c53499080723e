#include "inferloop/tensor.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/status_macros.h"
#include "base/uninitialized_tensor.h"

namespace inferloop {

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat: return "float32";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "float64";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat8E4M3FN: return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::kUInt4: return "uint4";
    case DataType::kInt4: return "int4";
    case DataType::kFloat4E2M1: return "float4e2m1";
    case DataType::kFloat8E8M0: return "float8e8m0";
    case DataType::kUInt2: return "uint2";
    case DataType::kInt2: return "int2";
  }
  return "unknown";
}

size_t DataTypeSize(DataType t) {
  switch (t) {
    case DataType::kUndefined: return 0;
    case DataType::kString: return sizeof(std::string);
    case DataType::kFloat: case DataType::kInt32: case DataType::kUInt32: return 4;
    case DataType::kDouble: case DataType::kInt64: case DataType::kUInt64:
    case DataType::kComplex64: return 8;
    case DataType::kComplex128: return 16;
    case DataType::kInt16: case DataType::kUInt16: case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    default: return 1;
  }
}

bool IsKnownDataType(int32_t t) { return t >= 1 && t <= 26; }

// Appends with std::to_chars, not an ostringstream: the serving path builds a batch key from
// every request's shapes (batch_assembly.cc), and a stream's construction (its locale) cost more
// than the rest of that key (perf on serve_bench's simple requests).
std::string ShapeToString(const Shape& s) {
  std::string out = "[";
  char buf[24];
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out.append(buf, std::to_chars(buf, buf + sizeof buf, s[i]).ptr);
  }
  out += ']';
  return out;
}

int64_t ShapeElementCount(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return -2;
    n *= d;
  }
  return n;
}

// Owns a 64-byte-aligned block, or an array of strings.
struct Tensor::Buffer {
  void* bytes = nullptr;
  std::string* strings = nullptr;
  size_t count = 0;
  ~Buffer() {
    if (bytes) std::free(bytes);
    if (strings) {
      for (size_t i = 0; i < count; ++i) strings[i].~basic_string();
      std::free(strings);
    }
  }
};

namespace {

// Allocates a shared_ptr's control block (with the Buffer in it) and `extra` bytes after it in one
// 64-byte-aligned block: a numeric tensor's data then lives past its Buffer, one allocation per
// tensor instead of two (a served request's small input tensors were two of its allocations each).
template <typename T>
struct BufferAndDataAllocator {
  using value_type = T;
  size_t extra;
  explicit BufferAndDataAllocator(size_t extra_bytes) : extra(extra_bytes) {}
  template <typename U>
  BufferAndDataAllocator(const BufferAndDataAllocator<U>& other) : extra(other.extra) {}  // NOLINT
  T* allocate(size_t n) {
    const size_t size = (n * sizeof(T) + extra + 63) / 64 * 64;  // aligned_alloc wants a multiple
    void* p = std::aligned_alloc(64, size);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const BufferAndDataAllocator<U>& other) const { return extra == other.extra; }
  template <typename U>
  bool operator!=(const BufferAndDataAllocator<U>& other) const { return extra != other.extra; }
};

// Tensors up to this size share one block with their Buffer; larger ones get a block of their own
// (their allocation is not what costs).
constexpr size_t kDataWithBufferMaxBytes = size_t{1} << 20;

// What a new tensor needs: its element count and the bytes to allocate (the data rounded up to
// 64, at least 64); Tensor::Create's argument errors otherwise.
struct TensorBlock {
  int64_t elements;
  size_t bytes;  // elements * element size
  size_t alloc;
};

Result<TensorBlock> PlanTensorBlock(DataType dtype, const Shape& shape, size_t max_bytes) {
  if (dtype == DataType::kUndefined) return Status::InvalidArgument("cannot create a tensor of undefined dtype");
  const int64_t n = ShapeElementCount(shape);
  if (n == -1) return Status::InvalidArgument("negative dimension in shape " + ShapeToString(shape));
  const size_t esize = DataTypeSize(dtype);
  if (n == -2 || static_cast<uint64_t>(n) > max_bytes / esize) {
    return Status::ResourceExhausted("tensor of shape " + ShapeToString(shape) + " and dtype " +
                                     DataTypeName(dtype) + " would exceed the per-tensor limit of " +
                                     std::to_string(max_bytes) + " bytes");
  }
  const size_t bytes = static_cast<size_t>(n) * esize;
  const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  return TensorBlock{n, bytes, alloc};
}

}  // namespace

Result<Tensor> CreateUninitializedTensor(DataType dtype, Shape shape, size_t max_bytes) {
  if (dtype == DataType::kString) return Tensor::Create(dtype, std::move(shape), max_bytes);
  IL_ASSIGN_OR_RETURN(TensorBlock b, PlanTensorBlock(dtype, shape, max_bytes));
  void* data = std::aligned_alloc(64, b.alloc);
  if (!data) return Status::ResourceExhausted("out of memory allocating " + std::to_string(b.bytes) + " bytes");
  return Tensor::View(dtype, std::move(shape), data, std::shared_ptr<void>(data, [](void* p) { std::free(p); }));
}

Result<Tensor> Tensor::Create(DataType dtype, Shape shape, size_t max_bytes) {
  IL_ASSIGN_OR_RETURN(TensorBlock b, PlanTensorBlock(dtype, shape, max_bytes));
  const int64_t n = b.elements;
  const size_t bytes = b.bytes, alloc = b.alloc;
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.size_ = n;
  if (dtype != DataType::kString && alloc <= kDataWithBufferMaxBytes) {
    std::shared_ptr<Buffer> buf;
    try {
      // The data starts at the first 64-byte boundary past the Buffer: at most 63 bytes of slack.
      buf = std::allocate_shared<Buffer>(BufferAndDataAllocator<Buffer>(alloc + 64));
    } catch (const std::bad_alloc&) {
      return Status::ResourceExhausted("out of memory allocating " + std::to_string(bytes) + " bytes");
    }
    const auto end = reinterpret_cast<uintptr_t>(buf.get() + 1);
    t.data_ = reinterpret_cast<void*>((end + 63) / 64 * 64);
    std::memset(t.data_, 0, alloc);
    t.buffer_ = std::move(buf);
    return t;
  }
  auto buf = std::make_shared<Buffer>();
  if (dtype == DataType::kString) {
    buf->strings = static_cast<std::string*>(std::aligned_alloc(64, alloc));
    if (!buf->strings) return Status::ResourceExhausted("out of memory allocating " + std::to_string(bytes) + " bytes");
    for (int64_t i = 0; i < n; ++i) new (buf->strings + i) std::string();
    buf->count = static_cast<size_t>(n);
    t.data_ = buf->strings;
  } else {
    buf->bytes = std::aligned_alloc(64, alloc);
    if (!buf->bytes) return Status::ResourceExhausted("out of memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(buf->bytes, 0, alloc);
    t.data_ = buf->bytes;
  }
  t.buffer_ = std::move(buf);
  return t;
}

Result<Tensor> Tensor::FromBytes(DataType dtype, Shape shape, const void* bytes, size_t nbytes) {
  if (dtype == DataType::kString) return Status::InvalidArgument("use FromStrings for string tensors");
  IL_ASSIGN_OR_RETURN(Tensor t, Create(dtype, std::move(shape)));
  if (nbytes != t.nbytes()) {
    return Status::InvalidArgument("tensor of shape " + ShapeToString(t.shape()) + " and dtype " +
                                   DataTypeName(dtype) + " needs " + std::to_string(t.nbytes()) +
                                   " bytes, got " + std::to_string(nbytes));
  }
  if (nbytes) std::memcpy(t.data_, bytes, nbytes);
  return t;
}

Tensor Tensor::FromStrings(Shape shape, std::vector<std::string> values) {
  auto r = Create(DataType::kString, std::move(shape));
  if (!r.ok()) return Tensor();
  Tensor t = std::move(r).value();
  for (int64_t i = 0; i < t.size() && i < static_cast<int64_t>(values.size()); ++i) t.strings()[i] = std::move(values[i]);
  return t;
}

Tensor Tensor::View(DataType dtype, Shape shape, void* data, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.size_ = ShapeElementCount(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.buffer_ = std::move(keep_alive);
  return t;
}

Tensor Tensor::Scalar(float v) { return FromVector<float>(DataType::kFloat, {}, {v}); }

Result<Tensor> Tensor::Reshaped(Shape new_shape) const {
  if (ShapeElementCount(new_shape) != size_) {
    return Status::InvalidArgument("cannot reshape " + ShapeToString(shape_) + " to " + ShapeToString(new_shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(new_shape);
  return t;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  auto r = Create(dtype_, shape_);
  if (!r.ok()) return Tensor();
  Tensor t = std::move(r).value();
  if (dtype_ == DataType::kString) {
    for (int64_t i = 0; i < size_; ++i) t.strings()[i] = strings()[i];
  } else if (nbytes()) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

Value Value::MakeSequence(std::vector<Tensor> elems, DataType elem_type) {
  Value v;
  v.kind_ = Kind::kSequence;
  v.seq_ = std::make_shared<const std::vector<Tensor>>(std::move(elems));
  v.seq_type_ = elem_type;
  return v;
}

std::string Value::DebugString() const {
  switch (kind_) {
    case Kind::kNone: return "none";
    case Kind::kTensor: return std::string(DataTypeName(tensor_.dtype())) + ShapeToString(tensor_.shape());
    case Kind::kSequence: return "sequence<" + std::string(DataTypeName(seq_type_)) + ">(" + std::to_string(seq_->size()) + ")";
  }
  return "?";
}

}  // namespace inferloop
