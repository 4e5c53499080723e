#include "frontends/v2_json_fast_decode.h"

#include <simdjson.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "base/float_types.h"
#include "frontends/v2_datatype.h"
#include "frontends/v2_tensor_data.h"

namespace inferloop::frontends {
namespace {

namespace od = simdjson::ondemand;

// The parser keeps its buffers between documents (iterate() allocates only when a document is
// larger than any before), and simdjson reads up to SIMDJSON_PADDING bytes past the text, so the
// text is copied into a padded buffer that is kept too. One per thread: the io threads decode
// requests concurrently and a parser serves one document at a time. Bounded by
// kMaxFastJsonBytes.
struct FastJsonScratch {
  od::parser parser;
  std::string padded;
};

FastJsonScratch& ThreadScratch() {
  thread_local FastJsonScratch scratch;
  return scratch;
}

// A string value without escapes or control characters (the full decoder's checks are then
// simdjson's UTF-8 validation of the whole text); nullopt for anything else.
std::optional<std::string_view> PlainString(od::value v) {
  const std::string_view tok = v.raw_json_token();
  if (tok.size() < 2 || tok[0] != '"') return std::nullopt;
  const size_t close = tok.find('"', 1);
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view s = tok.substr(1, close - 1);
  for (char c : s) {
    if (c == '\\' || static_cast<unsigned char>(c) < 0x20) return std::nullopt;
  }
  od::raw_json_string raw;
  if (v.get_raw_json_string().get(raw) != simdjson::SUCCESS) return std::nullopt;
  return s;
}

// A string value's text into *out, once (*have set): false for a repeated key or a string that
// is not plain.
bool TakePlainString(od::value v, bool* have, std::string* out) {
  if (*have) return false;
  auto s = PlainString(v);
  if (!s) return false;
  out->assign(*s);
  *have = true;
  return true;
}

// An object member's key and value; false on an error.
bool KeyAndValue(simdjson::simdjson_result<od::field> field, std::string_view* key, od::value* value) {
  return field.unescaped_key().get(*key) == simdjson::SUCCESS && field.value().get(*value) == simdjson::SUCCESS;
}

// The full decoder reads an integral token (no '.', 'e' or 'E') as an int64 (leading '-') or a
// uint64 and converts that; other numbers are correctly rounded doubles. *long_mantissa: more
// than 19 digits before the exponent, leading zeros included.
bool IntegralToken(od::value v, bool* negative, bool* long_mantissa) {
  const std::string_view tok = v.raw_json_token();
  *negative = !tok.empty() && tok[0] == '-';
  bool integral = true;
  int digits = 0;
  for (char c : tok) {
    if (c == 'e' || c == 'E') return false;
    if (c == '.') integral = false;
    if (c >= '0' && c <= '9') *long_mantissa = ++digits > 19;
  }
  return integral;
}

template <typename T>
bool ReadInt(od::value v, T* out) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return v.get_uint64().get(*out) == simdjson::SUCCESS;
  } else {
    int64_t x;
    if (v.get_int64().get(x) != simdjson::SUCCESS) return false;
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min())) return false;
    if constexpr (!std::is_same_v<T, int64_t>) {
      if (x > static_cast<int64_t>(std::numeric_limits<T>::max())) return false;
    }
    *out = static_cast<T>(x);
    return true;
  }
}

bool ReadDouble(od::value v, double* out) {
  bool negative = false, long_mantissa = false;
  if (IntegralToken(v, &negative, &long_mantissa)) {
    if (negative) {
      int64_t x;
      if (v.get_int64().get(x) != simdjson::SUCCESS) return false;
      *out = static_cast<double>(x);
    } else {
      uint64_t x;
      if (v.get_uint64().get(x) != simdjson::SUCCESS) return false;
      *out = static_cast<double>(x);
    }
    return true;
  }
  // simdjson 3.0.1 (Debian 12) misreads decimals of more than 19 digits: "0.22222222222222222222"
  // gave 0.0377547814851267 (the v2_json fuzzer's differential check found it). Those go to the
  // full decoder.
  if (long_mantissa) return false;
  return v.get_double().get(*out) == simdjson::SUCCESS;
}

// Fills the `count` elements of t from a flat array of numbers; false unless it holds exactly
// that many, each a number the full decoder takes for t's datatype. Integer types take integers
// in their range; the others a double, stored through kFromDouble (FP16 / BF16: the full
// decoder's DoubleToHalf / DoubleToBFloat16) or a cast when it is null.
template <typename T, auto kFromDouble = nullptr>
bool ReadElements(od::array a, Tensor& t, int64_t count) {
  T* data = t.data<T>();
  int64_t i = 0;
  for (auto element : a) {
    od::value v;
    if (element.get(v) != simdjson::SUCCESS || i == count) return false;
    if constexpr (std::is_integral_v<T> && kFromDouble == nullptr) {
      if (!ReadInt(v, data + i)) return false;
    } else {
      double d;
      if (!ReadDouble(v, &d)) return false;
      if constexpr (kFromDouble == nullptr) data[i] = static_cast<T>(d);
      else data[i] = kFromDouble(d);
    }
    ++i;
  }
  return i == count;
}

