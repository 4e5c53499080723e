#include "frontends/v2_json_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/c_locale_number.h"
#include "base/float_types.h"
#include "base/status_macros.h"
#include "frontends/v2_datatype.h"
#include "frontends/v2_json_fast_decode.h"
#include "frontends/v2_tensor_data.h"

namespace inferloop::frontends {
namespace {

namespace rj = rapidjson;

// Numbers as text: NumberConvertingHandler converts them (see there).
// Invalid UTF-8 is a parse error, so every decoded string can be written back as JSON.
constexpr unsigned kParseFlags = rj::kParseIterativeFlag | rj::kParseNanAndInfFlag | rj::kParseNumbersAsStringsFlag |
                                 rj::kParseValidateEncodingFlag;
// Strings are checked by IsValidUtf8 before writing: rapidjson 1.1's own writer validation
// reads past the end of a string ending in a truncated UTF-8 sequence.
constexpr unsigned kWriteFlags = rj::kWriteNanAndInfFlag;
// rapidjson output into a std::string that becomes the response body as is (a StringBuffer
// would cost an allocator object, its buffer and a copy into the body).
// The string is kept sized to its capacity while writing (Finish trims it to what was written),
// so a character costs a store, not push_back's checks.
class StringOutput {
 public:
  using Ch = char;
  explicit StringOutput(std::string& s, size_t capacity) : s_(s) { s_.resize(capacity); }
  void Reserve(size_t n) {
    if (s_.size() - len_ < n) s_.resize(std::max(s_.size() * 2, len_ + n));
  }
  void PutUnsafe(char c) { s_[len_++] = c; }
  void Put(char c) {
    Reserve(1);
    PutUnsafe(c);
  }
  void Flush() {}
  void Finish() { s_.resize(len_); }

 private:
  std::string& s_;
  size_t len_ = 0;
};
using JsonWriter = rj::Writer<StringOutput, rj::UTF8<>, rj::UTF8<>, rj::MemoryPoolAllocator<>, kWriteFlags>;
// The writer's nesting stack comes from the caller's stack frame (a JsonWriterStack next to the
// writer): with rapidjson's default allocator it took two heap allocations per response.
struct JsonWriterStack {
  alignas(16) char buffer[1024];
  rj::MemoryPoolAllocator<> pool{buffer, sizeof buffer};
};
// Room for a small response's JSON from the start (one allocation instead of a few growths).
constexpr size_t kInitialJsonCapacity = 1024;
}  // namespace
}  // namespace inferloop::frontends

// rapidjson's Writer reserves room before each value and then writes without checks.
namespace rapidjson {
template <>
inline void PutReserve(inferloop::frontends::StringOutput& stream, size_t count) {
  stream.Reserve(count);
}
template <>
inline void PutUnsafe(inferloop::frontends::StringOutput& stream, char c) {
  stream.PutUnsafe(c);
}
}  // namespace rapidjson

