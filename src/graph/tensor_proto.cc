#include "graph/tensor_proto.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/status_macros.h"

namespace inferloop {
namespace {

bool IsSubByte(DataType t) {
  return t == DataType::kInt4 || t == DataType::kUInt4 || t == DataType::kFloat4E2M1 ||
         t == DataType::kInt2 || t == DataType::kUInt2;
}
int BitsOf(DataType t) { return (t == DataType::kInt2 || t == DataType::kUInt2) ? 2 : 4; }

// Unpacks `count` sub-byte elements from packed bytes (lowest bits first).
Status UnpackSubByte(DataType t, const uint8_t* packed, size_t nbytes, Tensor* out) {
  const int bits = BitsOf(t);
  const int per_byte = 8 / bits;
  const size_t need = (static_cast<size_t>(out->size()) + per_byte - 1) / per_byte;
  if (nbytes != need)
    return Status::InvalidArgument("packed " + std::string(DataTypeName(t)) + " data has " + std::to_string(nbytes) +
                                   " bytes, expected " + std::to_string(need));
  uint8_t* dst = out->data<uint8_t>();
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  const bool sign = t == DataType::kInt4 || t == DataType::kInt2;
  for (int64_t i = 0; i < out->size(); ++i) {
    uint8_t v = (packed[i / per_byte] >> ((i % per_byte) * bits)) & mask;
    if (sign && (v & (1u << (bits - 1)))) v = static_cast<uint8_t>(v | ~mask);  // sign-extend into int8
    dst[i] = v;
  }
  return Status::Ok();
}

bool SafeRelative(const std::string& loc) {
  std::filesystem::path p(loc);
  if (p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

Result<std::string> ReadExternal(const onnxpb::TensorProto& proto, const std::string& base_dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (...) {
      return Status::InvalidArgument("tensor '" + proto.name() + "': bad external_data " + kv.key() + "='" + kv.value() + "'");
    }
  }
  if (location.empty()) return Status::InvalidArgument("tensor '" + proto.name() + "': external data without a location");
  if (!SafeRelative(location))
    return Status::InvalidArgument("tensor '" + proto.name() + "': external data location '" + location +
                                   "' must be a relative path inside the model's folder");
  if (offset < 0) return Status::InvalidArgument("tensor '" + proto.name() + "': negative external data offset");
  std::string path = (std::filesystem::path(base_dir.empty() ? "." : base_dir) / location).string();
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("tensor '" + proto.name() + "': external data file '" + path + "' not found");
  f.seekg(0, std::ios::end);
  int64_t fsize = static_cast<int64_t>(f.tellg());
  if (length < 0) length = fsize - offset;
  if (offset > fsize || length > fsize - offset)
    return Status::InvalidArgument("tensor '" + proto.name() + "': external data range [" + std::to_string(offset) + ", +" +
                                   std::to_string(length) + ") exceeds file '" + path + "' of " + std::to_string(fsize) + " bytes");
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
  if (!f) return Status::InvalidArgument("tensor '" + proto.name() + "': failed reading external data from '" + path + "'");
  return bytes;
}

template <typename Dst, typename Src>
void CopyConvert(const Src& src, Tensor* t) {
  Dst* d = t->data<Dst>();
  for (int i = 0; i < src.size(); ++i) d[i] = static_cast<Dst>(src.Get(i));
}

// The number of values the proto carries for `dt`, in the units `n` counts (elements), or
// the byte size of raw/external data, compared with what `n` elements need.
Status CheckDataSize(const onnxpb::TensorProto& p, DataType dt, int64_t n, const std::string& who) {
  if (dt == DataType::kString) {
    if (p.string_data_size() != n)
      return Status::InvalidArgument(who + " has " + std::to_string(p.string_data_size()) + " strings for " + std::to_string(n) + " elements");
    return Status::Ok();
  }
  const uint64_t un = static_cast<uint64_t>(n);
  uint64_t need_bytes;
  if (IsSubByte(dt)) {
    const uint64_t per_byte = 8 / BitsOf(dt);
    need_bytes = (un + per_byte - 1) / per_byte;
  } else {
    const uint64_t es = DataTypeSize(dt);
    if (es && un > UINT64_MAX / es) return Status::InvalidArgument(who + " is too large");
    need_bytes = un * es;
  }
  if (p.data_location() == onnxpb::TensorProto::EXTERNAL) {
    for (const auto& kv : p.external_data()) {
      if (kv.key() != "length") continue;
      char* end = nullptr;
      unsigned long long len = std::strtoull(kv.value().c_str(), &end, 10);
      if (end && *end == '\0' && len != need_bytes)
        return Status::InvalidArgument(who + " needs " + std::to_string(need_bytes) + " bytes of external data, its length says " + kv.value());
    }
    return Status::Ok();  // the file's size is checked against offset/length when read
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != need_bytes)
      return Status::InvalidArgument(who + " needs " + std::to_string(need_bytes) + " bytes of raw_data, has " + std::to_string(p.raw_data().size()));
    return Status::Ok();
  }
  int64_t have;
  switch (dt) {
    case DataType::kFloat: case DataType::kComplex64: have = p.float_data_size(); break;
    case DataType::kDouble: case DataType::kComplex128: have = p.double_data_size(); break;
    case DataType::kInt64: have = p.int64_data_size(); break;
    case DataType::kUInt32: case DataType::kUInt64: have = p.uint64_data_size(); break;
    default: have = p.int32_data_size();
  }
  int64_t want = (dt == DataType::kComplex64 || dt == DataType::kComplex128) ? 2 * n : n;
  if (IsSubByte(dt)) want = static_cast<int64_t>(need_bytes);  // one packed byte per int32 entry
  if (have != want)
    return Status::InvalidArgument(who + " of shape " + ShapeToString(Shape(p.dims().begin(), p.dims().end())) + " has " +
                                   std::to_string(have) + " values, expected " + std::to_string(want));
  return Status::Ok();
}

}  // namespace

Result<Tensor> TensorFromProto(const onnxpb::TensorProto& proto, const std::string& base_dir) {
  const std::string who = "tensor '" + proto.name() + "'";
  if (!IsKnownDataType(proto.data_type()))
    return Status::InvalidArgument(who + " has unknown data_type " + std::to_string(proto.data_type()));
  DataType dt = static_cast<DataType>(proto.data_type());
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape)
    if (d < 0) return Status::InvalidArgument(who + " has negative dimension in " + ShapeToString(shape));
  if (proto.has_segment()) return Status::Unimplemented(who + " uses segments, which are not supported");
  // Check that the file really holds the data the dims claim before allocating anything, so a
  // few corrupt bytes cannot make the loader reserve gigabytes.
  const int64_t n = ShapeElementCount(shape);
  if (n < 0) return Status::InvalidArgument(who + " has a shape whose element count overflows: " + ShapeToString(shape));
  IL_RETURN_IF_ERROR(CheckDataSize(proto, dt, n, who));
  IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dt, shape));

  if (dt == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) t.strings()[i] = proto.string_data(static_cast<int>(i));
    return t;
  }

  const std::string* raw = nullptr;
  std::string external;
  if (proto.data_location() == onnxpb::TensorProto::EXTERNAL) {
    IL_ASSIGN_OR_RETURN(external, ReadExternal(proto, base_dir));
    raw = &external;
  } else if (proto.has_raw_data()) {
    raw = &proto.raw_data();
  }
  if (raw) {
    if (IsSubByte(dt)) {
      IL_RETURN_IF_ERROR(UnpackSubByte(dt, reinterpret_cast<const uint8_t*>(raw->data()), raw->size(), &t).WithContext(who));
      return t;
    }
    if (raw->size() != t.nbytes())
      return Status::InvalidArgument(who + " of shape " + ShapeToString(shape) + " and dtype " + DataTypeName(dt) + " needs " +
                                     std::to_string(t.nbytes()) + " bytes of raw_data, has " + std::to_string(raw->size()));
    if (t.nbytes()) std::memcpy(t.raw_data(), raw->data(), t.nbytes());
    return t;
  }

  // CheckDataSize has matched the typed field's value count to the shape.
  switch (dt) {
    case DataType::kFloat:
      CopyConvert<float>(proto.float_data(), &t);
      break;
    case DataType::kComplex64:
      std::memcpy(t.raw_data(), proto.float_data().data(), t.nbytes());
      break;
    case DataType::kDouble:
      CopyConvert<double>(proto.double_data(), &t);
      break;
    case DataType::kComplex128:
      std::memcpy(t.raw_data(), proto.double_data().data(), t.nbytes());
      break;
    case DataType::kInt64:
      CopyConvert<int64_t>(proto.int64_data(), &t);
      break;
    case DataType::kUInt32:
      CopyConvert<uint32_t>(proto.uint64_data(), &t);
      break;
    case DataType::kUInt64:
      CopyConvert<uint64_t>(proto.uint64_data(), &t);
      break;
    case DataType::kInt32:
      CopyConvert<int32_t>(proto.int32_data(), &t);
      break;
    case DataType::kInt16: case DataType::kUInt16: case DataType::kFloat16: case DataType::kBFloat16:
      CopyConvert<uint16_t>(proto.int32_data(), &t);
      break;
    case DataType::kInt8: case DataType::kUInt8: case DataType::kBool: case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2: case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      CopyConvert<uint8_t>(proto.int32_data(), &t);
      break;
    case DataType::kInt4: case DataType::kUInt4: case DataType::kFloat4E2M1: case DataType::kInt2: case DataType::kUInt2: {
      // int32_data holds one packed byte per entry.
      std::string packed;
      for (int32_t v : proto.int32_data()) packed.push_back(static_cast<char>(v & 0xff));
      IL_RETURN_IF_ERROR(UnpackSubByte(dt, reinterpret_cast<const uint8_t*>(packed.data()), packed.size(), &t).WithContext(who));
      break;
    }
    default:
      return Status::Unimplemented(who + " has unsupported data_type " + DataTypeName(dt));
  }
  return t;
}

