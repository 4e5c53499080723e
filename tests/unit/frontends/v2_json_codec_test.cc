#include "frontends/v2_json_codec.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "frontends/v2_datatype.h"
#include "v2_test_util.h"

namespace inferloop::frontends {
namespace {

using testing::AllV2DataTypes;
using testing::ExpectTensorEq;
using testing::SampleTensor;

std::string Le32(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

InferRequest OneInputRequest(const std::string& name, Tensor t) {
  InferRequest r;
  r.id = "req-7";
  r.inputs.push_back({name, std::move(t), {}});
  return r;
}

Status DecodeError(std::string_view body, size_t header = 0, JsonDecodeOptions opts = {}) {
  auto r = DecodeJsonInferRequest(body, header, opts);
  EXPECT_FALSE(r.ok()) << "decoded unexpectedly: " << body;
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectError(std::string_view body, const std::string& needle, size_t header = 0, JsonDecodeOptions opts = {},
                 StatusCode code = StatusCode::kInvalidArgument) {
  Status st = DecodeError(body, header, opts);
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_NE(st.message().find(needle), std::string::npos) << "message: " << st.message() << "\nwanted: " << needle;
}

TEST(V2DataType, NamesMapBothWays) {
  for (DataType t : AllV2DataTypes()) {
    const char* name = V2DataTypeName(t);
    ASSERT_NE(name, nullptr) << DataTypeName(t);
    auto back = DataTypeFromV2Name(name);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(*DataTypeFromV2Name("FP32"), DataType::kFloat);
  EXPECT_EQ(*DataTypeFromV2Name("BYTES"), DataType::kString);
  EXPECT_EQ(*DataTypeFromV2Name("BF16"), DataType::kBFloat16);
  EXPECT_EQ(V2DataTypeName(DataType::kFloat8E4M3FN), nullptr);
  auto bad = DataTypeFromV2Name("fp32");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown datatype 'fp32'"), std::string::npos);
}

TEST(V2JsonCodec, RoundTripEveryDatatypeAsJsonAndBinary) {
  for (DataType t : AllV2DataTypes()) {
    for (bool binary : {false, true}) {
      SCOPED_TRACE(std::string(DataTypeName(t)) + (binary ? " binary" : " json"));
      InferRequest req = OneInputRequest("INPUT0", SampleTensor(t));
      auto enc = EncodeJsonInferRequest(req, binary);
      ASSERT_TRUE(enc.ok()) << enc.status().ToString();
      EXPECT_EQ(enc->has_binary, binary);
      auto dec = DecodeJsonInferRequest(enc->body, binary ? enc->json_length : 0);
      ASSERT_TRUE(dec.ok()) << dec.status().ToString() << "\n" << enc->body;
      EXPECT_EQ(dec->id, "req-7");
      ASSERT_EQ(dec->inputs.size(), 1u);
      EXPECT_EQ(dec->inputs[0].name, "INPUT0");
      ExpectTensorEq(dec->inputs[0].tensor, req.inputs[0].tensor);
    }
  }
}

// What tritonclient.http sends for `InferInput("INPUT0", [2, 2], "INT32").set_data_from_numpy(a,
// binary_data=False)` with a requested output.
TEST(V2JsonCodec, DecodesTritonclientJsonBody) {
  const std::string body =
      R"({"id":"42","inputs":[{"name":"INPUT0","shape":[2,2],"datatype":"INT32","data":[1,2,3,-4]}],)"
      R"("outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false}},{"name":"OUTPUT1"}]})";
  auto r = DecodeJsonInferRequest(body, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, "42");
  ASSERT_EQ(r->inputs.size(), 1u);
  const Tensor& t = r->inputs[0].tensor;
  EXPECT_EQ(t.dtype(), DataType::kInt32);
  EXPECT_EQ(ShapeToString(t.shape()), "[2,2]");
  EXPECT_EQ(t.data<int32_t>()[3], -4);
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[0].binary_data, std::optional<bool>(false));
  EXPECT_FALSE(r->outputs[1].binary_data.has_value());
  EXPECT_FALSE(WantsBinaryOutput(*r, "OUTPUT0"));
  EXPECT_FALSE(WantsBinaryOutput(*r, "OUTPUT1"));
}