namespace inferloop::frontends {
namespace {

// Deeper nesting is refused before parsing: the DOM (and its destructor) recurse per level.
constexpr int kMaxJsonDepth = 64;

// Length of the valid UTF-8 sequence at s[i] (no overlongs, surrogates or code points past
// U+10FFFF), 0 if there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07;
  else return 0;
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Writes `s` as a JSON string (or key); InvalidArgument naming `what` if it is not UTF-8.
Status WriteText(JsonWriter& w, std::string_view s, const std::string& what, bool key = false) {
  if (!IsValidUtf8(s)) return Status::InvalidArgument(what + " is not valid UTF-8");
  auto n = static_cast<rj::SizeType>(s.size());
  if (key) w.Key(s.data(), n);
  else w.String(s.data(), n);
  return Status::Ok();
}

// Refuses nesting deeper than kMaxJsonDepth before the parser sees the text.
Status CheckNestingDepth(std::string_view json) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return Status::InvalidArgument("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                       " levels at offset " + std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

// The request DOM: values from a pool on the caller's stack (see DecodeJsonInferRequest), and
// the parse stack from a second such pool, so a small request's parse takes no heap memory.
using JsonDocument = rj::GenericDocument<rj::UTF8<>, rj::MemoryPoolAllocator<>, rj::MemoryPoolAllocator<>>;
using JsonReader = rj::GenericReader<rj::UTF8<>, rj::UTF8<>, rj::MemoryPoolAllocator<>>;

// SAX handler building `doc`, converting numbers itself: Debian's rapidjson 1.1 full-precision
// strtod has undefined behaviour (clz of 0) on some inputs ("0e300", long integers), and its
// default strtod is not correctly rounded, so FP64 data would not survive a round trip. Numbers
// arrive as text (kParseNumbersAsStringsFlag): integers become int64/uint64 when they fit,
// everything else a correctly rounded double (strtod).
class NumberConvertingHandler {
 public:
  explicit NumberConvertingHandler(JsonDocument& doc) : doc_(doc) {}
  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool String(const char* s, rj::SizeType n, bool copy) { return doc_.String(s, n, copy); }
  bool StartObject() { return doc_.StartObject(); }
  bool Key(const char* s, rj::SizeType n, bool copy) { return doc_.Key(s, n, copy); }
  bool EndObject(rj::SizeType n) { return doc_.EndObject(n); }
  bool StartArray() { return doc_.StartArray(); }
  bool EndArray(rj::SizeType n) { return doc_.EndArray(n); }
  bool RawNumber(const char* s, rj::SizeType n, bool /*copy*/) {
    std::string_view text(s, n);
    bool integral = text.find_first_of(".eEIN") == std::string_view::npos;  // NaN / Infinity included
    if (integral && n > 0) {
      const char* end = s + n;
      if (text[0] == '-') {
        int64_t v;
        auto r = std::from_chars(s, end, v);
        if (r.ec == std::errc() && r.ptr == end) return doc_.Int64(v);
      } else {
        uint64_t v;
        auto r = std::from_chars(s, end, v);
        if (r.ec == std::errc() && r.ptr == end) return doc_.Uint64(v);
      }
    }
    return doc_.Double(StrtodC(std::string(text).c_str(), nullptr));  // "Infinity", "NaN" included
  }

 private:
  JsonDocument& doc_;
};

const char* JsonTypeName(const rj::Value& v) {
  switch (v.GetType()) {
    case rj::kNullType: return "null";
    case rj::kFalseType:
    case rj::kTrueType: return "a bool";
    case rj::kObjectType: return "an object";
    case rj::kArrayType: return "an array";
    case rj::kStringType: return "a string";
    case rj::kNumberType: return "a number";
  }
  return "?";
}

std::string JsonString(const rj::Value& v) { return std::string(v.GetString(), v.GetStringLength()); }

Result<InferParameters> ParseParameters(const rj::Value& v, const std::string& where) {
  if (!v.IsObject()) return Status::InvalidArgument(where + ": \"parameters\" must be an object, got " + JsonTypeName(v));
  InferParameters params;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    std::string key = JsonString(it->name);
    const rj::Value& p = it->value;
    if (p.IsBool()) params[key] = p.GetBool();
    else if (p.IsInt64()) params[key] = p.GetInt64();
    else if (p.IsUint64()) params[key] = p.GetUint64();
    else if (p.IsNumber()) params[key] = p.GetDouble();
    else if (p.IsString()) params[key] = JsonString(p);
    else {
      return Status::InvalidArgument(where + ": parameter '" + key + "' must be a bool, number or string, got " +
                                     JsonTypeName(p));
    }
  }
  return params;
}

// The number of leaves of (possibly nested) array `v` (1 for a scalar).
int64_t CountLeaves(const rj::Value& v) {
  if (!v.IsArray()) return 1;
  int64_t n = 0;
  for (const auto& e : v.GetArray()) n += CountLeaves(e);
  return n;
}

template <typename T>
Status ConvertInt(const rj::Value& v, T* out) {
  if constexpr (std::is_signed_v<T>) {
    if (v.IsInt64()) {
      int64_t x = v.GetInt64();
      if (x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max()) {
        *out = static_cast<T>(x);
        return Status::Ok();
      }
    }
  } else {
    if (v.IsUint64()) {
      uint64_t x = v.GetUint64();
      if (x <= std::numeric_limits<T>::max()) {
        *out = static_cast<T>(x);
        return Status::Ok();
      }
    }
  }
  return Status::InvalidArgument("expected an integer in [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
                                 std::to_string(std::numeric_limits<T>::max()) + "], got " +
                                 (v.IsNumber() ? "a number out of range or not whole" : JsonTypeName(v)));
}

Status ConvertElement(DataType dtype, const rj::Value& v, Tensor& t, int64_t i) {
  switch (dtype) {
    case DataType::kBool:
      if (!v.IsBool()) return Status::InvalidArgument(std::string("expected true or false, got ") + JsonTypeName(v));
      t.data<uint8_t>()[i] = v.GetBool() ? 1 : 0;
      return Status::Ok();
    case DataType::kUInt8: return ConvertInt(v, t.data<uint8_t>() + i);
    case DataType::kUInt16: return ConvertInt(v, t.data<uint16_t>() + i);
    case DataType::kUInt32: return ConvertInt(v, t.data<uint32_t>() + i);
    case DataType::kUInt64: return ConvertInt(v, t.data<uint64_t>() + i);
    case DataType::kInt8: return ConvertInt(v, t.data<int8_t>() + i);
    case DataType::kInt16: return ConvertInt(v, t.data<int16_t>() + i);
    case DataType::kInt32: return ConvertInt(v, t.data<int32_t>() + i);
    case DataType::kInt64: return ConvertInt(v, t.data<int64_t>() + i);
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat:
    case DataType::kDouble: {
      if (!v.IsNumber()) return Status::InvalidArgument(std::string("expected a number, got ") + JsonTypeName(v));
      double d = v.GetDouble();
      if (dtype == DataType::kFloat16) t.data<uint16_t>()[i] = DoubleToHalf(d);
      else if (dtype == DataType::kBFloat16) t.data<uint16_t>()[i] = DoubleToBFloat16(d);
      else if (dtype == DataType::kFloat) t.data<float>()[i] = static_cast<float>(d);
      else t.data<double>()[i] = d;
      return Status::Ok();
    }
    case DataType::kString:
      if (!v.IsString()) return Status::InvalidArgument(std::string("expected a string, got ") + JsonTypeName(v));
      t.strings()[i] = JsonString(v);
      return Status::Ok();
    default: return Status::Internal("unhandled datatype");
  }
}

// Converts the leaves of `v` (row-major) into t's elements from index `i` on; on an error `i` is
// the element's index.
Status ConvertLeaves(DataType dtype, const rj::Value& v, Tensor& t, int64_t& i) {
  if (!v.IsArray()) {
    IL_RETURN_IF_ERROR(ConvertElement(dtype, v, t, i));
    ++i;
    return Status::Ok();
  }
  for (const auto& e : v.GetArray()) IL_RETURN_IF_ERROR(ConvertLeaves(dtype, e, t, i));
  return Status::Ok();
}

Result<Shape> ParseShape(const rj::Value& v, const std::string& what) {
  if (!v.IsArray()) return Status::InvalidArgument(what + ": \"shape\" must be an array, got " + JsonTypeName(v));
  Shape shape;
  for (const auto& d : v.GetArray()) {
    if (!d.IsInt64()) {
      return Status::InvalidArgument(what + ": \"shape\" entries must be integers in int64 range, got " +
                                     (d.IsNumber() ? std::string("a number out of range or not whole") : JsonTypeName(d)));
    }
    shape.push_back(d.GetInt64());
  }
  return shape;
}

Result<InferInput> ParseInput(const rj::Value& v, size_t index, std::string_view binary, size_t* binary_pos,
                              bool has_binary_section, const JsonDecodeOptions& options) {
  std::string where = "inputs[" + std::to_string(index) + "]";
  if (!v.IsObject()) return Status::InvalidArgument(where + " must be an object, got " + JsonTypeName(v));
  auto name_it = v.FindMember("name");
  if (name_it == v.MemberEnd()) return Status::InvalidArgument(where + ": missing \"name\"");
  if (!name_it->value.IsString()) return Status::InvalidArgument(where + ": \"name\" must be a string");
  InferInput in;
  in.name = JsonString(name_it->value);
  std::string what = "input '" + in.name + "'";
  auto dt_it = v.FindMember("datatype");
  if (dt_it == v.MemberEnd()) return Status::InvalidArgument(what + ": missing \"datatype\"");
  if (!dt_it->value.IsString()) return Status::InvalidArgument(what + ": \"datatype\" must be a string");
  auto dtype = DataTypeFromV2Name(JsonString(dt_it->value));
  if (!dtype.ok()) return dtype.status().WithContext(what);
  auto shape_it = v.FindMember("shape");
  if (shape_it == v.MemberEnd()) return Status::InvalidArgument(what + ": missing \"shape\"");
  IL_ASSIGN_OR_RETURN(Shape shape, ParseShape(shape_it->value, what));
  IL_ASSIGN_OR_RETURN(int64_t count, CheckDeclaredShape(what, *dtype, shape, options.max_tensor_bytes));
  if (auto p = v.FindMember("parameters"); p != v.MemberEnd()) {
    IL_ASSIGN_OR_RETURN(in.parameters, ParseParameters(p->value, what));
  }
  auto data_it = v.FindMember("data");
  auto bin_it = in.parameters.find(kBinaryDataSizeParam);
  if (bin_it != in.parameters.end()) {
    if (data_it != v.MemberEnd()) {
      return Status::InvalidArgument(what + ": has both \"data\" and the binary_data_size parameter");
    }
    const int64_t* size = std::get_if<int64_t>(&bin_it->second);
    if (!size || *size < 0) {
      return Status::InvalidArgument(what + ": binary_data_size must be a non-negative integer");
    }
    if (!has_binary_section) {
      return Status::InvalidArgument(what + ": has binary_data_size but the request has no binary data "
                                            "(Inference-Header-Content-Length not given)");
    }
    if (static_cast<uint64_t>(*size) > binary.size() - *binary_pos) {
      return Status::InvalidArgument(what + ": binary_data_size " + std::to_string(*size) + " exceeds the " +
                                     std::to_string(binary.size() - *binary_pos) + " bytes of binary data left");
    }
    std::string_view bytes = binary.substr(*binary_pos, static_cast<size_t>(*size));
    *binary_pos += bytes.size();
    IL_ASSIGN_OR_RETURN(in.tensor, TensorFromRawBytes(what, *dtype, shape, bytes, options.max_tensor_bytes));
    return in;
  }
  if (data_it == v.MemberEnd()) return Status::InvalidArgument(what + ": missing \"data\"");
  // A scalar "data" is a one-element tensor's.
  const int64_t leaves = CountLeaves(data_it->value);
  if (leaves != count) {
    return Status::InvalidArgument(what + ": shape " + ShapeToString(shape) + " has " + std::to_string(count) +
                                   " elements but \"data\" has " + std::to_string(leaves));
  }
  IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(*dtype, shape, SIZE_MAX));
  int64_t i = 0;
  Status st = ConvertLeaves(*dtype, data_it->value, t, i);
  if (!st.ok()) return st.WithContext(what + ": data element " + std::to_string(i) + " (" + dt_it->value.GetString() + ")");
  in.tensor = std::move(t);
  return in;
}

Result<RequestedOutput> ParseRequestedOutput(const rj::Value& v, size_t index) {
  std::string where = "outputs[" + std::to_string(index) + "]";
  if (!v.IsObject()) return Status::InvalidArgument(where + " must be an object, got " + JsonTypeName(v));
  auto name_it = v.FindMember("name");
  if (name_it == v.MemberEnd()) return Status::InvalidArgument(where + ": missing \"name\"");
  if (!name_it->value.IsString()) return Status::InvalidArgument(where + ": \"name\" must be a string");
  RequestedOutput out;
  out.name = JsonString(name_it->value);
  std::string what = "requested output '" + out.name + "'";
  if (auto p = v.FindMember("parameters"); p != v.MemberEnd()) {
    IL_ASSIGN_OR_RETURN(out.parameters, ParseParameters(p->value, what));
    if (auto b = out.parameters.find(kBinaryDataParam); b != out.parameters.end()) {
      const bool* flag = std::get_if<bool>(&b->second);
      if (!flag) return Status::InvalidArgument(what + ": parameter binary_data must be a bool");
      out.binary_data = *flag;
    }
  }
  return out;
}

// --- encoding ---

Status WriteParameters(JsonWriter& w, const InferParameters& params) {
  w.StartObject();
  for (const auto& entry : params) {
    const std::string& key = entry.first;
    const InferParameter& value = entry.second;
    IL_RETURN_IF_ERROR(WriteText(w, key, "parameter name", /*key=*/true));
    Status st;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) w.Bool(x);
          else if constexpr (std::is_same_v<T, int64_t>) w.Int64(x);
          else if constexpr (std::is_same_v<T, uint64_t>) w.Uint64(x);
          else if constexpr (std::is_same_v<T, double>) w.Double(x);
          else st = WriteText(w, x, "parameter '" + key + "'");
        },
        value);
    IL_RETURN_IF_ERROR(st);
  }
  w.EndObject();
  return Status::Ok();
}

