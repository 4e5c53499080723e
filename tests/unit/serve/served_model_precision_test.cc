// The per-model precision of config.pbtxt (parameters { key: "precision" ... }): it overrides the
// server's default, and a bad value fails that model's load with the reason.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_kernels.h"
#include "serve/model_config.h"
#include "serve/served_model_version.h"

namespace inferloop::serve {
namespace {

const std::string kModelDir = std::string(INFERLOOP_SOURCE_DIR) + "/examples/model_repository/tiny_cnn";

std::string TinyCnnConfig(const std::string& extra) {
  std::ifstream in(kModelDir + "/config.pbtxt");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str() + extra;
}

Result<std::shared_ptr<ServedModelVersion>> LoadWith(const std::string& extra, Precision server_default) {
  IL_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(TinyCnnConfig(extra), "tiny_cnn"));
  VersionLoadOptions options;
  options.session.intra_op_threads = 1;
  options.session.precision = server_default;
  return ServedModelVersion::Load("tiny_cnn", 1, kModelDir + "/1/model.onnx", kModelDir, config, options);
}

std::string Param(const std::string& value) {
  return "parameters { key: \"precision\" value: { string_value: \"" + value + "\" } }\n";
}

TEST(ServedModelPrecision, ServerDefaultApplies) {
  auto v = LoadWith("", Precision::kFp16);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)->precision(), Precision::kFp16);
  auto auto_v = LoadWith("", Precision::kAuto);
  ASSERT_TRUE(auto_v.ok()) << auto_v.status().ToString();
  EXPECT_EQ((*auto_v)->precision(), Precision::kFp32);  // no Q/DQ nodes
}

TEST(ServedModelPrecision, ConfigParameterOverridesTheServer) {
  auto v = LoadWith(Param("bf16"), Precision::kFp32);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)->precision(), dnnl_kernels::Bf16ComputeSupported() ? Precision::kBf16 : Precision::kFp16);
  auto f = LoadWith(Param("fp32"), Precision::kFp16);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->precision(), Precision::kFp32);
}

TEST(ServedModelPrecision, BadValueFailsTheLoadWithTheReason) {
  auto v = LoadWith(Param("fp8"), Precision::kAuto);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("config.pbtxt of 'tiny_cnn': parameter precision: unknown precision 'fp8'"),
            std::string::npos)
      << v.status().message();
  // int8 for a model without Q/DQ nodes: the reason points at the quantizer.
  auto i8 = LoadWith(Param("int8"), Precision::kAuto);
  ASSERT_FALSE(i8.ok());
  EXPECT_NE(i8.status().message().find("inferloop quantize"), std::string::npos) << i8.status().message();
}

}  // namespace
}  // namespace inferloop::serve
