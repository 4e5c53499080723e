// Focused tests for the shape / data-movement kernels: index validation, memory-limit refusals
// and a few tricky semantics (negative steps, reflect padding with negative pads, Unique order).
#include <gtest/gtest.h>

#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "unit/compute/kernels/session_for_test.h"
#include "unit/compute/tensor_makers.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;
using testing::IntsAttr;
using testing::OneNodeModel;
using testing::StrAttr;

using testing::F32;
using testing::I64;


// Builds a model where inputs have unknown rank (no shape) so any shape can be fed.

using testing::Make;

TEST(ShapeKernels, GatherWrapsNegativeAndRejectsOutOfRange) {
  auto s = Make(OneNodeModel(13, "Gather", {{"x", DataType::kFloat}, {"i", DataType::kInt64}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({3}, {10, 20, 30})}, {"i", I64({2}, {-1, 0})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  EXPECT_EQ(y.data<float>()[0], 30.0f);
  EXPECT_EQ(y.data<float>()[1], 10.0f);
  r = s->Run({{"x", F32({3}, {10, 20, 30})}, {"i", I64({1}, {3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
  r = s->Run({{"x", F32({3}, {10, 20, 30})}, {"i", I64({1}, {-4})}});
  ASSERT_FALSE(r.ok());
}

TEST(ShapeKernels, GatherNDAndScatterNDRejectOutOfRange) {
  auto g = Make(OneNodeModel(13, "GatherND", {{"x", DataType::kFloat}, {"i", DataType::kInt64}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(g);
  auto r = g->Run({{"x", F32({2, 2}, {1, 2, 3, 4})}, {"i", I64({1, 2}, {1, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  auto sc = Make(OneNodeModel(16, "ScatterND", {{"x", DataType::kFloat}, {"i", DataType::kInt64}, {"u", DataType::kFloat}},
                       {{"y", DataType::kFloat}}, [](onnxpb::NodeProto& n) { StrAttr(n, "reduction", "add"); }));
  ASSERT_TRUE(sc);
  // Duplicate indices accumulate with reduction=add.
  r = sc->Run({{"x", F32({3}, {1, 1, 1})}, {"i", I64({2, 1}, {-1, 2})}, {"u", F32({2}, {5, 7})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[2], 13.0f);
  r = sc->Run({{"x", F32({3}, {1, 1, 1})}, {"i", I64({1, 1}, {3})}, {"u", F32({1}, {5})}});
  ASSERT_FALSE(r.ok());
}

TEST(ShapeKernels, ExpandTileConstantOfShapeRangeRefuseHugeOutputs) {
  const size_t limit = size_t{1} << 20;
  auto e = Make(OneNodeModel(13, "Expand", {{"x", DataType::kFloat}, {"s", DataType::kInt64}}, {{"y", DataType::kFloat}}), limit);
  ASSERT_TRUE(e);
  auto r = e->Run({{"x", F32({1}, {1})}, {"s", I64({2}, {int64_t{1} << 20, int64_t{1} << 20})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  r = e->Run({{"x", F32({1}, {1})}, {"s", I64({3}, {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();

  auto t = Make(OneNodeModel(13, "Tile", {{"x", DataType::kFloat}, {"s", DataType::kInt64}}, {{"y", DataType::kFloat}}), limit);
  r = t->Run({{"x", F32({2}, {1, 2})}, {"s", I64({1}, {int64_t{1} << 62})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();

  auto c = Make(OneNodeModel(20, "ConstantOfShape", {{"s", DataType::kInt64}}, {{"y", DataType::kFloat}}), limit);
  r = c->Run({{"s", I64({3}, {int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();

  auto g = Make(OneNodeModel(11, "Range", {{"a", DataType::kInt64}, {"b", DataType::kInt64}, {"c", DataType::kInt64}},
                      {{"y", DataType::kInt64}}),
                limit);
  r = g->Run({{"a", I64({}, {INT64_MIN})}, {"b", I64({}, {INT64_MAX})}, {"c", I64({}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  r = g->Run({{"a", I64({}, {0})}, {"b", I64({}, {5})}, {"c", I64({}, {0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ShapeKernels, SliceNegativeStepClampsAndRejectsZeroStep) {
  auto s = Make(OneNodeModel(13, "Slice",
                      {{"x", DataType::kFloat}, {"st", DataType::kInt64}, {"en", DataType::kInt64},
                       {"ax", DataType::kInt64}, {"sp", DataType::kInt64}},
                      {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  auto x = F32({5}, {0, 1, 2, 3, 4});
  auto r = s->Run({{"x", x}, {"st", I64({1}, {INT64_MAX})}, {"en", I64({1}, {INT64_MIN})}, {"ax", I64({1}, {0})},
                   {"sp", I64({1}, {-2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{3}));
  EXPECT_EQ(y.data<float>()[0], 4.0f);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  r = s->Run({{"x", x}, {"st", I64({1}, {0})}, {"en", I64({1}, {5})}, {"ax", I64({1}, {0})}, {"sp", I64({1}, {0})}});
  ASSERT_FALSE(r.ok());
  r = s->Run({{"x", x}, {"st", I64({1}, {0})}, {"en", I64({1}, {5})}, {"ax", I64({1}, {1})}, {"sp", I64({1}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("axis"), std::string::npos);
}

TEST(ShapeKernels, PadReflectWithNegativePad) {
  auto s = Make(OneNodeModel(18, "Pad", {{"x", DataType::kFloat}, {"p", DataType::kInt64}}, {{"y", DataType::kFloat}},
                      [](onnxpb::NodeProto& n) { StrAttr(n, "mode", "reflect"); }));
  ASSERT_TRUE(s);
  // numpy: np.pad([0,1,2,3], (0,2), 'reflect') = [0,1,2,3,2,1]; then drop 1 at the front.
  auto r = s->Run({{"x", F32({4}, {0, 1, 2, 3})}, {"p", I64({2}, {-1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{5}));
  std::vector<float> want{1, 2, 3, 2, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y.data<float>()[i], want[i]);
  r = s->Run({{"x", F32({4}, {0, 1, 2, 3})}, {"p", I64({2}, {-5, 0})}});
  ASSERT_FALSE(r.ok());
}

TEST(ShapeKernels, UniqueUnsortedKeepsFirstOccurrenceOrder) {
  auto s = Make(OneNodeModel(11, "Unique", {{"x", DataType::kInt64}},
                      {{"y", DataType::kInt64}, {"idx", DataType::kInt64}, {"inv", DataType::kInt64}, {"cnt", DataType::kInt64}},
                      [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "sorted", 0); }));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", I64({6}, {2, 1, 1, 3, 4, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto vec = [&](int i) {
    const Tensor& t = (*r)[i].second.tensor();
    return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.size());
  };
  EXPECT_EQ(vec(0), (std::vector<int64_t>{2, 1, 3, 4}));
  EXPECT_EQ(vec(1), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(vec(2), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(vec(3), (std::vector<int64_t>{1, 2, 2, 1}));
}

TEST(ShapeKernels, StringTransposeAndConcat) {
  auto s = Make(OneNodeModel(13, "Transpose", {{"x", DataType::kString}}, {{"y", DataType::kString}}));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", Tensor::FromStrings({2, 2}, {"a", "b", "c", "d"})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().strings()[1], "c");
  auto c = Make(OneNodeModel(13, "Concat", {{"a", DataType::kString}, {"b", DataType::kString}}, {{"y", DataType::kString}},
                      [](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "axis", -1); }));
  ASSERT_TRUE(c);
  r = c->Run({{"a", Tensor::FromStrings({1, 1}, {"x"})}, {"b", Tensor::FromStrings({1, 2}, {"y", "z"})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{1, 3}));
  EXPECT_EQ((*r)[0].second.tensor().strings()[2], "z");
}

TEST(ShapeKernels, ReshapeAndTransposeValidate) {
  auto s = Make(OneNodeModel(14, "Reshape", {{"x", DataType::kFloat}, {"s", DataType::kInt64}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"s", I64({2}, {-1, -1})}});
  ASSERT_FALSE(r.ok());
  r = s->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"s", I64({2}, {0, -1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{2, 3}));
  // A perm that is not a permutation is refused when the session is created.
  std::string bad = OneNodeModel(13, "Transpose", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}},
                          [](onnxpb::NodeProto& n) { IntsAttr(n, "perm", {0, 0}); });
  auto t = Session::CreateFromBytes(bad.data(), bad.size());
  EXPECT_FALSE(t.ok());
}

}  // namespace
}  // namespace inferloop