void WriteShape(JsonWriter& w, const Shape& shape) {
  w.StartArray();
  for (int64_t d : shape) w.Int64(d);
  w.EndArray();
}

Status WriteData(JsonWriter& w, const Tensor& t, std::string_view kind, const std::string& name) {
  w.StartArray();
  for (int64_t i = 0; i < t.size(); ++i) {
    switch (t.dtype()) {
      case DataType::kBool: w.Bool(t.data<uint8_t>()[i] != 0); break;
      case DataType::kUInt8: w.Uint(t.data<uint8_t>()[i]); break;
      case DataType::kUInt16: w.Uint(t.data<uint16_t>()[i]); break;
      case DataType::kUInt32: w.Uint(t.data<uint32_t>()[i]); break;
      case DataType::kUInt64: w.Uint64(t.data<uint64_t>()[i]); break;
      case DataType::kInt8: w.Int(t.data<int8_t>()[i]); break;
      case DataType::kInt16: w.Int(t.data<int16_t>()[i]); break;
      case DataType::kInt32: w.Int(t.data<int32_t>()[i]); break;
      case DataType::kInt64: w.Int64(t.data<int64_t>()[i]); break;
      case DataType::kFloat16: w.Double(HalfToFloat(t.data<uint16_t>()[i])); break;
      case DataType::kBFloat16: w.Double(BFloat16ToFloat(t.data<uint16_t>()[i])); break;
      case DataType::kFloat: w.Double(t.data<float>()[i]); break;
      case DataType::kDouble: w.Double(t.data<double>()[i]); break;
      case DataType::kString: {
        const std::string& s = t.strings()[i];
        if (!IsValidUtf8(s)) {
          return Status::InvalidArgument(std::string(kind) + " '" + name + "': BYTES element " + std::to_string(i) +
                                         " is not valid UTF-8; request it as binary data");
        }
        w.String(s.data(), static_cast<rj::SizeType>(s.size()));
        break;
      }
      default: return Status::Internal(std::string(kind) + " '" + name + "': unhandled datatype");
    }
  }
  w.EndArray();
  return Status::Ok();
}

