// The REST request decoder's fast path (frontends/v2_json_fast_decode.h) against the full
// decoder (DecodeJsonInferRequest with fast_path = false): the fast path takes the common form
// and gives the full decoder's request for it, declines everything else, and a request decoded
// with the default options has the same outcome (request or error message) as with the full
// decoder alone, for the common form, for each kind of body it declines and for every
// truncation of a request.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "frontends/v2_json_codec.h"
#include "frontends/v2_json_fast_decode.h"

namespace inferloop::frontends {
namespace {

JsonDecodeOptions FullOnly() {
  JsonDecodeOptions o;
  o.fast_path = false;
  return o;
}

void ExpectSameRequest(const InferRequest& a, const InferRequest& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.parameters.size(), b.parameters.size());
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Tensor &x = a.inputs[i].tensor, &y = b.inputs[i].tensor;
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
    EXPECT_EQ(a.inputs[i].parameters.size(), b.inputs[i].parameters.size());
    ASSERT_EQ(x.dtype(), y.dtype());
    ASSERT_EQ(x.shape(), y.shape());
    ASSERT_EQ(x.nbytes(), y.nbytes());
    if (x.dtype() == DataType::kString) {
      for (int64_t k = 0; k < x.size(); ++k) EXPECT_EQ(x.strings()[k], y.strings()[k]);
    } else {
      EXPECT_EQ(0, std::memcmp(x.raw_data(), y.raw_data(), x.nbytes())) << a.inputs[i].name;
    }
  }
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) EXPECT_EQ(a.outputs[i].name, b.outputs[i].name);
}

// The default decode (fast path first) and the full decoder agree on `body`.
void ExpectSameOutcome(const std::string& body, JsonDecodeOptions options = {}) {
  SCOPED_TRACE(body.substr(0, 200));
  auto with_fast = DecodeJsonInferRequest(body, 0, options);
  options.fast_path = false;
  auto full = DecodeJsonInferRequest(body, 0, options);
  ASSERT_EQ(with_fast.ok(), full.ok()) << (with_fast.ok() ? full.status() : with_fast.status()).ToString();
  if (full.ok()) {
    ExpectSameRequest(*with_fast, *full);
  } else {
    EXPECT_EQ(with_fast.status().code(), full.status().code());
    EXPECT_EQ(with_fast.status().message(), full.status().message());
  }
}

const char* kSimple =
    R"({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 4], "data": [0, 1, -2, 2147483647]}, )"
    R"({"name": "INPUT1", "datatype": "INT32", "shape": [1, 4], "data": [1, 1, 1, -2147483648]}]})";

TEST(V2JsonFastDecode, TakesTheCommonFormAsTheFullDecoderDoes) {
  const std::string mixed =
      R"({"id": "r-7", "inputs": [)"
      R"({"name": "f", "datatype": "FP32", "shape": [5], "data": [0.1, -0, 1e-310, 3.4028235e38, 16777217]},)"
      R"({"name": "d", "datatype": "FP64", "shape": [2, 2], "data": [9007199254740993, 2.2250738585072011e-308, -0.0, 1E3]},)"
      R"({"name": "h", "datatype": "FP16", "shape": [2], "data": [65504, -6.1e-5]},)"
      R"({"name": "b", "datatype": "BF16", "shape": [1], "data": [1.00390625]},)"
      R"({"name": "i8", "datatype": "INT8", "shape": [2], "data": [-128, 127]},)"
      R"({"name": "u16", "datatype": "UINT16", "shape": [2], "data": [0, 65535]},)"
      R"({"name": "i64", "datatype": "INT64", "shape": [2], "data": [-9223372036854775808, 9223372036854775807]},)"
      R"({"name": "u64", "datatype": "UINT64", "shape": [1], "data": [18446744073709551615]},)"
      R"({"name": "empty", "datatype": "FP32", "shape": [0, 3], "data": []}],)"
      R"( "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT1"}]})";
  for (const std::string body : {std::string(kSimple), mixed, std::string(R"({"inputs": []})"),
                                 "\n\t " + std::string(kSimple) + " \r\n"}) {  // whitespace around, as curl -d @file sends
    auto fast = TryDecodeJsonInferRequestFast(body, {});
    ASSERT_TRUE(fast.has_value()) << body;
    auto full = DecodeJsonInferRequest(body, 0, FullOnly());
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    ExpectSameRequest(*fast, *full);
  }
  // The values themselves, against C++'s own conversions.
  auto r = TryDecodeJsonInferRequestFast(mixed, {});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id, "r-7");
  const float* f = r->inputs[0].tensor.data<float>();
  EXPECT_EQ(f[0], 0.1f);
  EXPECT_FALSE(std::signbit(f[1]));  // "-0" is an integer: 0, as the full decoder reads it
  EXPECT_EQ(f[2], static_cast<float>(1e-310));
  EXPECT_EQ(f[3], 3.4028235e38f);
  EXPECT_EQ(f[4], 16777216.0f);
  const double* d = r->inputs[1].tensor.data<double>();
  EXPECT_EQ(d[0], 9007199254740992.0);  // the nearest double (ties to even)
  EXPECT_EQ(d[1], 2.2250738585072011e-308);
  EXPECT_TRUE(std::signbit(d[2]));  // "-0.0" is a double
  EXPECT_EQ(d[3], 1000.0);
  EXPECT_EQ(r->inputs[2].tensor.data<uint16_t>()[0], 0x7BFF);  // 65504, the largest half
  EXPECT_EQ(r->inputs[6].tensor.data<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(r->inputs[7].tensor.data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(r->inputs[8].tensor.shape(), (Shape{0, 3}));
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[1].name, "OUTPUT1");
}

