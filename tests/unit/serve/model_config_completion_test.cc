// Completing config.pbtxt from the model and checking it against the model
// (src/serve/model_config_completion.h), on the shipped example tiny_cnn:
// image float32[N,1,28,28] -> probs float32[N,10].
#include "serve/model_config_completion.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace inferloop::serve {
namespace {

class CompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Session::CreateFromFile(std::string(INFERLOOP_SOURCE_DIR) +
                                     "/examples/model_repository/tiny_cnn/1/model.onnx");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    session_ = std::move(s).value();
  }
  Result<ModelConfig> Complete(const std::string& text) {
    auto parsed = ParseModelConfig(text, "tiny_cnn");
    if (!parsed.ok()) return parsed.status();
    return CompleteConfigFromModel(*parsed, *session_);
  }
  std::string ErrorOf(const std::string& text) {
    auto r = Complete(text);
    return r.ok() ? "(completed)" : r.status().message();
  }
  std::unique_ptr<Session> session_;
};

std::string Dims(const google::protobuf::RepeatedField<int64_t>& d) {
  std::string s;
  for (int64_t x : d) s += std::to_string(x) + ",";
  return s;
}

TEST_F(CompletionTest, EmptyConfigGetsEverythingAndTheDefaultBatch) {
  auto r = Complete("");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name(), "tiny_cnn");
  EXPECT_EQ(r->max_batch_size(), kDefaultMaxBatchSize);
  ASSERT_EQ(r->input_size(), 1);
  EXPECT_EQ(r->input(0).name(), "image");
  EXPECT_EQ(r->input(0).data_type(), configpb::TYPE_FP32);
  EXPECT_EQ(Dims(r->input(0).dims()), "1,28,28,");
  ASSERT_EQ(r->output_size(), 1);
  EXPECT_EQ(r->output(0).name(), "probs");
  EXPECT_EQ(r->output(0).data_type(), configpb::TYPE_FP32);
  EXPECT_EQ(Dims(r->output(0).dims()), "10,");
}

TEST_F(CompletionTest, KeepsGivenBatchSizeAndFillsOmittedOutputs) {
  auto r = Complete("max_batch_size: 4\ndynamic_batching { preferred_batch_size: [ 2, 4 ] }\n"
                    "input [ { name: \"image\" dims: [ 1, 28, 28 ] } ]");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_batch_size(), 4);
  EXPECT_EQ(r->input(0).data_type(), configpb::TYPE_FP32);  // filled
  ASSERT_EQ(r->output_size(), 1);
  EXPECT_EQ(Dims(r->output(0).dims()), "10,");
}

TEST_F(CompletionTest, NoBatchingWhenInputsAreListedWithMaxBatchZero) {
  auto r = Complete("input [ { name: \"image\" data_type: TYPE_FP32 dims: [ -1, 1, 28, 28 ] } ]");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_batch_size(), 0);
  EXPECT_EQ(Dims(r->output(0).dims()), "-1,10,");
  // A fixed batch narrows the model's symbolic one: allowed.
  EXPECT_EQ(ErrorOf("input [ { name: \"image\" data_type: TYPE_FP32 dims: [ 2, 1, 28, 28 ] } ]"), "(completed)");
}

TEST_F(CompletionTest, PreferredBatchSizeAboveTheDefaultMax) {
  const std::string e = ErrorOf("dynamic_batching { preferred_batch_size: [ 16 ] }");
  EXPECT_NE(e.find("preferred_batch_size 16 exceeds max_batch_size 8"), std::string::npos) << e;
}

TEST_F(CompletionTest, WrongDataType) {
  const std::string e = ErrorOf("max_batch_size: 2\ninput [ { name: \"image\" data_type: TYPE_FP16 dims: [ 1, 28, 28 ] } ]");
  EXPECT_NE(e.find("input 'image': data_type TYPE_FP16 but the model has TYPE_FP32"), std::string::npos) << e;
}