// One tensor object: name, datatype, shape, parameters and either data or binary_data_size
// (the raw bytes then appended to *binary).
// `kind` ("output", "input") and the name make the errors' "output 'x'" (built only on an error).
Status WriteTensor(JsonWriter& w, const std::string& name, const Tensor& t, const InferParameters& params, bool binary,
                   std::string* binary_out, std::string_view kind) {
  auto what = [&] { return std::string(kind) + " '" + name + "'"; };
  const char* dt = V2DataTypeName(t.dtype());
  if (!dt) {
    return Status::InvalidArgument(what() + ": datatype " + std::string(DataTypeName(t.dtype())) +
                                   " has no KServe v2 equivalent");
  }
  w.StartObject();
  w.Key("name");
  if (!IsValidUtf8(name)) return Status::InvalidArgument(what() + " name is not valid UTF-8");
  w.String(name.data(), static_cast<rj::SizeType>(name.size()));
  w.Key("datatype");
  w.String(dt);
  w.Key("shape");
  WriteShape(w, t.shape());
  // The parameters as given, binary_data_size replaced by the size written (when binary).
  bool other_params = false;
  for (const auto& entry : params) other_params = other_params || entry.first != kBinaryDataSizeParam;
  if (other_params || binary) {
    InferParameters p = params;
    if (auto it = p.find(kBinaryDataSizeParam); it != p.end()) p.erase(it);
    if (binary) p[kBinaryDataSizeParam] = static_cast<int64_t>(RawByteSize(t));
    w.Key("parameters");
    IL_RETURN_IF_ERROR(WriteParameters(w, p).WithContext(what()));
  }
  if (binary) {
    AppendRawBytes(t, binary_out);
  } else {
    w.Key("data");
    IL_RETURN_IF_ERROR(WriteData(w, t, kind, name));
  }
  w.EndObject();
  return Status::Ok();
}