TEST(V2JsonFastDecode, DeclinesEverythingElseAndTheDefaultDecodeIsTheFullDecoders) {
  const std::vector<std::string> bodies = {
      // other keys and forms the full decoder takes
      R"({"parameters": {"a": 1}, "inputs": []})",
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "parameters": {"p": "v"}, "data": [1]}]})",
      R"({"inputs": [{"data": [1], "name": "x", "datatype": "FP32", "shape": [1]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2], [3, 4]]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": 7}]})",
      R"({"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "data": ["a"]}]})",
      R"({"inputs": [{"name": "x", "datatype": "BOOL", "shape": [2], "data": [true, false]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [NaN, -Infinity]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1e400]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FP64", "shape": [1], "data": [100000000000000000000000]}]})",
      R"({"inputs": [{"name": "IN\u0030", "datatype": "INT32", "shape": [1], "data": [1]}]})",
      R"({"id": "a\"b", "inputs": []})",
      R"({"inputs": [], "outputs": [{"name": "o", "parameters": {"binary_data": true}}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1], "extra": 1}]})",
      // what the full decoder refuses, with its message
      "{\"inputs\": [{\"name\": \"a\x01\", \"datatype\": \"INT32\", \"shape\": [1], \"data\": [1]}]}",
      R"({"inputs": [{"name": "x", "name": "y", "datatype": "INT32", "shape": [1], "data": [1]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1]}, {"name": "x", "datatype": "INT32", "shape": [1], "data": [2]}]})",
      R"({"inputs": [], "outputs": [{"name": "o"}, {"name": "o"}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT8", "shape": [1], "data": [300]}]})",
      R"({"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1], "data": [-1]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1.5]}]})",
      R"({"inputs": [{"name": "x", "datatype": "UINT64", "shape": [1], "data": [18446744073709551616]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [3], "data": [1, 2]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1, 2]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [-1], "data": []}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1.0], "data": [1]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FLOAT", "shape": [1], "data": [1]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [01]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1.]}]})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1]}]} x)",
      R"({"inputs": []} {"inputs": []})",
      R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1]]})",
      R"({"inputs": {}})",
      R"({"outputs": []})",
      R"([{"inputs": []}])",
      R"("inputs")",
      "",
      "{\"inputs\": [], \"id\": \"\xff\xfe\"}",
  };
  for (const std::string& body : bodies) {
    EXPECT_FALSE(TryDecodeJsonInferRequestFast(body, {}).has_value()) << body;
    ExpectSameOutcome(body);
  }
  // A declared tensor over the size limit: ResourceExhausted from the full decoder.
  JsonDecodeOptions small;
  small.max_tensor_bytes = 8;
  const std::string big = R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": [1, 2, 3]}]})";
  EXPECT_FALSE(TryDecodeJsonInferRequestFast(big, small).has_value());
  ExpectSameOutcome(big, small);
  EXPECT_EQ(DecodeJsonInferRequest(big, 0, small).status().code(), StatusCode::kResourceExhausted);
  // Past kMaxFastJsonBytes: the full decoder (whitespace makes it long, not the data).
  std::string long_body = std::string(kSimple);
  long_body.insert(1, kMaxFastJsonBytes, ' ');
  EXPECT_FALSE(TryDecodeJsonInferRequestFast(long_body, {}).has_value());
  ExpectSameOutcome(long_body);
}

