#include "frontends/v2_tensor_data.h"

#include <bit>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "base/status_macros.h"

namespace inferloop::frontends {

static_assert(std::endian::native == std::endian::little, "raw tensor data is little-endian; add byte swapping");

Result<int64_t> CheckDeclaredShape(const std::string& what, DataType dtype, const Shape& shape, size_t max_bytes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) {
      return Status::InvalidArgument(what + ": shape " + ShapeToString(shape) + " has a negative dimension");
    }
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) overflow = true;
    if (!overflow) n *= d;
  }
  // A zero dimension anywhere makes the count 0 even after an overflowing prefix.
  for (int64_t d : shape) {
    if (d == 0) return int64_t{0};
  }
  if (overflow) {
    return Status::InvalidArgument(what + ": shape " + ShapeToString(shape) + " has more elements than fit in int64");
  }
  size_t esize = dtype == DataType::kString ? sizeof(std::string) : DataTypeSize(dtype);
  if (esize == 0) return Status::InvalidArgument(what + ": datatype has no element size");
  if (static_cast<uint64_t>(n) > max_bytes / esize) {
    return Status::ResourceExhausted(what + ": shape " + ShapeToString(shape) + " needs more than the limit of " +
                                     std::to_string(max_bytes) + " bytes");
  }
  return n;
}

Result<Tensor> TensorFromRawBytes(const std::string& what, DataType dtype, const Shape& shape, std::string_view bytes,
                                  size_t max_bytes) {
  IL_ASSIGN_OR_RETURN(int64_t n, CheckDeclaredShape(what, dtype, shape, max_bytes));
  if (dtype != DataType::kString) {
    size_t want = static_cast<size_t>(n) * DataTypeSize(dtype);
    if (bytes.size() != want) {
      return Status::InvalidArgument(what + ": shape " + ShapeToString(shape) + " needs " + std::to_string(want) +
                                     " bytes of data, got " + std::to_string(bytes.size()));
    }
    IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape, max_bytes));
    if (want) std::memcpy(t.raw_data(), bytes.data(), want);
    if (dtype == DataType::kBool) {
      auto* b = t.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  // BYTES: walk the elements first, so a short or long buffer fails before the allocation.
  size_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (bytes.size() - pos < 4) {
      return Status::InvalidArgument(what + ": BYTES data ends inside the length of element " + std::to_string(i) +
                                     " of " + std::to_string(n));
    }
    uint32_t len;
    std::memcpy(&len, bytes.data() + pos, 4);
    pos += 4;
    if (bytes.size() - pos < len) {
      return Status::InvalidArgument(what + ": BYTES element " + std::to_string(i) + " declares " +
                                     std::to_string(len) + " bytes but only " + std::to_string(bytes.size() - pos) +
                                     " remain");
    }
    pos += len;
  }
  if (pos != bytes.size()) {
    return Status::InvalidArgument(what + ": " + std::to_string(bytes.size() - pos) + " bytes left over after " +
                                   std::to_string(n) + " BYTES elements");
  }
  IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape, max_bytes));
  pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t len;
    std::memcpy(&len, bytes.data() + pos, 4);
    pos += 4;
    t.strings()[i].assign(bytes.data() + pos, len);
    pos += len;
  }
  return t;
}

size_t RawByteSize(const Tensor& t) {
  if (t.dtype() != DataType::kString) return t.nbytes();
  size_t total = 0;
  for (int64_t i = 0; i < t.size(); ++i) total += 4 + t.strings()[i].size();
  return total;
}

void AppendRawBytes(const Tensor& t, std::string* out) {
  if (t.dtype() != DataType::kString) {
    out->append(static_cast<const char*>(t.raw_data()), t.nbytes());
    return;
  }
  for (int64_t i = 0; i < t.size(); ++i) {
    const std::string& s = t.strings()[i];
    uint32_t len = static_cast<uint32_t>(s.size());
    char prefix[4];
    std::memcpy(prefix, &len, 4);
    out->append(prefix, 4);
    out->append(s);
  }
}

}  // namespace inferloop::frontends