// The body: the JSON (`json`, moved in) and the binary data after it.
EncodedBody Assemble(std::string json, const std::string& binary) {
  EncodedBody out;
  out.json_length = json.size();
  out.has_binary = !binary.empty();
  out.body = std::move(json);
  out.body += binary;
  return out;
}

}  // namespace

Result<InferRequest> DecodeJsonInferRequest(std::string_view body, size_t json_header_length,
                                            const JsonDecodeOptions& options) {
  bool has_binary_section = json_header_length != 0;
  if (json_header_length > body.size()) {
    return Status::InvalidArgument("Inference-Header-Content-Length " + std::to_string(json_header_length) +
                                   " exceeds the body size " + std::to_string(body.size()));
  }
  std::string_view json = has_binary_section ? body.substr(0, json_header_length) : body;
  std::string_view binary = has_binary_section ? body.substr(json_header_length) : std::string_view();
  if (options.fast_path && !has_binary_section) {
    if (auto request = TryDecodeJsonInferRequestFast(json, options)) return std::move(*request);
  }
  IL_RETURN_IF_ERROR(CheckNestingDepth(json));
  // The DOM's first 16 KiB come from the stack: rapidjson's default pool takes a 64 KiB heap
  // chunk per document, whose malloc/free (and glibc's consolidation of it) cost more than
  // parsing a small request (simple's REST path: 15% of the server's CPU before this).
  alignas(16) char pool_buffer[16384];
  rj::MemoryPoolAllocator<> pool(pool_buffer, sizeof pool_buffer);
  // The parse stacks (the reader's and the document's) likewise, 4 KiB before the heap.
  alignas(16) char stack_buffer[4096];
  rj::MemoryPoolAllocator<> stack_pool(stack_buffer, sizeof stack_buffer);
  JsonDocument doc(&pool, 1024, &stack_pool);
  JsonReader reader(&stack_pool, 256);
  rj::MemoryStream stream(json.data(), json.size());
  auto generate = [&](JsonDocument& d) {
    NumberConvertingHandler handler(d);
    return !reader.Parse<kParseFlags>(stream, handler).IsError();
  };
  doc.Populate(generate);
  if (reader.HasParseError()) {
    return Status::InvalidArgument(std::string("malformed JSON at offset ") +
                                   std::to_string(reader.GetErrorOffset()) + ": " +
                                   rj::GetParseError_En(reader.GetParseErrorCode()));
  }
  if (!doc.IsObject()) return Status::InvalidArgument(std::string("request must be a JSON object, got ") + JsonTypeName(doc));
  InferRequest req;
  if (auto it = doc.FindMember("id"); it != doc.MemberEnd()) {
    if (!it->value.IsString()) return Status::InvalidArgument("\"id\" must be a string");
    req.id = JsonString(it->value);
  }
  if (auto it = doc.FindMember("parameters"); it != doc.MemberEnd()) {
    IL_ASSIGN_OR_RETURN(req.parameters, ParseParameters(it->value, "request"));
    if (auto b = req.parameters.find(kBinaryDataOutputParam);
        b != req.parameters.end() && !std::holds_alternative<bool>(b->second)) {
      return Status::InvalidArgument("request: parameter binary_data_output must be a bool");
    }
  }
  auto inputs = doc.FindMember("inputs");
  if (inputs == doc.MemberEnd()) return Status::InvalidArgument("missing \"inputs\"");
  if (!inputs->value.IsArray()) return Status::InvalidArgument("\"inputs\" must be an array");
  size_t binary_pos = 0;
  std::set<std::string> names;  // only past kLinearNameCheck inputs: before, req.inputs is searched
  constexpr rj::SizeType kLinearNameCheck = 16;
  req.inputs.reserve(inputs->value.Size());
  for (rj::SizeType i = 0; i < inputs->value.Size(); ++i) {
    const rj::Value& v = inputs->value[i];
    if (v.IsObject()) {  // check for duplicates before decoding the data
      auto n = v.FindMember("name");
      if (n != v.MemberEnd() && n->value.IsString()) {
        std::string_view name(n->value.GetString(), n->value.GetStringLength());
        bool seen = false;
        if (inputs->value.Size() <= kLinearNameCheck) {
          for (const auto& in : req.inputs) seen = seen || in.name == name;
        } else {
          seen = !names.insert(std::string(name)).second;
        }
        if (seen) return Status::InvalidArgument("input '" + JsonString(n->value) + "' appears more than once");
      }
    }
    IL_ASSIGN_OR_RETURN(InferInput in, ParseInput(v, i, binary, &binary_pos, has_binary_section, options));
    req.inputs.push_back(std::move(in));
  }
  if (binary_pos != binary.size()) {
    return Status::InvalidArgument(std::to_string(binary.size() - binary_pos) +
                                   " bytes of binary data after the JSON header belong to no input");
  }
  if (auto outputs = doc.FindMember("outputs"); outputs != doc.MemberEnd()) {
    if (!outputs->value.IsArray()) return Status::InvalidArgument("\"outputs\" must be an array");
    std::set<std::string> out_names;
    for (rj::SizeType i = 0; i < outputs->value.Size(); ++i) {
      IL_ASSIGN_OR_RETURN(RequestedOutput out, ParseRequestedOutput(outputs->value[i], i));
      if (!out_names.insert(out.name).second) {
        return Status::InvalidArgument("output '" + out.name + "' is requested more than once");
      }
      req.outputs.push_back(std::move(out));
    }
  }
  return req;
}

