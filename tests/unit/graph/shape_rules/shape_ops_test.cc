// Shape rules of the shape ops (src/graph/shape_rules/shape_ops.cc) on inputs nothing is known of.
#include "graph/shape_inference.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

// Size of a value made by an op of a domain without shape rules: X is unknown, so Size is an
// int64 scalar whose value is not known (was a null dereference).
TEST(ShapeOpsRules, SizeOfAnUnknownValueIsAnInt64ScalarWithoutValue) {
  ModelBuilder b(17);
  b.proto().add_opset_import()->set_domain("com.example");
  b.proto().mutable_opset_import(1)->set_version(1);
  b.Input("x", DataType::kFloat, {2, 3}).Output("n", DataType::kInt64, {});
  b.Node("Mystery", {"x"}, {"m"}, "com.example");
  b.Node("Size", {"m"}, {"n"});
  auto r = InferShapes(LoadBuilt(b));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->types.count("m"), 0u);
  const TypeInfo& n = r->types.at("n");
  EXPECT_EQ(n.elem_type, DataType::kInt64);
  ASSERT_TRUE(n.has_shape);
  EXPECT_TRUE(n.dims.empty());
}

}  // namespace
}  // namespace inferloop::testing
