// Focused tests for the reduction and loss kernels: axes validation, opset-dependent axes and
// Softmax semantics, empty-set identities, TopK tie order, loss target validation.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
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
using testing::I32;


// One-node model whose inputs/outputs have unknown shape.

using testing::Make;

TEST(ReductionKernels, ReduceSumAxesAttributeAndInput) {
  // Opset 11: axes attribute.
  auto s11 = Make(OneNodeModel(11, "ReduceSum", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}}, [](auto& n) {
    IntsAttr(n, "axes", {-1});
    ModelBuilder::IntAttr(n, "keepdims", 0);
  }));
  ASSERT_TRUE(s11);
  auto r = s11->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y.data<float>()[0], 6.0f);
  EXPECT_EQ(y.data<float>()[1], 15.0f);

  // Opset 13: axes input; bad and repeated axes are rejected.
  auto s13 = Make(OneNodeModel(13, "ReduceSum", {{"x", DataType::kFloat}, {"axes", DataType::kInt64}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s13);
  r = s13->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"axes", I64({1}, {2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
  r = s13->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"axes", I64({2}, {1, -1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("repeated"), std::string::npos) << r.status().ToString();
  // Empty axes: reduce everything (noop_with_empty_axes = 0).
  r = s13->Run({{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"axes", I64({0}, {})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{1, 1}));
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[0], 21.0f);
}

TEST(ReductionKernels, EmptySetIdentities) {
  auto smin = Make(OneNodeModel(20, "ReduceMin", {{"x", DataType::kInt32}, {"axes", DataType::kInt64}}, {{"y", DataType::kInt32}}));
  ASSERT_TRUE(smin);
  auto r = smin->Run({{"x", I32({2, 0}, {})}, {"axes", I64({1}, {1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 1}));
  EXPECT_EQ(y.data<int32_t>()[0], std::numeric_limits<int32_t>::max());

  auto sprod = Make(OneNodeModel(18, "ReduceProd", {{"x", DataType::kFloat}, {"axes", DataType::kInt64}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(sprod);
  r = sprod->Run({{"x", F32({0, 3}, {})}, {"axes", I64({1}, {0})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[2], 1.0f);

  auto slse = Make(OneNodeModel(18, "ReduceLogSumExp", {{"x", DataType::kFloat}, {"axes", DataType::kInt64}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(slse);
  r = slse->Run({{"x", F32({0, 3}, {})}, {"axes", I64({1}, {0})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::isinf((*r)[0].second.tensor().data<float>()[0]));
}

TEST(ReductionKernels, SoftmaxOldOpsetCoercesTo2D) {
  // Opset 11, axis 1 on [2,2,2]: each row of 4 elements sums to one.
  auto s = Make(OneNodeModel(11, "Softmax", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({2, 2, 2}, {0, 0, 0, 0, 1, 1, 1, 1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const float* y = (*r)[0].second.tensor().data<float>();
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], 0.25f);
  // Opset 13 default axis -1: pairs sum to one.
  auto s13 = Make(OneNodeModel(13, "Softmax", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s13);
  r = s13->Run({{"x", F32({2, 2, 2}, {0, 0, 0, 0, 1, 1, 1, 1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ((*r)[0].second.tensor().data<float>()[i], 0.5f);
  // Axis out of range.
  r = s13->Run({{"x", F32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok());
  auto bad = Make(OneNodeModel(13, "Softmax", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}},
                        [](auto& n) { ModelBuilder::IntAttr(n, "axis", 3); }));
  ASSERT_TRUE(bad);
  r = bad->Run({{"x", F32({2}, {1, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ReductionKernels, TopKTiesAndBadK) {
  auto s = Make(OneNodeModel(11, "TopK", {{"x", DataType::kFloat}, {"k", DataType::kInt64}},
                      {{"v", DataType::kFloat}, {"i", DataType::kInt64}}));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({5}, {1, 3, 3, 2, 3})}, {"k", I64({1}, {2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& idx = (*r)[1].second.tensor();
  EXPECT_EQ(idx.data<int64_t>()[0], 1);
  EXPECT_EQ(idx.data<int64_t>()[1], 2);
  r = s->Run({{"x", F32({2}, {1, 2})}, {"k", I64({1}, {3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = s->Run({{"x", F32({2}, {1, 2})}, {"k", I64({1}, {-1})}});
  ASSERT_FALSE(r.ok());
}

TEST(ReductionKernels, ArgMaxSelectLastAndEmptyAxis) {
  auto s = Make(OneNodeModel(13, "ArgMax", {{"x", DataType::kFloat}}, {{"y", DataType::kInt64}},
                      [](auto& n) { ModelBuilder::IntAttr(n, "select_last_index", 1); }));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({4}, {1, 5, 5, 0})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<int64_t>()[0], 2);
  r = s->Run({{"x", F32({0, 2}, {})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ReductionKernels, CumSumExclusiveReverse) {
  auto s = Make(OneNodeModel(14, "CumSum", {{"x", DataType::kInt32}, {"axis", DataType::kInt64}}, {{"y", DataType::kInt32}},
                      [](auto& n) {
                        ModelBuilder::IntAttr(n, "exclusive", 1);
                        ModelBuilder::IntAttr(n, "reverse", 1);
                      }));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", I32({4}, {1, 2, 3, 4})}, {"axis", I64({}, {0})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const int32_t* y = (*r)[0].second.tensor().data<int32_t>();
  EXPECT_EQ(y[0], 9);
  EXPECT_EQ(y[1], 7);
  EXPECT_EQ(y[2], 4);
  EXPECT_EQ(y[3], 0);
  r = s->Run({{"x", I32({4}, {1, 2, 3, 4})}, {"axis", I64({}, {1})}});
  ASSERT_FALSE(r.ok());
}

TEST(LossKernels, TargetOutOfRangeAndIgnoreIndex) {
  auto s = Make(OneNodeModel(13, "NegativeLogLikelihoodLoss", {{"x", DataType::kFloat}, {"t", DataType::kInt64}},
                      {{"y", DataType::kFloat}}, [](auto& n) {
                        StrAttr(n, "reduction", "mean");
                        ModelBuilder::IntAttr(n, "ignore_index", -1);
                      }));
  ASSERT_TRUE(s);
  // Row 1 is ignored, so the mean is over row 0 only.
  auto r = s->Run({{"x", F32({2, 2}, {-1, -2, -3, -4})}, {"t", I64({2}, {1, -1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ((*r)[0].second.tensor().data<float>()[0], 2.0f);
  r = s->Run({{"x", F32({2, 2}, {-1, -2, -3, -4})}, {"t", I64({2}, {1, 2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
  r = s->Run({{"x", F32({2, 2}, {-1, -2, -3, -4})}, {"t", I64({3}, {1, 0, 0})}});
  ASSERT_FALSE(r.ok());

  const std::string bytes =
      OneNodeModel(13, "SoftmaxCrossEntropyLoss", {{"x", DataType::kFloat}, {"t", DataType::kInt64}}, {{"y", DataType::kFloat}},
            [](auto& n) { StrAttr(n, "reduction", "average"); });
  auto bad = Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace inferloop
