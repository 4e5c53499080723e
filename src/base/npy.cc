#include "base/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "base/file_bytes.h"
#include "base/status_macros.h"
#include "base/utf8.h"

namespace inferloop {
namespace {

Result<DataType> DescrToType(const std::string& d, size_t* item) {
  if (d.size() < 3) return Status::InvalidArgument("npy: unsupported dtype '" + d + "'");
  char endian = d[0], kind = d[1];
  int size = std::atoi(d.c_str() + 2);
  *item = static_cast<size_t>(size);
  if (endian == '>' && size > 1) return Status::Unimplemented("npy: big-endian data is not supported");
  switch (kind) {
    case 'b': if (size == 1) return DataType::kBool; break;
    case 'i':
      if (size == 1) return DataType::kInt8;
      if (size == 2) return DataType::kInt16;
      if (size == 4) return DataType::kInt32;
      if (size == 8) return DataType::kInt64;
      break;
    case 'u':
      if (size == 1) return DataType::kUInt8;
      if (size == 2) return DataType::kUInt16;
      if (size == 4) return DataType::kUInt32;
      if (size == 8) return DataType::kUInt64;
      break;
    case 'f':
      if (size == 2) return DataType::kFloat16;
      if (size == 4) return DataType::kFloat;
      if (size == 8) return DataType::kDouble;
      break;
    case 'c':
      if (size == 8) return DataType::kComplex64;
      if (size == 16) return DataType::kComplex128;
      break;
    case 'U': *item = static_cast<size_t>(size) * 4; return DataType::kString;
    case 'S': return DataType::kString;  // bytes (numpy's fixed-length bytes; item = size)
  }
  return Status::Unimplemented("npy: unsupported dtype '" + d + "'");
}

// Extracts the value text for 'key' from the header dict.
std::string DictValue(const std::string& h, const std::string& key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) return "";
  size_t start = h.find_first_not_of(" ", colon + 1);
  if (start == std::string::npos) return "";
  if (h[start] == '(') {
    size_t end = h.find(')', start);
    return end == std::string::npos ? "" : h.substr(start, end - start + 1);
  }
  if (h[start] == '\'') {
    size_t end = h.find('\'', start + 1);
    return end == std::string::npos ? "" : h.substr(start + 1, end - start - 1);
  }
  size_t end = h.find_first_of(",}", start);
  return h.substr(start, end - start);
}

}  // namespace

Result<Tensor> ParseNpy(const std::string& b) {
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) return Status::InvalidArgument("not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(b[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return Status::InvalidArgument("npy: truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    return Status::Unimplemented("npy: format version " + std::to_string(major) + " is not supported");
  }
  if (hstart + hlen > b.size()) return Status::InvalidArgument("npy: truncated header");
  std::string h = b.substr(hstart, hlen);
  std::string descr = DictValue(h, "descr"), fortran = DictValue(h, "fortran_order"), shape_s = DictValue(h, "shape");
  if (descr.empty() || shape_s.empty()) return Status::InvalidArgument("npy: header lacks descr or shape");
  size_t item = 0;
  IL_ASSIGN_OR_RETURN(DataType dt, DescrToType(descr, &item));
  Shape shape;
  {
    std::string inner = shape_s.substr(1, shape_s.size() - 2);
    std::stringstream ss(inner);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
      size_t p = tok.find_first_not_of(" ");
      if (p == std::string::npos) continue;
      try {
        long long v = std::stoll(tok.substr(p));
        if (v < 0) return Status::InvalidArgument("npy: negative dimension");
        shape.push_back(v);
      } catch (...) {
        return Status::InvalidArgument("npy: bad shape " + shape_s);
      }
    }
  }
  bool fortran_order = fortran.find("True") != std::string::npos;
  int64_t n = ShapeElementCount(shape);
  if (n < 0) return Status::InvalidArgument("npy: shape too large");
  const size_t data_off = hstart + hlen;
  if (static_cast<uint64_t>(n) > (b.size() - data_off) / (item ? item : 1))
    return Status::InvalidArgument("npy: file holds fewer bytes than shape " + ShapeToString(shape) + " needs");
  const char* data = b.data() + data_off;
  Shape read_shape = shape;
  if (fortran_order) std::reverse(read_shape.begin(), read_shape.end());
  Tensor t;
  if (dt == DataType::kString && descr.size() > 1 && descr[1] == 'S') {
    // numpy's 'S' strings: raw bytes, trailing NULs not part of the value (as numpy reads them).
    std::vector<std::string> vals;
    vals.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      size_t len = item;
      while (len > 0 && data[i * item + len - 1] == '\0') --len;
      vals.emplace_back(data + i * item, len);
    }
    t = Tensor::FromStrings(read_shape, std::move(vals));
  } else if (dt == DataType::kString) {
    const size_t chars = item / 4;
    std::vector<std::string> vals;
    vals.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      std::string s;
      for (size_t c = 0; c < chars; ++c) {
        uint32_t cp;
        std::memcpy(&cp, data + i * item + c * 4, 4);
        if (cp == 0) break;
        AppendUtf8(s, cp);
      }
      vals.push_back(std::move(s));
    }
    t = Tensor::FromStrings(read_shape, std::move(vals));
  } else {
    IL_ASSIGN_OR_RETURN(t, Tensor::FromBytes(dt, read_shape, data, static_cast<size_t>(n) * item));
  }
  if (!fortran_order || shape.size() < 2) return t.Reshaped(shape);
  // Transpose from reversed (Fortran) layout to C order.
  IL_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dt, shape));
  const size_t r = shape.size();
  std::vector<int64_t> src_strides(r, 1);  // strides of the Fortran array in terms of C index
  for (size_t d = 1; d < r; ++d) src_strides[d] = src_strides[d - 1] * shape[d - 1];
  std::vector<int64_t> idx(r, 0);
  const size_t es = DataTypeSize(dt);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += idx[d] * src_strides[d];
    if (dt == DataType::kString) out.strings()[i] = t.strings()[off];
    else std::memcpy(static_cast<char*>(out.raw_data()) + i * es, static_cast<const char*>(t.raw_data()) + off * es, es);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Result<Tensor> ReadNpyFile(const std::string& path) {
  IL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  auto t = ParseNpy(bytes);
  if (!t.ok()) return t.status().WithContext(path);
  return t;
}

