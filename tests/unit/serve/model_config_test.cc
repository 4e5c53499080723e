// config.pbtxt parsing and checks (src/serve/model_config.h).
#include "serve/model_config.h"

#include <gtest/gtest.h>

#include <string>

namespace inferloop::serve {
namespace {

// A config.pbtxt as users write them for Triton's ONNX Runtime backend.
constexpr const char* kRealisticConfig = R"pb(
# ResNet-50 classifier, served with batching and two priority levels.
name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 16
version_policy: { latest: { num_versions: 2 } }
input [
  {
    name: "image"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
  }
]
output [
  {
    name: "probs"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape: { shape: [ 1, 1000 ] }
  },
  {
    name: "top1"
    data_type: TYPE_INT64
    dims: [ 1 ]
  }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy {
    timeout_action: REJECT
    default_timeout_microseconds: 5000
    allow_timeout_override: true
    max_queue_size: 64
  }
  priority_queue_policy {
    key: 1
    value: {
      timeout_action: DELAY
      default_timeout_microseconds: 20000
      max_queue_size: 16
    }
  }
}
instance_group [ { count: 2, kind: KIND_CPU } ]
parameters { key: "intra_op_threads" value: { string_value: "2" } }
model_warmup [
  {
    name: "zeros"
    batch_size: 4
    inputs { key: "image" value: { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] zero_data: true } }
  }
]
)pb";

std::string ErrorOf(const std::string& text, const std::string& model = "m") {
  auto r = ParseModelConfig(text, model);
  if (r.ok()) return "(parsed)";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  return r.status().message();
}

TEST(ModelConfig, ParsesRealisticTritonConfig) {
  auto r = ParseModelConfig(kRealisticConfig, "resnet50");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ModelConfig& c = *r;
  EXPECT_EQ(c.name(), "resnet50");
  EXPECT_EQ(c.platform(), "onnxruntime_onnx");
  EXPECT_EQ(c.max_batch_size(), 16);
  ASSERT_TRUE(c.version_policy().has_latest());
  EXPECT_EQ(c.version_policy().latest().num_versions(), 2u);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).name(), "image");
  EXPECT_EQ(c.input(0).data_type(), configpb::TYPE_FP32);
  ASSERT_EQ(c.input(0).dims_size(), 3);
  EXPECT_EQ(c.input(0).dims(2), 224);
  ASSERT_EQ(c.output_size(), 2);
  EXPECT_TRUE(c.output(0).has_reshape());
  EXPECT_EQ(c.output(0).reshape().shape_size(), 2);
  EXPECT_EQ(c.output(1).data_type(), configpb::TYPE_INT64);
  ASSERT_TRUE(c.has_dynamic_batching());
  const auto& db = c.dynamic_batching();
  ASSERT_EQ(db.preferred_batch_size_size(), 2);
  EXPECT_EQ(db.preferred_batch_size(1), 8);
  EXPECT_EQ(db.max_queue_delay_microseconds(), 100u);
  EXPECT_EQ(db.priority_levels(), 2u);
  EXPECT_EQ(db.default_priority_level(), 2u);
  EXPECT_EQ(db.default_queue_policy().timeout_action(), configpb::ModelQueuePolicy::REJECT);
  EXPECT_EQ(db.default_queue_policy().default_timeout_microseconds(), 5000u);
  EXPECT_TRUE(db.default_queue_policy().allow_timeout_override());
  EXPECT_EQ(db.default_queue_policy().max_queue_size(), 64u);
  ASSERT_EQ(db.priority_queue_policy().count(1), 1u);
  EXPECT_EQ(db.priority_queue_policy().at(1).timeout_action(), configpb::ModelQueuePolicy::DELAY);
  EXPECT_EQ(db.priority_queue_policy().at(1).max_queue_size(), 16u);
  ASSERT_EQ(c.instance_group_size(), 1);
  EXPECT_EQ(c.instance_group(0).count(), 2);
  EXPECT_EQ(c.instance_group(0).kind(), configpb::ModelInstanceGroup::KIND_CPU);
  ASSERT_EQ(c.parameters().count("intra_op_threads"), 1u);
  EXPECT_EQ(c.parameters().at("intra_op_threads").string_value(), "2");
  ASSERT_EQ(c.model_warmup_size(), 1);
  EXPECT_EQ(c.model_warmup(0).batch_size(), 4u);
  ASSERT_EQ(c.model_warmup(0).inputs().count("image"), 1u);
  EXPECT_TRUE(c.model_warmup(0).inputs().at("image").zero_data());
  EXPECT_TRUE(ValidateCompleteModelConfig(c).ok());
}

TEST(ModelConfig, EmptyTextIsAnEmptyConfigNamedAfterTheFolder) {
  auto r = ParseModelConfig("", "tiny_cnn");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name(), "tiny_cnn");
  EXPECT_EQ(r->max_batch_size(), 0);
  EXPECT_EQ(r->input_size(), 0);
}

