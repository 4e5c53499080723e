// Decodes REST bodies captured from tritonclient.http (tests/data/v2/make_tritonclient_bodies.py):
// every datatype, as JSON and as binary tensor data, with requested outputs and a request id;
// and gRPC messages serialized by tritonclient.grpc's own generated code, which checks that
// proto/grpc_service.proto has the same field numbers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "base/float_types.h"
#include "frontends/v2_datatype.h"
#include "frontends/v2_grpc_codec.h"
#include "frontends/v2_json_codec.h"

namespace inferloop::frontends {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Element k of the fixture's inputs, as the fixture script writes them.
void ExpectFixtureTensor(const std::string& v2_name, const Tensor& t) {
  static const char* kStrings[] = {"a", "bc", "", "def", "x", "\xc3\xa9t\xc3\xa9"};
  ASSERT_EQ(V2DataTypeName(t.dtype()), v2_name);
  ASSERT_EQ(ShapeToString(t.shape()), "[2,3]");
  for (int64_t k = 0; k < 6; ++k) {
    switch (t.dtype()) {
      case DataType::kBool: EXPECT_EQ(t.data<uint8_t>()[k], k % 2); break;
      case DataType::kUInt8: EXPECT_EQ(t.data<uint8_t>()[k], k); break;
      case DataType::kUInt16: EXPECT_EQ(t.data<uint16_t>()[k], k); break;
      case DataType::kUInt32: EXPECT_EQ(t.data<uint32_t>()[k], k); break;
      case DataType::kUInt64: EXPECT_EQ(t.data<uint64_t>()[k], static_cast<uint64_t>(k)); break;
      case DataType::kInt8: EXPECT_EQ(t.data<int8_t>()[k], k); break;
      case DataType::kInt16: EXPECT_EQ(t.data<int16_t>()[k], k); break;
      case DataType::kInt32: EXPECT_EQ(t.data<int32_t>()[k], k); break;
      case DataType::kInt64: EXPECT_EQ(t.data<int64_t>()[k], k); break;
      case DataType::kFloat16: EXPECT_EQ(t.data<uint16_t>()[k], FloatToHalf(static_cast<float>(k))); break;
      case DataType::kFloat: EXPECT_EQ(t.data<float>()[k], static_cast<float>(k)); break;
      case DataType::kDouble: EXPECT_EQ(t.data<double>()[k], static_cast<double>(k)); break;
      case DataType::kString: EXPECT_EQ(t.strings()[k], kStrings[k]); break;
      default: FAIL() << "unexpected dtype";
    }
  }
}

void CheckFixture(const std::string& name, size_t expected_inputs) {
  std::string dir = std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/v2/";
  std::string body = ReadFile(dir + name + ".body");
  size_t json_size = std::stoul(ReadFile(dir + name + ".json_size"));
  auto r = DecodeJsonInferRequest(body, json_size);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, "req-1");
  ASSERT_EQ(r->inputs.size(), expected_inputs);
  for (const auto& in : r->inputs) {
    SCOPED_TRACE(in.name);
    ASSERT_EQ(in.name.rfind("IN_", 0), 0u);
    ExpectFixtureTensor(in.name.substr(3), in.tensor);
  }
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_TRUE(WantsBinaryOutput(*r, "OUT0"));
  EXPECT_FALSE(WantsBinaryOutput(*r, "OUT1"));
}

TEST(TritonclientBodies, BinaryEveryDatatype) { CheckFixture("tritonclient_binary", 13); }
TEST(TritonclientBodies, JsonEveryDatatypeButFp16) { CheckFixture("tritonclient_json", 12); }

std::string FixturePath(const std::string& file) { return std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/v2/" + file; }

TEST(TritonclientGrpc, DecodesModelInferRequest) {
  inference::ModelInferRequest m;
  ASSERT_TRUE(m.ParseFromString(ReadFile(FixturePath("tritonclient_grpc_request.pb"))));
  auto r = DecodeGrpcInferRequest(m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model_name, "simple");
  EXPECT_EQ(r->model_version, "2");
  EXPECT_EQ(r->id, "req-1");
  EXPECT_EQ(std::get<uint64_t>(r->parameters.at("priority")), 3u);
  ASSERT_EQ(r->inputs.size(), 13u);
  for (const auto& in : r->inputs) {
    SCOPED_TRACE(in.name);
    ExpectFixtureTensor(in.name.substr(3), in.tensor);
  }
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[1].name, "OUT1");
}

// Our encoder produces the same bytes as tritonclient's generated code for the same response.
TEST(TritonclientGrpc, ResponseBytesMatchTritonclient) {
  std::string expected = ReadFile(FixturePath("tritonclient_grpc_response.pb"));
  InferResponse resp;
  resp.model_name = "simple";
  resp.model_version = "2";
  resp.id = "req-1";
  resp.outputs.push_back({"OUT0", Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {0, 1, 2, 3, 4, 5}), {}});
  resp.outputs.push_back({"OUT1", Tensor::FromStrings({2, 3}, {"a", "bc", "", "def", "x", "\xc3\xa9t\xc3\xa9"}), {}});
  inference::ModelInferResponse m;
  ASSERT_TRUE(EncodeGrpcInferResponse(resp, &m).ok());
  std::string ours;
  ASSERT_TRUE(m.SerializeToString(&ours));
  EXPECT_EQ(ours, expected);
}

}  // namespace
}  // namespace inferloop::frontends
