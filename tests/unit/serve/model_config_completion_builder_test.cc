// Completion rules on small models built in memory: fixed batch dimensions, mixed inputs,
// types the config cannot describe (src/serve/model_config_completion.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "serve/model_config_completion.h"
#include "unit/model_builder.h"

namespace inferloop::serve {
namespace {

using inferloop::testing::ModelBuilder;

std::unique_ptr<Session> Make(ModelBuilder& b) {
  const std::string bytes = b.Bytes();
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

Result<ModelConfig> Complete(const std::string& text, const Session& s) {
  auto parsed = ParseModelConfig(text, "m");
  if (!parsed.ok()) return parsed.status();
  return CompleteConfigFromModel(*parsed, s);
}

TEST(CompletionRules, FixedBatchDimensionMeansNoBatching) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {1, 4}).Output("y", DataType::kFloat, {1, 4});
  b.Node("Relu", {"x"}, {"y"});
  auto s = Make(b);
  ASSERT_TRUE(s);
  auto r = Complete("", *s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_batch_size(), 0);
  ASSERT_EQ(r->input(0).dims_size(), 2);
  EXPECT_EQ(r->input(0).dims(0), 1);
  EXPECT_EQ(r->input(0).dims(1), 4);

  auto batched = Complete("max_batch_size: 4", *s);
  ASSERT_FALSE(batched.ok());
  EXPECT_NE(batched.status().message().find("needs a variable first dimension but the model fixes it: [1,4]"),
            std::string::npos)
      << batched.status().ToString();

  auto dyn = Complete("dynamic_batching { }", *s);
  ASSERT_FALSE(dyn.ok());
  EXPECT_NE(dyn.status().message().find("dynamic_batching needs max_batch_size > 0"), std::string::npos)
      << dyn.status().ToString();
}

TEST(CompletionRules, OneFixedInputKeepsTheDefaultOff) {
  ModelBuilder b;
  b.Input("a", DataType::kFloat, {-1, 4}, {"n"}).Input("b", DataType::kFloat, {1, 4}).Output("c", DataType::kFloat, {-1, 4});
  b.Node("Add", {"a", "b"}, {"c"});
  auto s = Make(b);
  ASSERT_TRUE(s);
  auto r = Complete("", *s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_batch_size(), 0);
  ASSERT_EQ(r->input_size(), 2);
  EXPECT_EQ(r->input(0).dims(0), -1);  // symbolic -> -1
  EXPECT_EQ(r->input(1).dims(0), 1);
}

TEST(CompletionRules, Int64AndBoolTypes) {
  ModelBuilder b;
  b.Input("ids", DataType::kInt64, {-1, 3}, {"n"}).Output("flag", DataType::kBool, {-1, 3});
  ModelBuilder::IntAttr(b.Node("Cast", {"ids"}, {"flag"}), "to", 9);  // 9: bool
  auto s = Make(b);
  ASSERT_TRUE(s);
  auto r = Complete("", *s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_batch_size(), kDefaultMaxBatchSize);
  EXPECT_EQ(r->input(0).data_type(), configpb::TYPE_INT64);
  EXPECT_EQ(r->output(0).data_type(), configpb::TYPE_BOOL);
  EXPECT_EQ(KServeDataTypeName(r->output(0).data_type()), "BOOL");
}

}  // namespace
}  // namespace inferloop::serve