Result<std::string> SerializeNpy(const Tensor& t) {
  std::string descr;
  size_t maxlen = 1;
  switch (t.dtype()) {
    case DataType::kBool: descr = "|b1"; break;
    case DataType::kInt8: descr = "|i1"; break;
    case DataType::kUInt8: descr = "|u1"; break;
    case DataType::kInt16: descr = "<i2"; break;
    case DataType::kUInt16: descr = "<u2"; break;
    case DataType::kInt32: descr = "<i4"; break;
    case DataType::kUInt32: descr = "<u4"; break;
    case DataType::kInt64: descr = "<i8"; break;
    case DataType::kUInt64: descr = "<u8"; break;
    case DataType::kFloat16: descr = "<f2"; break;
    case DataType::kFloat: descr = "<f4"; break;
    case DataType::kDouble: descr = "<f8"; break;
    case DataType::kComplex64: descr = "<c8"; break;
    case DataType::kComplex128: descr = "<c16"; break;
    case DataType::kString:
      for (int64_t i = 0; i < t.size(); ++i) maxlen = std::max(maxlen, t.strings()[i].size());
      descr = "<U" + std::to_string(maxlen);
      break;
    default:
      return Status::Unimplemented(std::string("cannot write dtype ") + DataTypeName(t.dtype()) + " as .npy (NumPy has no such type)");
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  if (t.dtype() == DataType::kString) {
    for (int64_t i = 0; i < t.size(); ++i) {
      // Store bytes as code points (ASCII/Latin-1 view of UTF-8 input is lossy for non-ASCII;
      // decode UTF-8 properly).
      const std::string& s = t.strings()[i];
      std::vector<uint32_t> cps;
      for (size_t k = 0; k < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[k]);
        uint32_t cp;
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (int j = 1; j < len && k + j < s.size(); ++j) cp = (cp << 6) | (static_cast<unsigned char>(s[k + j]) & 0x3F);
        cps.push_back(cp);
        k += len;
      }
      cps.resize(maxlen, 0);
      out.append(reinterpret_cast<const char*>(cps.data()), cps.size() * 4);
    }
  } else {
    out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

Status WriteNpyFile(const std::string& path, const Tensor& t) {
  IL_ASSIGN_OR_RETURN(std::string bytes, SerializeNpy(t));
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("cannot write '" + path + "'");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f ? Status::Ok() : Status::Internal("failed writing '" + path + "'");
}

}  // namespace inferloop