Result<EncodedBody> EncodeJsonInferResponse(const InferResponse& response, const InferRequest& request) {
  std::string json;
  StringOutput buf(json, kInitialJsonCapacity);
  JsonWriterStack stack;
  JsonWriter w(buf, &stack.pool);
  std::string binary;
  w.StartObject();
  w.Key("model_name");
  IL_RETURN_IF_ERROR(WriteText(w, response.model_name, "model name"));
  if (!response.model_version.empty()) {
    w.Key("model_version");
    IL_RETURN_IF_ERROR(WriteText(w, response.model_version, "model version"));
  }
  if (!response.id.empty()) {
    w.Key("id");
    IL_RETURN_IF_ERROR(WriteText(w, response.id, "request id"));
  }
  if (!response.parameters.empty()) {
    w.Key("parameters");
    IL_RETURN_IF_ERROR(WriteParameters(w, response.parameters));
  }
  w.Key("outputs");
  w.StartArray();
  for (const auto& out : response.outputs) {
    IL_RETURN_IF_ERROR(WriteTensor(w, out.name, out.tensor, out.parameters, WantsBinaryOutput(request, out.name),
                                   &binary, "output"));
  }
  w.EndArray();
  w.EndObject();
  buf.Finish();
  return Assemble(std::move(json), binary);
}