// tritonclient.http's default: binary inputs, binary outputs.
TEST(V2JsonCodec, DecodesTritonclientBinaryBody) {
  const std::string json =
      R"({"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":12}},)"
      R"({"name":"TEXT","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":13}}],)"
      R"("outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}],"parameters":{"binary_data_output":true}})";
  float vals[3] = {1.5f, -2.0f, 3.25f};
  std::string body = json;
  body.append(reinterpret_cast<const char*>(vals), 12);
  body += Le32(3) + "abc" + Le32(2) + "de";
  auto r = DecodeJsonInferRequest(body, json.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->inputs.size(), 2u);
  EXPECT_EQ(r->inputs[0].tensor.data<float>()[2], 3.25f);
  EXPECT_EQ(std::get<int64_t>(r->inputs[0].parameters.at("binary_data_size")), 12);
  EXPECT_EQ(r->inputs[1].tensor.strings()[0], "abc");
  EXPECT_EQ(r->inputs[1].tensor.strings()[1], "de");
  EXPECT_TRUE(WantsBinaryOutput(*r, "OUTPUT0"));
  EXPECT_TRUE(WantsBinaryOutput(*r, "OTHER"));  // from binary_data_output
}

TEST(V2JsonCodec, NestedAndFlatDataAgree) {
  auto flat = DecodeJsonInferRequest(
      R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP64","data":[1,2,3,4,5,6]}]})", 0);
  auto nested = DecodeJsonInferRequest(
      R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP64","data":[[1,2,3],[4,5,6]]}]})", 0);
  ASSERT_TRUE(flat.ok() && nested.ok());
  ExpectTensorEq(flat->inputs[0].tensor, nested->inputs[0].tensor);
  EXPECT_EQ(nested->inputs[0].tensor.data<double>()[4], 5.0);
  auto scalar = DecodeJsonInferRequest(R"({"inputs":[{"name":"s","shape":[],"datatype":"INT64","data":7}]})", 0);
  ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
  EXPECT_EQ(scalar->inputs[0].tensor.data<int64_t>()[0], 7);
}

TEST(V2JsonCodec, BytesAsJsonStringsKeepEmbeddedNul) {
  const std::string body = "{\"inputs\":[{\"name\":\"t\",\"shape\":[2],\"datatype\":\"BYTES\",\"data\":[\"a\\u0000b\",\"\"]}]}";
  auto r = DecodeJsonInferRequest(body, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].tensor.strings()[0], std::string("a\0b", 3));
  EXPECT_EQ(r->inputs[0].tensor.strings()[1], "");
}

TEST(V2JsonCodec, Fp16AndBoolFromJson) {
  auto r = DecodeJsonInferRequest(
      R"({"inputs":[{"name":"h","shape":[2],"datatype":"FP16","data":[0.5,-2]},)"
      R"({"name":"b","shape":[2],"datatype":"BOOL","data":[true,false]}]})", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].tensor.data<uint16_t>()[0], FloatToHalf(0.5f));
  EXPECT_EQ(r->inputs[0].tensor.data<uint16_t>()[1], FloatToHalf(-2.0f));
  EXPECT_EQ(r->inputs[1].tensor.data<uint8_t>()[0], 1);
  EXPECT_EQ(r->inputs[1].tensor.data<uint8_t>()[1], 0);
}