// simdjson 3.0.1 misreads decimals of more than 19 digits ("0.22222222222222222222" gave
// 0.0377...): the fast path leaves them to the full decoder (leading zeros count) and takes the
// shorter ones, whose values are strtod's.
TEST(V2JsonFastDecode, DecimalsOfMoreThan19DigitsGoToTheFullDecoder) {
  for (const std::string num : {"0.22222222222222222222", "-0.0222222222222222222222", "0.022222222222222222222",
                                "0.0000000000000000000001234", "1.00000000000000000001", "0.2222222222222222222"}) {
    const std::string body = R"({"inputs": [{"name": "x", "datatype": "FP64", "shape": [1], "data": [)" + num + "]}]}";
    EXPECT_FALSE(TryDecodeJsonInferRequestFast(body, {}).has_value()) << num;
    ExpectSameOutcome(body);
    EXPECT_EQ(DecodeJsonInferRequest(body, 0)->inputs[0].tensor.data<double>()[0], std::strtod(num.c_str(), nullptr));
  }
  for (const std::string num : {"0.222222222222222222", "2.222222222222222222", "0.100000000000000001",
                                "1234567890.12345678", "4.9e-324", "2.4703282292062328e-324", "1.7976931348623157e308"}) {
    const std::string body = R"({"inputs": [{"name": "x", "datatype": "FP64", "shape": [1], "data": [)" + num + "]}]}";
    auto fast = TryDecodeJsonInferRequestFast(body, {});
    ASSERT_TRUE(fast.has_value()) << num;
    EXPECT_EQ(fast->inputs[0].tensor.data<double>()[0], std::strtod(num.c_str(), nullptr)) << num;
    ExpectSameOutcome(body);
  }
}

// Random decimals of up to 19 digits (leading zeros counted; signs, exponents up to +-300) into
// FP64 and FP32: the fast path takes every body and gives the full decoder's bits for each
// number.
TEST(V2JsonFastDecode, RandomDecimalsDecodeToTheFullDecodersBits) {
  std::mt19937 rng(44);
  auto digits = [&](int n) {
    std::string d;
    for (int i = 0; i < n; ++i) d += static_cast<char>('0' + rng() % 10);
    return d;
  };
  for (const char* dtype : {"FP64", "FP32"}) {
    for (int body_index = 0; body_index < 20; ++body_index) {
      std::string data;
      constexpr int kCount = 500;
      for (int i = 0; i < kCount; ++i) {
        std::string num = rng() % 4 == 0 ? "-" : "";
        const int form = static_cast<int>(rng() % 3);
        if (form == 0) {
          num += "0." + digits(1 + rng() % 18);  // "0.ddd": at most 19 digits
        } else if (form == 1) {
          const int zeros = static_cast<int>(rng() % 6);  // "0.000ddd"
          num += "0." + std::string(zeros, '0') + "1" + digits(rng() % (18 - zeros));
        } else {
          const int whole = 1 + static_cast<int>(rng() % 5);  // "dd.ddd"
          num += std::to_string(1 + rng() % 9) + digits(whole - 1) + "." + digits(1 + rng() % (19 - whole));
        }
        if (rng() % 3 == 0) num += (rng() % 2 ? "e-" : "E+") + std::to_string(rng() % 300);
        data += (i ? ", " : "") + num;
      }
      const std::string body = std::string(R"({"inputs": [{"name": "x", "datatype": ")") + dtype + R"(", "shape": [)" +
                               std::to_string(kCount) + R"(], "data": [)" + data + "]}]}";
      auto fast = TryDecodeJsonInferRequestFast(body, {});
      ASSERT_TRUE(fast.has_value()) << body.substr(0, 300);
      auto full = DecodeJsonInferRequest(body, 0, FullOnly());
      ASSERT_TRUE(full.ok()) << full.status().ToString();
      ExpectSameRequest(*fast, *full);
    }
  }
}

TEST(V2JsonFastDecode, EveryTruncationHasTheFullDecodersOutcome) {
  const std::string body = std::string(R"({"id": "t", )") + (kSimple + 1);
  for (size_t n = 0; n <= body.size(); ++n) ExpectSameOutcome(body.substr(0, n));
  ASSERT_TRUE(TryDecodeJsonInferRequestFast(body, {}).has_value());
}

}  // namespace
}  // namespace inferloop::frontends