TEST(ModelConfig, VersionPolicies) {
  auto all = ParseModelConfig("version_policy: { all: {} }", "m");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->version_policy().has_all());
  auto specific = ParseModelConfig("version_policy: { specific: { versions: [1, 3] } }", "m");
  ASSERT_TRUE(specific.ok()) << specific.status().ToString();
  EXPECT_EQ(specific->version_policy().specific().versions_size(), 2);
  EXPECT_NE(ErrorOf("version_policy: { specific: { } }").find("specific lists no versions"), std::string::npos);
  EXPECT_NE(ErrorOf("version_policy: { specific: { versions: [0] } }").find("version 0 is not >= 1"), std::string::npos);
}

TEST(ModelConfig, SyntaxErrorSaysLineAndColumn) {
  const std::string e = ErrorOf("name: \"m\"\nmax_batch_size: 4\ninput [ { name: \"x\" dims: [ 1, 2 }\n");
  EXPECT_NE(e.find("config.pbtxt:3:"), std::string::npos) << e;
}

TEST(ModelConfig, UnknownFieldIsAClearError) {
  const std::string e = ErrorOf("name: \"m\"\nmax_batch_size: 4\nsequence_batching { }\n");
  EXPECT_NE(e.find("config.pbtxt:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("ModelConfig\" has no field named \"sequence_batching\""), std::string::npos) << e;
  EXPECT_NE(e.find("unknown or unsupported field"), std::string::npos) << e;
  const std::string nested = ErrorOf("input [ { name: \"x\" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [1] } ]");
  EXPECT_NE(nested.find("format"), std::string::npos) << nested;
  EXPECT_NE(nested.find("1:"), std::string::npos) << nested;
}

TEST(ModelConfig, UnknownDataTypeIsAnError) {
  const std::string by_name = ErrorOf("input [ { name: \"x\" data_type: TYPE_FLOAT dims: [1] } ]");
  EXPECT_NE(by_name.find("TYPE_FLOAT"), std::string::npos) << by_name;
  EXPECT_NE(by_name.find("config.pbtxt:1:"), std::string::npos) << by_name;
  EXPECT_NE(by_name.find("TYPE_FP32"), std::string::npos) << by_name;  // the valid names are listed
  const std::string by_number = ErrorOf("input [ { name: \"x\" data_type: 99 dims: [1] } ]");
  EXPECT_NE(by_number.find("input 'x'"), std::string::npos) << by_number;
  EXPECT_NE(by_number.find("data_type"), std::string::npos) << by_number;
}

TEST(ModelConfig, NameMustMatchTheFolder) {
  const std::string e = ErrorOf("name: \"other\"", "resnet");
  EXPECT_NE(e.find("name 'other' does not match the model's folder 'resnet'"), std::string::npos) << e;
}