TEST(V2JsonCodec, ZeroNumbersWithLargeExponentsAreZero) {
  auto r = DecodeJsonInferRequest(
      R"({"inputs":[{"name":"d","shape":[5],"datatype":"FP64","data":[0e300,-0.0E-400,0.00000000000000000000000000,)"
      R"(0.0000000000000000000000001,1e300]}]})", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double* d = r->inputs[0].tensor.data<double>();
  EXPECT_EQ(d[0], 0.0);
  EXPECT_EQ(d[1], 0.0);
  EXPECT_EQ(d[2], 0.0);
  EXPECT_EQ(d[3], 1e-25);
  EXPECT_EQ(d[4], 1e300);
  // Offsets in errors are those of the original text.
  ExpectError(R"({"inputs":[0e300,,]})", "malformed JSON at offset 17");
}

TEST(V2JsonCodec, LargeIntegersNanAndInfinity) {
  auto r = DecodeJsonInferRequest(
      R"({"inputs":[{"name":"f","shape":[4],"datatype":"FP64","data":[NaN,-Infinity,184467440737095516156,-9223372036854775809]},)"
      R"({"name":"u","shape":[1],"datatype":"UINT64","data":[18446744073709551615]},)"
      R"({"name":"i","shape":[1],"datatype":"INT64","data":[-9223372036854775808]}]})", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double* f = r->inputs[0].tensor.data<double>();
  EXPECT_TRUE(std::isnan(f[0]));
  EXPECT_EQ(f[1], -HUGE_VAL);
  EXPECT_EQ(f[2], 184467440737095516156.0);
  EXPECT_EQ(f[3], -9223372036854775809.0);
  EXPECT_EQ(r->inputs[1].tensor.data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(r->inputs[2].tensor.data<int64_t>()[0], INT64_MIN);
  ExpectError(R"({"inputs":[{"name":"u","shape":[1],"datatype":"UINT64","data":[18446744073709551616]}]})",
              "data element 0 (UINT64)");
}

TEST(V2JsonCodec, RequestedOutputsRoundTrip) {
  InferRequest req = OneInputRequest("x", SampleTensor(DataType::kFloat));
  req.outputs.push_back({"y", true, {}});
  req.outputs.push_back({"z", std::nullopt, {{"classification", int64_t{3}}}});
  req.parameters["priority"] = int64_t{2};
  auto enc = EncodeJsonInferRequest(req, false);
  ASSERT_TRUE(enc.ok());
  auto dec = DecodeJsonInferRequest(enc->body, 0);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  ASSERT_EQ(dec->outputs.size(), 2u);
  EXPECT_EQ(dec->outputs[0].name, "y");
  EXPECT_EQ(dec->outputs[0].binary_data, std::optional<bool>(true));
  EXPECT_EQ(std::get<int64_t>(dec->outputs[1].parameters.at("classification")), 3);
  EXPECT_EQ(std::get<int64_t>(dec->parameters.at("priority")), 2);
}

// --- errors ---

TEST(V2JsonCodecErrors, BrokenJsonGivesOffset) {
  ExpectError(R"({"inputs": [ {"name": "x",, }]})", "malformed JSON at offset 26");
  ExpectError("", "malformed JSON at offset 0");
  ExpectError(R"({"inputs":[]} trailing)", "malformed JSON at offset 14");
  ExpectError("[1,2]", "request must be a JSON object");
}

TEST(V2JsonCodecErrors, DeepNestingRefusedBeforeParsing) {
  std::string deep(100000, '[');
  ExpectError(deep, "nested deeper than 64");
}

TEST(V2JsonCodecErrors, MissingAndMistypedFields) {
  ExpectError(R"({})", "missing \"inputs\"");
  ExpectError(R"({"inputs":{}})", "\"inputs\" must be an array");
  ExpectError(R"({"inputs":[{"shape":[1],"datatype":"FP32","data":[1]}]})", "inputs[0]: missing \"name\"");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"data":[1]}]})", "input 'x': missing \"datatype\"");
  ExpectError(R"({"inputs":[{"name":"x","datatype":"FP32","data":[1]}]})", "input 'x': missing \"shape\"");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32"}]})", "input 'x': missing \"data\"");
  ExpectError(R"({"id":5,"inputs":[]})", "\"id\" must be a string");
  ExpectError(R"({"inputs":[{"name":"x","shape":"1","datatype":"FP32","data":[1]}]})", "\"shape\" must be an array");
  ExpectError(R"({"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":1}}]})", "binary_data must be a bool");
  ExpectError(R"({"inputs":[],"outputs":[{"name":"y"},{"name":"y"}]})", "output 'y' is requested more than once");
}

TEST(V2JsonCodecErrors, UnknownDatatype) {
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FLOAT32","data":[1]}]})",
              "input 'x': unknown datatype 'FLOAT32'");
}

TEST(V2JsonCodecErrors, ElementCountMismatch) {
  ExpectError(R"({"inputs":[{"name":"x","shape":[2,2],"datatype":"FP32","data":[1,2,3]}]})",
              "input 'x': shape [2,2] has 4 elements but \"data\" has 3");
  ExpectError(R"({"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[[1,2],[3]]}]})",
              "has 2 elements but \"data\" has 3");
}

TEST(V2JsonCodecErrors, WrongElementTypes) {
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]})",
              "input 'x': data element 0 (INT8): expected an integer in [-128, 127]");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"UINT32","data":[-1]}]})", "data element 0 (UINT32)");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT32","data":[1.5]}]})", "not whole");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","data":[1]}]})", "expected true or false");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":["1"]}]})", "expected a number, got a string");
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"BYTES","data":[1]}]})", "expected a string");
}