bool ReadData(od::value v, Tensor& t, int64_t count) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return false;  // a scalar "data": the full decoder
  switch (t.dtype()) {
    case DataType::kUInt8: return ReadElements<uint8_t>(a, t, count);
    case DataType::kUInt16: return ReadElements<uint16_t>(a, t, count);
    case DataType::kUInt32: return ReadElements<uint32_t>(a, t, count);
    case DataType::kUInt64: return ReadElements<uint64_t>(a, t, count);
    case DataType::kInt8: return ReadElements<int8_t>(a, t, count);
    case DataType::kInt16: return ReadElements<int16_t>(a, t, count);
    case DataType::kInt32: return ReadElements<int32_t>(a, t, count);
    case DataType::kInt64: return ReadElements<int64_t>(a, t, count);
    case DataType::kFloat: return ReadElements<float>(a, t, count);
    case DataType::kDouble: return ReadElements<double>(a, t, count);
    case DataType::kFloat16: return ReadElements<uint16_t, DoubleToHalf>(a, t, count);
    case DataType::kBFloat16: return ReadElements<uint16_t, DoubleToBFloat16>(a, t, count);
    default: return false;  // BOOL, BYTES: the full decoder
  }
}

bool ReadShape(od::value v, Shape* shape) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return false;
  for (auto element : a) {
    int64_t d;
    if (element.get_int64().get(d) != simdjson::SUCCESS) return false;
    shape->push_back(d);
  }
  return true;
}

std::optional<InferInput> ReadInput(od::value v, const JsonDecodeOptions& options) {
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  InferInput in;
  bool have_name = false, have_dtype = false, have_shape = false, have_data = false;
  DataType dtype = DataType::kFloat;
  Shape shape;
  for (auto field : o) {
    std::string_view key;
    od::value value;
    if (!KeyAndValue(field, &key, &value)) return std::nullopt;
    if (key == "name") {
      if (!TakePlainString(value, &have_name, &in.name)) return std::nullopt;
    } else if (key == "datatype" && !have_dtype) {
      auto s = PlainString(value);
      if (!s) return std::nullopt;
      auto dt = DataTypeFromV2Name(*s);
      if (!dt.ok()) return std::nullopt;
      dtype = *dt;
      have_dtype = true;
    } else if (key == "shape" && !have_shape) {
      if (!ReadShape(value, &shape)) return std::nullopt;
      have_shape = true;
    } else if (key == "data" && !have_data && have_name && have_dtype && have_shape) {
      // The message names what it checks; here it is dropped (the full decoder words the error).
      auto count = CheckDeclaredShape(in.name, dtype, shape, options.max_tensor_bytes);
      if (!count.ok()) return std::nullopt;
      auto t = Tensor::Create(dtype, shape, SIZE_MAX);
      if (!t.ok() || !ReadData(value, *t, *count)) return std::nullopt;
      in.tensor = std::move(*t);
      have_data = true;
    } else {
      return std::nullopt;  // parameters, binary data, another key, a repeated one, data first
    }
  }
  if (!have_data) return std::nullopt;
  return in;
}

bool ReadInputs(od::value v, const JsonDecodeOptions& options, std::vector<InferInput>* inputs) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return false;
  inputs->reserve(4);  // one allocation for most requests (the array's length is not known yet)
  for (auto element : a) {
    od::value e;
    if (element.get(e) != simdjson::SUCCESS) return false;
    auto in = ReadInput(e, options);
    if (!in) return false;
    for (const auto& other : *inputs) {
      if (other.name == in->name) return false;
    }
    inputs->push_back(std::move(*in));
  }
  return true;
}

bool ReadOutputs(od::value v, std::vector<RequestedOutput>* outputs) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return false;
  for (auto element : a) {
    od::object o;
    if (element.get_object().get(o) != simdjson::SUCCESS) return false;
    RequestedOutput out;
    bool have_name = false;
    for (auto field : o) {
      std::string_view key;
      od::value value;
      if (!KeyAndValue(field, &key, &value) || key != "name" || !TakePlainString(value, &have_name, &out.name)) {
        return false;
      }
    }
    if (!have_name) return false;
    for (const auto& other : *outputs) {
      if (other.name == out.name) return false;
    }
    outputs->push_back(std::move(out));
  }
  return true;
}

}  // namespace

std::optional<InferRequest> TryDecodeJsonInferRequestFast(std::string_view json, const JsonDecodeOptions& options) {
  if (json.size() > kMaxFastJsonBytes) return std::nullopt;
  FastJsonScratch& scratch = ThreadScratch();
  scratch.padded.assign(json);
  scratch.padded.resize(json.size() + simdjson::SIMDJSON_PADDING, ' ');
  od::document doc;
  if (scratch.parser.iterate(scratch.padded.data(), json.size(), scratch.padded.size()).get(doc) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  od::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return std::nullopt;
  InferRequest req;
  bool have_id = false, have_inputs = false, have_outputs = false;
  for (auto field : root) {
    std::string_view key;
    od::value value;
    if (!KeyAndValue(field, &key, &value)) return std::nullopt;
    if (key == "id") {
      if (!TakePlainString(value, &have_id, &req.id)) return std::nullopt;
    } else if (key == "inputs" && !have_inputs) {
      if (!ReadInputs(value, options, &req.inputs)) return std::nullopt;
      have_inputs = true;
    } else if (key == "outputs" && !have_outputs) {
      if (!ReadOutputs(value, &req.outputs)) return std::nullopt;
      have_outputs = true;
    } else {
      return std::nullopt;
    }
  }
  if (!have_inputs) return std::nullopt;
  // At the end of the text, nothing after the object (simdjson 3.0's document has no at_end():
  // its current location past the last token is OUT_OF_BOUNDS).
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return std::nullopt;
  return req;
}

}  // namespace inferloop::frontends
