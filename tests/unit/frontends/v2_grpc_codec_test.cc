#include "frontends/v2_grpc_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

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

// Through the wire bytes, as a client and server would exchange them.
inference::ModelInferRequest Reparsed(const inference::ModelInferRequest& m) {
  std::string wire;
  EXPECT_TRUE(m.SerializeToString(&wire));
  inference::ModelInferRequest back;
  EXPECT_TRUE(back.ParseFromString(wire));
  return back;
}

void ExpectError(const inference::ModelInferRequest& m, const std::string& needle, GrpcDecodeOptions opts = {},
                 StatusCode code = StatusCode::kInvalidArgument) {
  auto r = DecodeGrpcInferRequest(m, opts);
  ASSERT_FALSE(r.ok()) << "decoded unexpectedly: " << m.DebugString();
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "message: " << r.status().message() << "\nwanted: " << needle;
}

TEST(V2GrpcCodec, RoundTripEveryDatatypeRawAndTyped) {
  for (DataType t : AllV2DataTypes()) {
    for (bool raw : {true, false}) {
      SCOPED_TRACE(std::string(DataTypeName(t)) + (raw ? " raw" : " typed"));
      InferRequest req;
      req.model_name = "m";
      req.model_version = "2";
      req.id = "abc";
      req.parameters["sequence_id"] = uint64_t{9};
      req.inputs.push_back({"INPUT0", SampleTensor(t), {}});
      req.outputs.push_back({"OUTPUT0", true, {}});
      inference::ModelInferRequest m;
      Status st = EncodeGrpcInferRequest(req, raw, &m);
      bool no_typed_field = t == DataType::kFloat16 || t == DataType::kBFloat16;
      if (!raw && no_typed_field) {
        EXPECT_FALSE(st.ok());
        continue;
      }
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(m.raw_input_contents_size(), raw ? 1 : 0);
      auto dec = DecodeGrpcInferRequest(Reparsed(m));
      ASSERT_TRUE(dec.ok()) << dec.status().ToString();
      EXPECT_EQ(dec->model_name, "m");
      EXPECT_EQ(dec->model_version, "2");
      EXPECT_EQ(dec->id, "abc");
      EXPECT_EQ(std::get<uint64_t>(dec->parameters.at("sequence_id")), 9u);
      ASSERT_EQ(dec->inputs.size(), 1u);
      ExpectTensorEq(dec->inputs[0].tensor, req.inputs[0].tensor);
      ASSERT_EQ(dec->outputs.size(), 1u);
      EXPECT_EQ(dec->outputs[0].name, "OUTPUT0");
    }
  }
}

// tritonclient.grpc sends raw_input_contents; BYTES elements length-prefixed.
TEST(V2GrpcCodec, DecodesTritonclientStyleRawRequest) {
  inference::ModelInferRequest m;
  m.set_model_name("simple");
  auto* in0 = m.add_inputs();
  in0->set_name("INPUT0");
  in0->set_datatype("INT32");
  in0->add_shape(1);
  in0->add_shape(2);
  int32_t v[2] = {5, -6};
  m.add_raw_input_contents(std::string(reinterpret_cast<const char*>(v), 8));
  auto* in1 = m.add_inputs();
  in1->set_name("TEXT");
  in1->set_datatype("BYTES");
  in1->add_shape(2);
  m.add_raw_input_contents(Le32(2) + "hi" + Le32(0));
  m.add_outputs()->set_name("OUTPUT0");
  auto r = DecodeGrpcInferRequest(m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].tensor.data<int32_t>()[1], -6);
  EXPECT_EQ(r->inputs[1].tensor.strings()[0], "hi");
  EXPECT_EQ(r->inputs[1].tensor.strings()[1], "");
  EXPECT_EQ(r->outputs[0].name, "OUTPUT0");
}

TEST(V2GrpcCodec, ResponseUsesRawOutputContents) {
  InferResponse resp;
  resp.model_name = "m";
  resp.model_version = "1";
  resp.id = "x";
  resp.outputs.push_back({"y", Tensor::FromVector<float>(DataType::kFloat, {2}, {1.0f, 2.0f}), {}});
  resp.outputs.push_back({"s", Tensor::FromStrings({1}, {"ok"}), {}});
  inference::ModelInferResponse m;
  ASSERT_TRUE(EncodeGrpcInferResponse(resp, &m).ok());
  EXPECT_EQ(m.model_name(), "m");
  EXPECT_EQ(m.id(), "x");
  ASSERT_EQ(m.outputs_size(), 2);
  EXPECT_EQ(m.outputs(0).datatype(), "FP32");
  EXPECT_EQ(m.outputs(0).shape(0), 2);
  ASSERT_EQ(m.raw_output_contents_size(), 2);
  float vals[2];
  ASSERT_EQ(m.raw_output_contents(0).size(), 8u);
  std::memcpy(vals, m.raw_output_contents(0).data(), 8);
  EXPECT_EQ(vals[1], 2.0f);
  EXPECT_EQ(m.raw_output_contents(1), Le32(2) + "ok");
}