TEST(V2JsonCodecErrors, NegativeAndOverflowingShapes) {
  ExpectError(R"({"inputs":[{"name":"x","shape":[2,-1],"datatype":"FP32","data":[1,2]}]})",
              "input 'x': shape [2,-1] has a negative dimension");
  ExpectError(R"({"inputs":[{"name":"x","shape":[4294967296,4294967296],"datatype":"INT8","data":[1]}]})",
              "more elements than fit in int64");
  ExpectError(R"({"inputs":[{"name":"x","shape":[18446744073709551615],"datatype":"INT8","data":[1]}]})",
              "integers in int64 range");
}

TEST(V2JsonCodecErrors, HugeDeclaredShapeRefusedBeforeAllocating) {
  JsonDecodeOptions opts;
  opts.max_tensor_bytes = 1 << 20;
  // 2^40 floats (4 TiB): must fail at once with ResourceExhausted, not try to allocate.
  auto start = std::chrono::steady_clock::now();
  ExpectError(R"({"inputs":[{"name":"x","shape":[1099511627776],"datatype":"FP32","data":[1]}]})",
              "input 'x': shape [1099511627776] needs more than the limit of 1048576 bytes", 0, opts,
              StatusCode::kResourceExhausted);
  // Just over the limit: 262145 floats.
  ExpectError(R"({"inputs":[{"name":"x","shape":[262145],"datatype":"FP32","data":[1]}]})", "needs more than the limit",
              0, opts, StatusCode::kResourceExhausted);
  std::string json = R"({"inputs":[{"name":"x","shape":[1099511627776],"datatype":"BYTES","parameters":{"binary_data_size":4}}]})";
  ExpectError(json + Le32(0), "needs more than the limit", json.size(), opts, StatusCode::kResourceExhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(V2JsonCodecErrors, DuplicateInputNames) {
  ExpectError(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},)"
              R"({"name":"x","shape":[1],"datatype":"FP32","data":[2]}]})",
              "input 'x' appears more than once");
}

TEST(V2JsonCodecErrors, BinarySizeMismatches) {
  const std::string json8 =
      R"({"inputs":[{"name":"x","shape":[3],"datatype":"FP32","parameters":{"binary_data_size":8}}]})";
  ExpectError(json8 + std::string(8, '\0'), "input 'x': shape [3] needs 12 bytes of data, got 8", json8.size());
  const std::string json12 =
      R"({"inputs":[{"name":"x","shape":[3],"datatype":"FP32","parameters":{"binary_data_size":12}}]})";
  ExpectError(json12 + std::string(8, '\0'), "binary_data_size 12 exceeds the 8 bytes of binary data left",
              json12.size());
  ExpectError(json12 + std::string(16, '\0'), "4 bytes of binary data after the JSON header belong to no input",
              json12.size());
  ExpectError(json12, "no binary data", 0);
  ExpectError(json12, "exceeds the body size", json12.size() + 1);
  const std::string neg =
      R"({"inputs":[{"name":"x","shape":[0],"datatype":"FP32","parameters":{"binary_data_size":-1}}]})";
  ExpectError(neg, "binary_data_size must be a non-negative integer", neg.size());
  const std::string both =
      R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}}]})";
  ExpectError(both + std::string(4, '\0'), "both \"data\" and the binary_data_size", both.size());
}

TEST(V2JsonCodecErrors, BinaryBytesElementsMustBeWhole) {
  const std::string json =
      R"({"inputs":[{"name":"t","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":9}}]})";
  // Second element declares 100 bytes.
  ExpectError(json + Le32(1) + "a" + Le32(100), "BYTES element 1 declares 100 bytes but only 0 remain", json.size());
  // Two elements, then 2 extra bytes.
  const std::string json2 =
      R"({"inputs":[{"name":"t","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":10}}]})";
  ExpectError(json2 + Le32(0) + Le32(0) + "zz", "2 bytes left over after 2 BYTES elements", json2.size());
  // Truncated length prefix.
  const std::string json3 =
      R"({"inputs":[{"name":"t","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":2}}]})";
  ExpectError(json3 + "ab", "ends inside the length of element 0", json3.size());
}

// --- responses ---

InferResponse SampleResponse() {
  InferResponse resp;
  resp.model_name = "tiny";
  resp.model_version = "3";
  resp.id = "req-7";
  Tensor y = Tensor::FromVector<float>(DataType::kFloat, {2}, {0.25f, -1.0f});
  resp.outputs.push_back({"y", y, {}});
  resp.outputs.push_back({"labels", Tensor::FromStrings({2}, {"cat", "dog"}), {}});
  return resp;
}