TEST(ModelConfig, NegativeDimsOtherThanMinusOne) {
  EXPECT_EQ(ErrorOf("input [ { name: \"x\" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]"), "(parsed)");
  const std::string e = ErrorOf("input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 3, -2 ] } ]");
  EXPECT_NE(e.find("input 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("-2"), std::string::npos) << e;
  const std::string out = ErrorOf("output [ { name: \"y\" data_type: TYPE_FP32 dims: [ -5 ] } ]");
  EXPECT_NE(out.find("output 'y'"), std::string::npos) << out;
  const std::string reshape =
      ErrorOf("input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 6 ] reshape: { shape: [ 2, 2 ] } } ]");
  EXPECT_NE(reshape.find("holds 4 elements but dims [6] hold 6"), std::string::npos) << reshape;
  const std::string huge = ErrorOf(
      "input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4000000000, 4000000000, 4000000000 ] } ]");
  EXPECT_NE(huge.find("more than 2^63 elements"), std::string::npos) << huge;
}

TEST(ModelConfig, NegativeMaxBatchSize) {
  const std::string e = ErrorOf("max_batch_size: -1");
  EXPECT_NE(e.find("max_batch_size is -1"), std::string::npos) << e;
}

TEST(ModelConfig, PreferredBatchSizeAboveMax) {
  const std::string e = ErrorOf("max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4, 16 ] }");
  EXPECT_NE(e.find("preferred_batch_size 16 exceeds max_batch_size 8"), std::string::npos) << e;
  EXPECT_NE(ErrorOf("max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 0 ] }").find("not >= 1"),
            std::string::npos);
}

TEST(ModelConfig, DuplicateNames) {
  const std::string in = ErrorOf(
      "input [ { name: \"x\" data_type: TYPE_FP32 dims: [1] }, { name: \"x\" data_type: TYPE_FP32 dims: [1] } ]");
  EXPECT_NE(in.find("input 'x' is listed twice"), std::string::npos) << in;
  const std::string out = ErrorOf(
      "output [ { name: \"y\" data_type: TYPE_FP32 dims: [1] }, { name: \"y\" data_type: TYPE_INT32 dims: [1] } ]");
  EXPECT_NE(out.find("output 'y' is listed twice"), std::string::npos) << out;
  EXPECT_NE(ErrorOf("input [ { data_type: TYPE_FP32 dims: [1] } ]").find("an input has no name"), std::string::npos);
}

TEST(ModelConfig, PriorityLevelsOutOfRange) {
  const std::string def = ErrorOf("max_batch_size: 4\ndynamic_batching { priority_levels: 2 default_priority_level: 3 }");
  EXPECT_NE(def.find("default_priority_level 3 is outside [1, 2]"), std::string::npos) << def;
  const std::string zero = ErrorOf("max_batch_size: 4\ndynamic_batching { priority_levels: 2 }");
  EXPECT_NE(zero.find("default_priority_level 0 is outside [1, 2]"), std::string::npos) << zero;
  const std::string key = ErrorOf(
      "max_batch_size: 4\ndynamic_batching { priority_levels: 2 default_priority_level: 1\n"
      "  priority_queue_policy { key: 5 value: { max_queue_size: 1 } } }");
  EXPECT_NE(key.find("priority_queue_policy for level 5 is outside [1, 2]"), std::string::npos) << key;
  const std::string no_levels = ErrorOf("max_batch_size: 4\ndynamic_batching { default_priority_level: 1 }");
  EXPECT_NE(no_levels.find("priority_levels is 0"), std::string::npos) << no_levels;
}

TEST(ModelConfig, InstanceGroupsAndPlatform) {
  EXPECT_NE(ErrorOf("instance_group [ { count: -1 } ]").find("count -1 is negative"), std::string::npos);
  EXPECT_NE(ErrorOf("instance_group [ { kind: KIND_GPU } ]").find("KIND_GPU is not supported"), std::string::npos);
  // Which platforms and backends are served is the backend registry's question
  // (tests/unit/backends/backend_registry_test.cc): the config parses.
  EXPECT_EQ(ErrorOf("platform: \"tensorrt_plan\""), "(parsed)");
  EXPECT_EQ(ErrorOf("backend: \"onnxruntime\""), "(parsed)");
}

TEST(ModelConfig, CompleteConfigChecks) {
  auto no_batch = ParseModelConfig("dynamic_batching { }\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [1] } ]", "m");
  ASSERT_TRUE(no_batch.ok()) << no_batch.status().ToString();
  Status st = ValidateCompleteModelConfig(*no_batch);
  EXPECT_NE(st.message().find("dynamic_batching needs max_batch_size > 0"), std::string::npos) << st.ToString();

  auto warm = ParseModelConfig(
      "max_batch_size: 2\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [1] } ]\n"
      "model_warmup [ { name: \"w\" batch_size: 1 inputs { key: \"nope\" value: { data_type: TYPE_FP32 dims: [1] zero_data: true } } } ]",
      "m");
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  st = ValidateCompleteModelConfig(*warm);
  EXPECT_NE(st.message().find("'nope' is not an input"), std::string::npos) << st.ToString();

  auto untyped = ParseModelConfig("input [ { name: \"x\" dims: [1] } ]", "m");
  ASSERT_TRUE(untyped.ok());
  EXPECT_NE(ValidateCompleteModelConfig(*untyped).message().find("input 'x' has no data_type"), std::string::npos);
}

TEST(ModelConfig, DataTypeNames) {
  EXPECT_EQ(ConfigDataTypeName(configpb::TYPE_FP32), "TYPE_FP32");
  EXPECT_EQ(ConfigDataTypeName(99), "TYPE_99");
  EXPECT_EQ(KServeDataTypeName(configpb::TYPE_STRING), "BYTES");
  EXPECT_EQ(KServeDataTypeName(configpb::TYPE_FP16), "FP16");
  EXPECT_EQ(ToConfigDataType(DataType::kFloat), configpb::TYPE_FP32);
  EXPECT_EQ(ToConfigDataType(DataType::kFloat8E4M3FN), configpb::TYPE_INVALID);
  for (int t = 1; t <= 14; ++t)
    EXPECT_EQ(ToConfigDataType(FromConfigDataType(static_cast<ConfigDataType>(t))), t) << t;
}

// Triton's response_cache block (field 24): off unless enabled; unknown fields and bad values
// inside it are errors that say where.
TEST(ModelConfig, ResponseCache) {
  auto off = ParseModelConfig("name: \"m\"", "m");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->has_response_cache());
  EXPECT_FALSE(off->response_cache().enable());
  auto on = ParseModelConfig("response_cache { enable: true }", "m");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->response_cache().enable());
  auto explicit_off = ParseModelConfig("response_cache: { enable: false }", "m");
  ASSERT_TRUE(explicit_off.ok()) << explicit_off.status().ToString();
  EXPECT_TRUE(explicit_off->has_response_cache());
  EXPECT_FALSE(explicit_off->response_cache().enable());
  const std::string unknown = ErrorOf("response_cache {\n  enable: true\n  size: 5\n}");
  EXPECT_NE(unknown.find("3:"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("size"), std::string::npos) << unknown;
  const std::string bad_value = ErrorOf("response_cache { enable: maybe }");
  EXPECT_NE(bad_value.find("1:"), std::string::npos) << bad_value;
  EXPECT_NE(bad_value.find("enable"), std::string::npos) << bad_value;
}

}  // namespace
}  // namespace inferloop::serve
