#include "llm/gguf_file.h"

#include <cstring>
#include <limits>

#include "base/status_macros.h"

namespace inferloop::llm {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;

// Fixed byte size of a scalar value type; 0 for string/array/unknown.
uint64_t ScalarBytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16: case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64: case GgufValueType::kInt64: case GgufValueType::kFloat64: return 8;
    default: return 0;
  }
}

bool KnownValueType(uint32_t t) { return t <= 12; }

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Decodes a scalar of type `t` at `p` into the value's u/i/f fields.
void DecodeScalar(GgufValueType t, const uint8_t* p, GgufValue* v) {
  switch (t) {
    case GgufValueType::kUint8: v->u = Load<uint8_t>(p); break;
    case GgufValueType::kBool: v->u = Load<uint8_t>(p) != 0; break;
    case GgufValueType::kInt8: v->i = Load<int8_t>(p); break;
    case GgufValueType::kUint16: v->u = Load<uint16_t>(p); break;
    case GgufValueType::kInt16: v->i = Load<int16_t>(p); break;
    case GgufValueType::kUint32: v->u = Load<uint32_t>(p); break;
    case GgufValueType::kInt32: v->i = Load<int32_t>(p); break;
    case GgufValueType::kFloat32: v->f = Load<float>(p); break;
    case GgufValueType::kUint64: v->u = Load<uint64_t>(p); break;
    case GgufValueType::kInt64: v->i = Load<int64_t>(p); break;
    case GgufValueType::kFloat64: v->f = Load<double>(p); break;
    default: break;
  }
}

std::string TypeDescription(const GgufValue& v) {
  if (v.type != GgufValueType::kArray) return GgufValueTypeName(v.type);
  return "array of " + GgufValueTypeName(v.elem_type);
}

}  // namespace

std::string GgufValueTypeName(GgufValueType t) {
  static constexpr const char* kNames[] = {"uint8", "int8",  "uint16", "int16",  "uint32", "int32", "float32",
                                           "bool",  "string", "array", "uint64", "int64", "float64"};
  const uint32_t id = static_cast<uint32_t>(t);
  return id <= 12 ? kNames[id] : "type " + std::to_string(id);
}

bool GgufValue::ElementAsDouble(uint64_t k, double* out) const {
  const uint64_t size = ScalarBytes(elem_type);
  if (type != GgufValueType::kArray || size == 0 || k >= count) return false;
  GgufValue e;
  DecodeScalar(elem_type, raw.data() + k * size, &e);
  switch (elem_type) {
    case GgufValueType::kInt8: case GgufValueType::kInt16: case GgufValueType::kInt32:
    case GgufValueType::kInt64: *out = static_cast<double>(e.i); break;
    case GgufValueType::kFloat32: case GgufValueType::kFloat64: *out = e.f; break;
    default: *out = static_cast<double>(e.u); break;
  }
  return true;
}

// A bounds-checked cursor over the file's bytes that fills a GgufFile.
class GgufParser {
 public:
  explicit GgufParser(std::span<const uint8_t> bytes) : b_(bytes) {}