Result<Tensor> SparseTensorFromProto(const onnxpb::SparseTensorProto& proto, const std::string& base_dir) {
  IL_ASSIGN_OR_RETURN(Tensor values, TensorFromProto(proto.values(), base_dir));
  IL_ASSIGN_OR_RETURN(Tensor indices, TensorFromProto(proto.indices(), base_dir));
  Shape dims(proto.dims().begin(), proto.dims().end());
  IL_ASSIGN_OR_RETURN(Tensor dense, Tensor::Create(values.dtype(), dims));
  if (values.dtype() == DataType::kString) return Status::Unimplemented("sparse string tensors are not supported");
  if (indices.dtype() != DataType::kInt64) return Status::InvalidArgument("sparse tensor indices must be int64");
  const int64_t nnz = values.size();
  const size_t es = DataTypeSize(values.dtype());
  const int64_t total = dense.size();
  auto* dst = static_cast<uint8_t*>(dense.raw_data());
  const auto* src = static_cast<const uint8_t*>(values.raw_data());
  const int64_t* idx = indices.data<int64_t>();
  if (indices.rank() == 1) {
    if (indices.size() != nnz) return Status::InvalidArgument("sparse tensor: indices/values count mismatch");
    for (int64_t k = 0; k < nnz; ++k) {
      if (idx[k] < 0 || idx[k] >= total) return Status::InvalidArgument("sparse tensor index out of range");
      std::memcpy(dst + idx[k] * es, src + k * es, es);
    }
  } else if (indices.rank() == 2 && indices.dim(0) == nnz && indices.dim(1) == static_cast<int64_t>(dims.size())) {
    for (int64_t k = 0; k < nnz; ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t i = idx[k * dims.size() + d];
        if (i < 0 || i >= dims[d]) return Status::InvalidArgument("sparse tensor index out of range");
        off = off * dims[d] + i;
      }
      std::memcpy(dst + off * es, src + k * es, es);
    }
  } else {
    return Status::InvalidArgument("sparse tensor indices have an invalid shape " + ShapeToString(indices.shape()));
  }
  return dense;
}