inference::ModelInferRequest OneInput(const std::string& dtype, std::initializer_list<int64_t> shape) {
  inference::ModelInferRequest m;
  auto* in = m.add_inputs();
  in->set_name("x");
  in->set_datatype(dtype);
  for (int64_t d : shape) in->add_shape(d);
  return m;
}

TEST(V2GrpcCodecErrors, UnknownDatatypeAndShapes) {
  ExpectError(OneInput("FLOAT", {1}), "input 'x': unknown datatype 'FLOAT'");
  ExpectError(OneInput("FP32", {2, -3}), "input 'x': shape [2,-3] has a negative dimension");
  ExpectError(OneInput("FP32", {int64_t{1} << 32, int64_t{1} << 32}), "more elements than fit in int64");
  GrpcDecodeOptions opts;
  opts.max_tensor_bytes = 1024;
  auto m = OneInput("FP64", {int64_t{1} << 40});
  m.add_raw_input_contents("");
  ExpectError(m, "needs more than the limit of 1024 bytes", opts, StatusCode::kResourceExhausted);
}

TEST(V2GrpcCodecErrors, RawContents) {
  auto m = OneInput("FP32", {3});
  m.add_raw_input_contents(std::string(8, '\0'));
  ExpectError(m, "input 'x': shape [3] needs 12 bytes of data, got 8");
  m.add_raw_input_contents("");
  ExpectError(m, "raw_input_contents has 2 entries for 1 inputs");
  auto mixed = OneInput("FP32", {1});
  mixed.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.0f);
  mixed.add_raw_input_contents(std::string(4, '\0'));
  ExpectError(mixed, "has typed contents while the request uses raw_input_contents");
  auto bytes = OneInput("BYTES", {1});
  bytes.add_raw_input_contents(Le32(10) + "abc");
  ExpectError(bytes, "BYTES element 0 declares 10 bytes but only 3 remain");
}

TEST(V2GrpcCodecErrors, TypedContents) {
  auto m = OneInput("INT32", {2});
  m.mutable_inputs(0)->mutable_contents()->add_int_contents(1);
  ExpectError(m, "input 'x': shape [2] has 2 elements but contents.int_contents has 1");
  auto wrong_field = OneInput("INT64", {1});
  wrong_field.mutable_inputs(0)->mutable_contents()->add_int_contents(1);
  ExpectError(wrong_field, "contents.int64_contents has 0");
  auto range = OneInput("INT8", {1});
  range.mutable_inputs(0)->mutable_contents()->add_int_contents(200);
  ExpectError(range, "contents element 0 (200) is out of range");
  auto urange = OneInput("UINT16", {1});
  urange.mutable_inputs(0)->mutable_contents()->add_uint_contents(70000);
  ExpectError(urange, "out of range");
  auto fp16 = OneInput("FP16", {1});
  fp16.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.0f);
  ExpectError(fp16, "FP16 has no typed contents field");
  ExpectError(OneInput("FP32", {2}), "has 2 elements but contents.fp32_contents has 0");
}

TEST(V2GrpcCodecErrors, DuplicatesAndMissingNames) {
  auto m = OneInput("FP32", {0});
  *m.add_inputs() = m.inputs(0);
  ExpectError(m, "input 'x' appears more than once");
  auto unnamed = OneInput("FP32", {0});
  unnamed.mutable_inputs(0)->clear_name();
  ExpectError(unnamed, "inputs[0]: missing name");
  auto outs = OneInput("FP32", {0});
  outs.add_outputs()->set_name("y");
  outs.add_outputs()->set_name("y");
  ExpectError(outs, "output 'y' is requested more than once");
  auto empty = OneInput("FP32", {0});
  EXPECT_TRUE(DecodeGrpcInferRequest(empty).ok());  // zero elements need no data
}

}  // namespace
}  // namespace inferloop::frontends