  Status Run(GgufFile* out) {
    out->bytes_ = b_;
    uint32_t magic = 0;
    if (b_.size() < 4) return Error("file is " + std::to_string(b_.size()) + " bytes, too short for a GGUF header");
    IL_RETURN_IF_ERROR(ReadU32(&magic, "magic"));
    if (magic != kMagic) {
      char m[5] = {};
      std::memcpy(m, b_.data(), 4);
      for (char& c : m)
        if (c && (c < 0x20 || c > 0x7e)) c = '?';
      return Status::InvalidArgument("not a GGUF file: magic is '" + std::string(m) + "', expected 'GGUF'");
    }
    IL_RETURN_IF_ERROR(ReadU32(&out->version_, "version"));
    if (out->version_ == 1 || out->version_ == 2)
      return Status::Unimplemented("GGUF version " + std::to_string(out->version_) +
                                   " is not supported (only version 3); re-convert the model with a current llama.cpp");
    if (out->version_ != 3)
      return Status::InvalidArgument("unknown GGUF version " + std::to_string(out->version_) + " (supported: 3)");
    uint64_t n_tensors = 0, n_kv = 0;
    IL_RETURN_IF_ERROR(ReadU64(&n_tensors, "tensor count"));
    IL_RETURN_IF_ERROR(ReadU64(&n_kv, "metadata key/value count"));
    // Smallest encodings: a key/value is >= 8 (key length) + 4 (type) + 1 bytes; a tensor
    // info is >= 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
    if (n_kv > Remaining() / 13)
      return Error("metadata key/value count " + std::to_string(n_kv) + " cannot fit in the " +
                   std::to_string(Remaining()) + " bytes left");
    if (n_tensors > Remaining() / 24)
      return Error("tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                   std::to_string(Remaining()) + " bytes left");

    out->kv_.reserve(n_kv);
    for (uint64_t k = 0; k < n_kv; ++k) {
      const size_t at = pos_;
      std::string_view key;
      IL_RETURN_IF_ERROR(ReadString(&key, "metadata key #" + std::to_string(k)));
      uint32_t type = 0;
      IL_RETURN_IF_ERROR(ReadU32(&type, "type of key '" + std::string(key) + "'"));
      GgufValue value;
      IL_RETURN_IF_ERROR(ReadValue(type, &value, 0, std::string(key)));
      if (!out->kv_index_.emplace(key, out->kv_.size()).second)
        return ErrorAt(at, "duplicate metadata key '" + std::string(key) + "'");
      out->kv_.emplace_back(key, std::move(value));
    }

    if (const GgufValue* a = out->Find("general.alignment")) {
      if (a->type != GgufValueType::kUint32)
        return Status::InvalidArgument("key 'general.alignment' has type " + TypeDescription(*a) + ", expected uint32");
      if (a->u == 0 || (a->u & (a->u - 1)) != 0)
        return Status::InvalidArgument("general.alignment " + std::to_string(a->u) + " is not a power of two");
      out->alignment_ = static_cast<uint32_t>(a->u);
    }

    out->tensors_.reserve(n_tensors);
    for (uint64_t t = 0; t < n_tensors; ++t) IL_RETURN_IF_ERROR(ReadTensorInfo(t, out));

    // Data section: the end of the infos rounded up to the alignment (may equal the file size
    // when there are no tensors or all are empty).
    const uint64_t align = out->alignment_;
    uint64_t data = pos_;
    if (data % align) data += align - data % align;
    if (data > b_.size()) {
      if (n_tensors == 0) data = b_.size();  // no data section needed
      else return Error("tensor data section would start at " + std::to_string(data) + ", past the end of the " +
                        std::to_string(b_.size()) + "-byte file");
    }
    out->data_offset_ = data;
    const uint64_t data_size = b_.size() - data;
    for (GgufTensorInfo& ti : out->tensors_) {
      if (ti.offset % align != 0)
        return Status::InvalidArgument("tensor '" + std::string(ti.name) + "' offset " + std::to_string(ti.offset) +
                                       " is not a multiple of the alignment " + std::to_string(align));
      if (ti.offset > data_size || ti.bytes > data_size - ti.offset)
        return Status::InvalidArgument("tensor '" + std::string(ti.name) + "' (" + std::to_string(ti.bytes) +
                                       " bytes at data offset " + std::to_string(ti.offset) +
                                       ") extends past the end of the file (data section is " +
                                       std::to_string(data_size) + " bytes)");
      ti.data = b_.subspan(data + ti.offset, ti.bytes);
    }
    return Status::Ok();
  }

 private:
  uint64_t Remaining() const { return b_.size() - pos_; }
  Status Error(const std::string& what) const { return ErrorAt(pos_, what); }
  Status ErrorAt(size_t at, const std::string& what) const {
    return Status::InvalidArgument("malformed GGUF at byte " + std::to_string(at) + ": " + what);
  }
  Status Need(uint64_t n, const std::string& what) const {
    if (n > Remaining())
      return Error("truncated: " + what + " needs " + std::to_string(n) + " bytes, " + std::to_string(Remaining()) +
                   " left");
    return Status::Ok();
  }
  Status ReadU32(uint32_t* v, const std::string& what) {
    IL_RETURN_IF_ERROR(Need(4, what));
    *v = Load<uint32_t>(b_.data() + pos_);
    pos_ += 4;
    return Status::Ok();
  }
  Status ReadU64(uint64_t* v, const std::string& what) {
    IL_RETURN_IF_ERROR(Need(8, what));
    *v = Load<uint64_t>(b_.data() + pos_);
    pos_ += 8;
    return Status::Ok();
  }
  Status ReadString(std::string_view* s, const std::string& what) {
    uint64_t len = 0;
    IL_RETURN_IF_ERROR(ReadU64(&len, "length of " + what));
    IL_RETURN_IF_ERROR(Need(len, what + " (string of " + std::to_string(len) + " bytes)"));
    *s = std::string_view(reinterpret_cast<const char*>(b_.data() + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status ReadValue(uint32_t type, GgufValue* v, int depth, const std::string& key) {
    if (!KnownValueType(type))
      return Error("key '" + key + "' has unknown value type " + std::to_string(type));
    v->type = static_cast<GgufValueType>(type);
    if (v->type == GgufValueType::kString) return ReadString(&v->str, "value of key '" + key + "'");
    if (v->type != GgufValueType::kArray) {
      const uint64_t size = ScalarBytes(v->type);
      IL_RETURN_IF_ERROR(Need(size, "value of key '" + key + "'"));
      DecodeScalar(v->type, b_.data() + pos_, v);
      pos_ += size;
      return Status::Ok();
    }
    if (depth >= kMaxArrayDepth) return Error("key '" + key + "': arrays nested deeper than 8");
    uint32_t elem = 0;
    IL_RETURN_IF_ERROR(ReadU32(&elem, "element type of array '" + key + "'"));
    if (!KnownValueType(elem)) return Error("array '" + key + "' has unknown element type " + std::to_string(elem));
    v->elem_type = static_cast<GgufValueType>(elem);
    IL_RETURN_IF_ERROR(ReadU64(&v->count, "length of array '" + key + "'"));
    // Smallest element encoding: scalar size, 8 for a string, 12 for a nested array.
    const uint64_t min_elem = v->elem_type == GgufValueType::kString  ? 8
                              : v->elem_type == GgufValueType::kArray ? 12
                                                                      : ScalarBytes(v->elem_type);
    if (v->count > Remaining() / min_elem)
      return Error("array '" + key + "' of " + std::to_string(v->count) + " " + GgufValueTypeName(v->elem_type) +
                   " elements cannot fit in the " + std::to_string(Remaining()) + " bytes left");
    if (v->elem_type == GgufValueType::kString) {
      v->strings.resize(v->count);
      for (uint64_t k = 0; k < v->count; ++k)
        IL_RETURN_IF_ERROR(ReadString(&v->strings[k], "element " + std::to_string(k) + " of array '" + key + "'"));
    } else if (v->elem_type == GgufValueType::kArray) {
      v->arrays.resize(v->count);
      // Nested arrays carry no per-element type tag: each is element type, count, elements.
      for (uint64_t k = 0; k < v->count; ++k)
        IL_RETURN_IF_ERROR(ReadValue(static_cast<uint32_t>(GgufValueType::kArray), &v->arrays[k], depth + 1, key));
    } else {
      const uint64_t n = v->count * min_elem;  // fits: count <= Remaining() / min_elem
      v->raw = b_.subspan(pos_, n);
      pos_ += n;
    }
    return Status::Ok();
  }

  Status ReadTensorInfo(uint64_t index, GgufFile* out) {
    const size_t at = pos_;
    GgufTensorInfo ti;
    IL_RETURN_IF_ERROR(ReadString(&ti.name, "name of tensor #" + std::to_string(index)));
    const std::string name(ti.name);
    uint32_t n_dims = 0;
    IL_RETURN_IF_ERROR(ReadU32(&n_dims, "dimension count of tensor '" + name + "'"));
    if (n_dims > kMaxDims)
      return ErrorAt(at, "tensor '" + name + "' has " + std::to_string(n_dims) + " dimensions (at most 4)");
    ti.dims.resize(n_dims);
    uint64_t elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      IL_RETURN_IF_ERROR(ReadU64(&ti.dims[d], "dimension " + std::to_string(d) + " of tensor '" + name + "'"));
      if (ti.dims[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      else if (ti.dims[d] != 0 && elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ti.dims[d])
        overflow = true;
      else elements *= ti.dims[d];
    }
    if (overflow) return ErrorAt(at, "tensor '" + name + "' has an element count that overflows int64");
    uint32_t type = 0;
    IL_RETURN_IF_ERROR(ReadU32(&type, "type of tensor '" + name + "'"));
    const GgmlTypeTraits* traits = FindGgmlTypeTraits(type);
    if (!traits) return ErrorAt(at, "tensor '" + name + "' has unknown ggml type id " + std::to_string(type));
    ti.type = static_cast<GgmlType>(type);
    IL_RETURN_IF_ERROR(ReadU64(&ti.offset, "data offset of tensor '" + name + "'"));
    const uint64_t row = n_dims ? ti.dims[0] : 1;
    if (row % traits->block_elements != 0)
      return ErrorAt(at, "tensor '" + name + "' of type " + traits->name + " has rows of " + std::to_string(row) +
                             " elements, not a multiple of the block size " + std::to_string(traits->block_elements));
    ti.elements = elements;
    auto bytes = GgmlRowBytes(type, elements);
    if (!bytes.ok()) return ErrorAt(at, "tensor '" + name + "': " + bytes.status().message());
    ti.bytes = *bytes;
    if (!out->tensor_index_.emplace(ti.name, out->tensors_.size()).second)
      return ErrorAt(at, "duplicate tensor name '" + name + "'");
    out->tensors_.push_back(std::move(ti));
    return Status::Ok();
  }

  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

Result<GgufFile> GgufFile::Parse(std::span<const uint8_t> bytes) {
  GgufFile file;
  GgufParser parser(bytes);
  IL_RETURN_IF_ERROR(parser.Run(&file));
  return file;
}

Result<GgufFile> GgufFile::Open(const std::string& path) {
  auto mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  auto file = Parse(mapped->bytes());
  if (!file.ok()) return file.status().WithContext(path);
  file->mapping_.emplace(std::move(mapped).value());
  return file;
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<const GgufValue*> GgufFile::Typed(std::string_view key, GgufValueType want) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound("key '" + std::string(key) + "' missing");
  if (v->type != want)
    return Status::InvalidArgument("key '" + std::string(key) + "' has type " + TypeDescription(*v) + ", expected " +
                                   GgufValueTypeName(want));
  return v;
}

Result<const GgufValue*> GgufFile::TypedArray(std::string_view key, GgufValueType elem) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound("key '" + std::string(key) + "' missing");
  if (v->type != GgufValueType::kArray || v->elem_type != elem)
    return Status::InvalidArgument("key '" + std::string(key) + "' has type " + TypeDescription(*v) +
                                   ", expected array of " + GgufValueTypeName(elem));
  return v;
}

#define IL_GGUF_GETTER(Name, CType, Enum, field)                  \
  Result<CType> GgufFile::Name(std::string_view key) const {      \
    IL_ASSIGN_OR_RETURN(const GgufValue* v, Typed(key, Enum));    \
    return static_cast<CType>(v->field);                          \
  }
IL_GGUF_GETTER(GetUint8, uint8_t, GgufValueType::kUint8, u)
IL_GGUF_GETTER(GetInt8, int8_t, GgufValueType::kInt8, i)
IL_GGUF_GETTER(GetUint16, uint16_t, GgufValueType::kUint16, u)
IL_GGUF_GETTER(GetInt16, int16_t, GgufValueType::kInt16, i)
IL_GGUF_GETTER(GetUint32, uint32_t, GgufValueType::kUint32, u)
IL_GGUF_GETTER(GetInt32, int32_t, GgufValueType::kInt32, i)
IL_GGUF_GETTER(GetUint64, uint64_t, GgufValueType::kUint64, u)
IL_GGUF_GETTER(GetInt64, int64_t, GgufValueType::kInt64, i)
IL_GGUF_GETTER(GetFloat32, float, GgufValueType::kFloat32, f)
IL_GGUF_GETTER(GetFloat64, double, GgufValueType::kFloat64, f)
IL_GGUF_GETTER(GetBool, bool, GgufValueType::kBool, u)
IL_GGUF_GETTER(GetString, std::string_view, GgufValueType::kString, str)
#undef IL_GGUF_GETTER

Result<uint64_t> GgufFile::GetUnsigned(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound("key '" + std::string(key) + "' missing");
  switch (v->type) {
    case GgufValueType::kUint8: case GgufValueType::kUint16: case GgufValueType::kUint32:
    case GgufValueType::kUint64: return v->u;
    case GgufValueType::kInt8: case GgufValueType::kInt16: case GgufValueType::kInt32: case GgufValueType::kInt64:
      if (v->i < 0)
        return Status::InvalidArgument("key '" + std::string(key) + "' is " + std::to_string(v->i) +
                                       ", expected a non-negative integer");
      return static_cast<uint64_t>(v->i);
    default:
      return Status::InvalidArgument("key '" + std::string(key) + "' has type " + TypeDescription(*v) +
                                     ", expected an integer");
  }
}

Result<std::vector<std::string_view>> GgufFile::GetStringArray(std::string_view key) const {
  IL_ASSIGN_OR_RETURN(const GgufValue* v, TypedArray(key, GgufValueType::kString));
  return v->strings;
}

template <typename T>
static std::vector<T> UnpackArray(const GgufValue& v) {
  std::vector<T> out(v.count);
  if (v.count) std::memcpy(out.data(), v.raw.data(), v.count * sizeof(T));
  return out;
}

Result<std::vector<float>> GgufFile::GetFloat32Array(std::string_view key) const {
  IL_ASSIGN_OR_RETURN(const GgufValue* v, TypedArray(key, GgufValueType::kFloat32));
  return UnpackArray<float>(*v);
}
Result<std::vector<int32_t>> GgufFile::GetInt32Array(std::string_view key) const {
  IL_ASSIGN_OR_RETURN(const GgufValue* v, TypedArray(key, GgufValueType::kInt32));
  return UnpackArray<int32_t>(*v);
}
Result<std::vector<uint32_t>> GgufFile::GetUint32Array(std::string_view key) const {
  IL_ASSIGN_OR_RETURN(const GgufValue* v, TypedArray(key, GgufValueType::kUint32));
  return UnpackArray<uint32_t>(*v);
}

}  // namespace inferloop::llm