Result<Value> ValueFromSequenceProto(const onnxpb::SequenceProto& proto, const std::string& base_dir) {
  if (proto.elem_type() != onnxpb::SequenceProto::TENSOR && proto.elem_type() != onnxpb::SequenceProto::UNDEFINED)
    return Status::Unimplemented("only sequences of tensors are supported");
  std::vector<Tensor> elems;
  DataType et = DataType::kUndefined;
  for (const auto& tp : proto.tensor_values()) {
    IL_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, base_dir));
    et = t.dtype();
    elems.push_back(std::move(t));
  }
  return Value::MakeSequence(std::move(elems), et);
}

Result<Value> ValueFromOptionalProto(const onnxpb::OptionalProto& proto, const std::string& base_dir) {
  switch (proto.elem_type()) {
    case onnxpb::OptionalProto::UNDEFINED: return Value::None();
    case onnxpb::OptionalProto::TENSOR: {
      if (!proto.has_tensor_value()) return Value::None();
      IL_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto.tensor_value(), base_dir));
      return Value(std::move(t));
    }
    case onnxpb::OptionalProto::SEQUENCE:
      if (!proto.has_sequence_value()) return Value::None();
      return ValueFromSequenceProto(proto.sequence_value(), base_dir);
    default:
      return Status::Unimplemented("optional of this element type is not supported");
  }
}

void TensorToProto(const Tensor& t, onnxpb::TensorProto* proto) {
  proto->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) proto->add_dims(d);
  if (t.dtype() == DataType::kString) {
    for (int64_t i = 0; i < t.size(); ++i) proto->add_string_data(t.strings()[i]);
    return;
  }
  if (IsSubByte(t.dtype())) {
    const int bits = BitsOf(t.dtype()), per_byte = 8 / bits;
    std::string packed((t.size() + per_byte - 1) / per_byte, '\0');
    const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
    for (int64_t i = 0; i < t.size(); ++i)
      packed[i / per_byte] = static_cast<char>(packed[i / per_byte] | ((t.data<uint8_t>()[i] & mask) << ((i % per_byte) * bits)));
    proto->set_raw_data(packed);
    return;
  }
  proto->set_raw_data(t.raw_data(), t.nbytes());
}

}  // namespace inferloop