TEST(V2JsonResponse, JsonOutputs) {
  InferRequest req;  // nothing asks for binary
  auto enc = EncodeJsonInferResponse(SampleResponse(), req);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  EXPECT_FALSE(enc->has_binary);
  EXPECT_EQ(enc->json_length, enc->body.size());
  rapidjson::Document d;
  d.Parse(enc->body.c_str());
  ASSERT_FALSE(d.HasParseError()) << enc->body;
  EXPECT_STREQ(d["model_name"].GetString(), "tiny");
  EXPECT_STREQ(d["model_version"].GetString(), "3");
  EXPECT_STREQ(d["id"].GetString(), "req-7");
  const auto& out0 = d["outputs"][0];
  EXPECT_STREQ(out0["name"].GetString(), "y");
  EXPECT_STREQ(out0["datatype"].GetString(), "FP32");
  EXPECT_EQ(out0["shape"][0].GetInt(), 2);
  EXPECT_EQ(out0["data"][0].GetDouble(), 0.25);
  EXPECT_EQ(out0["data"][1].GetDouble(), -1.0);
  EXPECT_STREQ(d["outputs"][1]["data"][1].GetString(), "dog");
}

TEST(V2JsonResponse, BinaryOutputsWhenRequested) {
  InferRequest req;
  req.outputs.push_back({"y", true, {}});
  req.outputs.push_back({"labels", std::nullopt, {}});
  auto enc = EncodeJsonInferResponse(SampleResponse(), req);
  ASSERT_TRUE(enc.ok());
  EXPECT_TRUE(enc->has_binary);
  ASSERT_EQ(enc->body.size(), enc->json_length + 8);
  std::string json = enc->body.substr(0, enc->json_length);
  rapidjson::Document d;
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_EQ(d["outputs"][0]["parameters"]["binary_data_size"].GetInt(), 8);
  EXPECT_FALSE(d["outputs"][0].HasMember("data"));
  EXPECT_TRUE(d["outputs"][1].HasMember("data"));
  float vals[2];
  std::memcpy(vals, enc->body.data() + enc->json_length, 8);
  EXPECT_EQ(vals[0], 0.25f);
  EXPECT_EQ(vals[1], -1.0f);

  // binary_data_output applies to outputs without their own flag; an explicit false wins.
  InferRequest all;
  all.parameters[kBinaryDataOutputParam] = true;
  all.outputs.push_back({"y", false, {}});
  auto enc2 = EncodeJsonInferResponse(SampleResponse(), all);
  ASSERT_TRUE(enc2.ok());
  EXPECT_EQ(enc2->body.substr(enc2->json_length), Le32(3) + "cat" + Le32(3) + "dog");
}

TEST(V2JsonResponse, NonUtf8BytesNeedBinary) {
  InferResponse resp;
  resp.outputs.push_back({"b", Tensor::FromStrings({1}, {"\xff\xfe"}), {}});
  InferRequest req;
  auto enc = EncodeJsonInferResponse(resp, req);
  ASSERT_FALSE(enc.ok());
  EXPECT_NE(enc.status().message().find("not valid UTF-8"), std::string::npos);
  req.outputs.push_back({"b", true, {}});
  EXPECT_TRUE(EncodeJsonInferResponse(resp, req).ok());
}

TEST(V2JsonCodecErrors, InvalidUtf8) {
  ExpectError("{\"inputs\":[],\"id\":\"\xc3\"}", "malformed JSON at offset 19: Invalid encoding");
  InferResponse resp;
  resp.model_name = "m";
  resp.outputs.push_back({"\xe2\x82", Tensor::FromVector<float>(DataType::kFloat, {1}, {1.0f}), {}});
  auto enc = EncodeJsonInferResponse(resp, InferRequest{});
  ASSERT_FALSE(enc.ok());
  EXPECT_NE(enc.status().message().find("name is not valid UTF-8"), std::string::npos) << enc.status().message();
  EXPECT_EQ(JsonErrorBody(Status::InvalidArgument("bad '\xff'")), R"({"error":"bad '?'"})");
}

TEST(V2JsonResponse, ErrorBody) {
  EXPECT_EQ(JsonErrorBody(Status::InvalidArgument("input 'x': bad \"shape\"")),
            R"({"error":"input 'x': bad \"shape\""})");
}

}  // namespace
}  // namespace inferloop::frontends