TEST_F(CompletionTest, WrongDims) {
  const std::string size = ErrorOf("max_batch_size: 2\ninput [ { name: \"image\" data_type: TYPE_FP32 dims: [ 1, 28, 27 ] } ]");
  EXPECT_NE(size.find("input 'image': dims [1,28,27] differ from the model's"), std::string::npos) << size;
  EXPECT_NE(size.find("27 vs 28"), std::string::npos) << size;
  // max_batch_size 0 means dims are the full shape: three dims are one too few.
  const std::string rank = ErrorOf("input [ { name: \"image\" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]");
  EXPECT_NE(rank.find("has rank 3 but the model's shape"), std::string::npos) << rank;
  EXPECT_NE(rank.find("has rank 4"), std::string::npos) << rank;
  const std::string variable = ErrorOf("max_batch_size: 2\ninput [ { name: \"image\" data_type: TYPE_FP32 dims: [ 1, -1, 28 ] } ]");
  EXPECT_NE(variable.find("-1 vs 28"), std::string::npos) << variable;
  const std::string out = ErrorOf("max_batch_size: 2\noutput [ { name: \"probs\" data_type: TYPE_FP32 dims: [ 1000 ] } ]");
  EXPECT_NE(out.find("output 'probs'"), std::string::npos) << out;
}

TEST_F(CompletionTest, ReshapeIsCheckedInsteadOfDims) {
  auto r = Complete("max_batch_size: 2\ninput [ { name: \"image\" data_type: TYPE_FP32 dims: [ 784 ]"
                    " reshape: { shape: [ 1, 28, 28 ] } } ]");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Dims(r->input(0).dims()), "784,");
}

TEST_F(CompletionTest, UnknownNames) {
  const std::string in = ErrorOf("max_batch_size: 2\ninput [ { name: \"img\" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]");
  EXPECT_NE(in.find("input 'img' is not an input of the model (it has: image)"), std::string::npos) << in;
  const std::string out = ErrorOf("max_batch_size: 2\noutput [ { name: \"logits\" data_type: TYPE_FP32 dims: [ 10 ] } ]");
  EXPECT_NE(out.find("output 'logits' is not an output of the model (it has: probs)"), std::string::npos) << out;
}

TEST_F(CompletionTest, WarmupInputsMustBeModelInputs) {
  const std::string e = ErrorOf(
      "model_warmup [ { name: \"w\" batch_size: 2 inputs { key: \"pixels\" value: { data_type: TYPE_FP32"
      " dims: [ 1, 28, 28 ] zero_data: true } } } ]");
  EXPECT_NE(e.find("'pixels' is not an input of the model"), std::string::npos) << e;
  const std::string dims = ErrorOf(
      "model_warmup [ { name: \"w\" batch_size: 1 inputs { key: \"image\" value: { data_type: TYPE_FP32"
      " dims: [ 1, 1, 28, 28 ] zero_data: true } } } ]");
  EXPECT_NE(dims.find("dims [1,1,28,28] do not fit the input's dims [1,28,28]"), std::string::npos) << dims;
  const std::string type = ErrorOf(
      "model_warmup [ { name: \"w\" batch_size: 1 inputs { key: \"image\" value: { data_type: TYPE_INT8"
      " dims: [ 1, 28, 28 ] zero_data: true } } } ]");
  EXPECT_NE(type.find("data_type TYPE_INT8 but the input is TYPE_FP32"), std::string::npos) << type;
  const std::string batch = ErrorOf(
      "model_warmup [ { name: \"w\" batch_size: 9 inputs { key: \"image\" value: { data_type: TYPE_FP32"
      " dims: [ 1, 28, 28 ] zero_data: true } } } ]");
  EXPECT_NE(batch.find("batch_size 9 exceeds max_batch_size 8"), std::string::npos) << batch;
  EXPECT_EQ(ErrorOf("model_warmup [ { name: \"w\" batch_size: 2 inputs { key: \"image\" value: { data_type: TYPE_FP32"
                    " dims: [ 1, 28, 28 ] random_data: true } } } ]"),
            "(completed)");
}

// The shipped examples/model_repository/tiny_cnn/config.pbtxt parses and matches the model as is.
TEST_F(CompletionTest, ShippedExampleConfigMatchesTheModel) {
  std::ifstream in(std::string(INFERLOOP_SOURCE_DIR) + "/examples/model_repository/tiny_cnn/config.pbtxt");
  ASSERT_TRUE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = ParseModelConfig(text.str(), "tiny_cnn");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto r = CompleteConfigFromModel(*parsed, *session_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_batch_size(), 8);
  EXPECT_EQ(r->input_size(), 1);
  EXPECT_EQ(r->output_size(), 1);
  EXPECT_EQ(r->dynamic_batching().priority_levels(), 2u);
}

}  // namespace
}  // namespace inferloop::serve