Result<EncodedBody> EncodeJsonInferRequest(const InferRequest& request, bool binary_inputs) {
  std::string json;
  StringOutput buf(json, kInitialJsonCapacity);
  JsonWriterStack stack;
  JsonWriter w(buf, &stack.pool);
  std::string binary;
  w.StartObject();
  if (!request.id.empty()) {
    w.Key("id");
    IL_RETURN_IF_ERROR(WriteText(w, request.id, "request id"));
  }
  if (!request.parameters.empty()) {
    w.Key("parameters");
    IL_RETURN_IF_ERROR(WriteParameters(w, request.parameters));
  }
  w.Key("inputs");
  w.StartArray();
  for (const auto& in : request.inputs) {
    IL_RETURN_IF_ERROR(WriteTensor(w, in.name, in.tensor, in.parameters, binary_inputs, &binary, "input"));
  }
  w.EndArray();
  if (!request.outputs.empty()) {
    w.Key("outputs");
    w.StartArray();
    for (const auto& out : request.outputs) {
      w.StartObject();
      w.Key("name");
      IL_RETURN_IF_ERROR(WriteText(w, out.name, "requested output name"));
      InferParameters p = out.parameters;
      if (out.binary_data) p[kBinaryDataParam] = *out.binary_data;
      if (!p.empty()) {
        w.Key("parameters");
        IL_RETURN_IF_ERROR(WriteParameters(w, p));
      }
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  buf.Finish();
  EncodedBody out = Assemble(std::move(json), binary);
  // Zero-sized binary inputs still need the header length so the decoder expects binary data.
  if (binary_inputs && !request.inputs.empty()) out.has_binary = true;
  return out;
}

std::string JsonErrorBody(const Status& status) {
  // Messages quote names from requests: bytes that are not UTF-8 become '?', so the body is JSON.
  const std::string& m = status.message();
  std::string clean;
  clean.reserve(m.size());
  for (size_t i = 0; i < m.size();) {
    size_t n = Utf8SequenceLength(m, i);
    if (n == 0) {
      clean += '?';
      ++i;
    } else {
      clean.append(m, i, n);
      i += n;
    }
  }
  rj::StringBuffer buf;
  rj::Writer<rj::StringBuffer> w(buf);
  w.StartObject();
  w.Key("error");
  w.String(clean.data(), static_cast<rj::SizeType>(clean.size()));
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace inferloop::frontends
