// GGUF v3 model files (llama.cpp's format): header, metadata key/values, tensor infos, and the
// tensors' bytes as spans into the file, with no weight copies.
//
// Layout (all little-endian): "GGUF" magic, uint32 version (3), uint64 tensor count, uint64
// key/value count; each key/value: string key, uint32 value type, value; each tensor info:
// string name, uint32 n_dims (<= 4), uint64 dims[n_dims] (dims[0] innermost), uint32 ggml type,
// uint64 offset; then padding to general.alignment (default 32) and the tensor data section,
// offsets relative to its start and multiples of the alignment. A string is a uint64 length and
// that many bytes (no terminator); an array is a uint32 element type, a uint64 count, elements.
//
// Parsing checks everything against the bytes actually present before allocating or reading:
// a malformed or truncated file gives an InvalidArgument Status naming the problem (and the
// byte offset where it was found), never a crash or an allocation larger than a small multiple
// of the file's size. Versions 1 and 2 give Unimplemented.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inferloop/status.h"
#include "llm/ggml_types.h"
#include "llm/mapped_file.h"

namespace inferloop::llm {

enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
// "uint32", "string", "array", ...; "type 42" for unknown ids.
std::string GgufValueTypeName(GgufValueType t);

// One metadata value. Strings and numeric array elements are views into the file's bytes (valid
// while the GgufFile lives).
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  uint64_t u = 0;          // kUint8/16/32/64, kBool (0 or 1)
  int64_t i = 0;           // kInt8/16/32/64
  double f = 0;            // kFloat32/64
  std::string_view str;    // kString
  // kArray:
  GgufValueType elem_type = GgufValueType::kUint8;
  uint64_t count = 0;
  std::span<const uint8_t> raw;            // numeric/bool elements, packed little-endian
  std::vector<std::string_view> strings;   // string elements
  std::vector<GgufValue> arrays;           // nested-array elements

  // Numeric or bool array element `k` (< count) as the three views above; false if not numeric.
  bool ElementAsDouble(uint64_t k, double* out) const;
};

struct GgufTensorInfo {
  std::string_view name;
  std::vector<uint64_t> dims;  // dims[0] is the innermost (row) length; empty = scalar
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;         // relative to the data section
  uint64_t elements = 0;
  uint64_t bytes = 0;
  std::span<const uint8_t> data;  // `bytes` bytes inside the file
};

class GgufFile {
 public:
  // Maps `path` (mmap) and parses it. Errors carry the path.
  static Result<GgufFile> Open(const std::string& path);
  // Parses bytes owned by the caller, which must outlive the GgufFile and everything taken
  // from it.
  static Result<GgufFile> Parse(std::span<const uint8_t> bytes);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section
  uint64_t file_size() const { return bytes_.size(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string_view, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* Find(std::string_view key) const;

  // Typed getters: NotFound "key 'x' missing", or InvalidArgument "key 'x' has type T,
  // expected U". No conversions between types.
  Result<uint8_t> GetUint8(std::string_view key) const;
  Result<int8_t> GetInt8(std::string_view key) const;
  Result<uint16_t> GetUint16(std::string_view key) const;
  Result<int16_t> GetInt16(std::string_view key) const;
  Result<uint32_t> GetUint32(std::string_view key) const;
  Result<int32_t> GetInt32(std::string_view key) const;
  Result<uint64_t> GetUint64(std::string_view key) const;
  Result<int64_t> GetInt64(std::string_view key) const;
  Result<float> GetFloat32(std::string_view key) const;
  Result<double> GetFloat64(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string_view> GetString(std::string_view key) const;
  // Any integer type whose value fits in uint64 / int64 (architecture hyperparameters are
  // written as uint32 by some converters and int32 or uint64 by others).
  Result<uint64_t> GetUnsigned(std::string_view key) const;
  // Arrays: the element type must match ("key 'x' has type array of int32, expected array of
  // string").
  Result<std::vector<std::string_view>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetFloat32Array(std::string_view key) const;
  Result<std::vector<int32_t>> GetInt32Array(std::string_view key) const;
  Result<std::vector<uint32_t>> GetUint32Array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  friend class GgufParser;
  Result<const GgufValue*> Typed(std::string_view key, GgufValueType want) const;
  Result<const GgufValue*> TypedArray(std::string_view key, GgufValueType elem) const;

  std::optional<MappedFile> mapping_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> kv_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace inferloop::llm
