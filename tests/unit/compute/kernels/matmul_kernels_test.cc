// Focused tests for the matmul kernels: shape errors, 1-D operand rules, Gemm C broadcasting,
// Einsum parsing (implicit output, diagonals, ellipsis) and per-row zero points.
#include <gtest/gtest.h>

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
using testing::U8;



using testing::Make;

std::unique_ptr<Session> MakeEinsum(const std::string& eq, int n_inputs) {
  std::vector<std::pair<std::string, DataType>> ins;
  for (int i = 0; i < n_inputs; ++i) ins.push_back({"x" + std::to_string(i), DataType::kFloat});
  return Make(OneNodeModel(12, "Einsum", ins, {{"y", DataType::kFloat}}, [&](auto& n) { StrAttr(n, "equation", eq); }));
}

TEST(MatmulKernels, MatMulShapes) {
  auto s = Make(OneNodeModel(13, "MatMul", {{"a", DataType::kFloat}, {"b", DataType::kFloat}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  // 1-D x 1-D: a scalar.
  auto r = s->Run({{"a", F32({3}, {1, 2, 3})}, {"b", F32({3}, {4, 5, 6})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), Shape{});
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[0], 32.0f);
  // Broadcast batch: [2,1,2] x [3,2,1] -> [3,2,1]... with batch dims [2] vs [3] -> error.
  r = s->Run({{"a", F32({2, 1, 2}, {1, 2, 3, 4})}, {"b", F32({3, 2, 1}, {1, 1, 1, 1, 1, 1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // Inner dimension mismatch.
  r = s->Run({{"a", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", F32({2, 2}, {1, 2, 3, 4})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inner dimensions"), std::string::npos) << r.status().ToString();
  // [1,2,2] x [2] -> [1,2]
  r = s->Run({{"a", F32({1, 2, 2}, {1, 2, 3, 4})}, {"b", F32({2}, {1, 1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{1, 2}));
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 7.0f);
}

TEST(MatmulKernels, GemmBroadcastsC) {
  auto s = Make(OneNodeModel(13, "Gemm", {{"a", DataType::kFloat}, {"b", DataType::kFloat}, {"c", DataType::kFloat}},
                      {{"y", DataType::kFloat}}, [](auto& n) { ModelBuilder::IntAttr(n, "transB", 1); }));
  ASSERT_TRUE(s);
  // a [1,2], b^T: b is [3,2] -> y [1,3]; c [3] broadcasts along rows.
  auto r = s->Run({{"a", F32({1, 2}, {1, 2})}, {"b", F32({3, 2}, {1, 0, 0, 1, 1, 1})}, {"c", F32({3}, {10, 20, 30})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const float* y = (*r)[0].second.tensor().data<float>();
  EXPECT_EQ(y[0], 11.0f);
  EXPECT_EQ(y[1], 22.0f);
  EXPECT_EQ(y[2], 33.0f);
  r = s->Run({{"a", F32({1, 2}, {1, 2})}, {"b", F32({3, 2}, {1, 0, 0, 1, 1, 1})}, {"c", F32({2}, {10, 20})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(MatmulKernels, EinsumEquations) {
  // Trace via a repeated label, implicit scalar output.
  auto s = MakeEinsum("ii", 1);
  ASSERT_TRUE(s);
  auto r = s->Run({{"x0", F32({2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), Shape{});
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[0], 5.0f);
  // Implicit output sorts labels: "ba,ac" -> "bc"... labels seen once: b, c.
  s = MakeEinsum("ba,ac", 2);
  ASSERT_TRUE(s);
  r = s->Run({{"x0", F32({1, 2}, {1, 2})}, {"x1", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{1, 3}));
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[2], 15.0f);
  // Ellipsis broadcasting: [2,1,2] and [3,2] over "...i,...i->..." -> [2,3].
  s = MakeEinsum("...i,...i->...", 2);
  ASSERT_TRUE(s);
  r = s->Run({{"x0", F32({2, 1, 2}, {1, 1, 2, 2})}, {"x1", F32({3, 2}, {1, 0, 0, 1, 1, 1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{2, 3}));
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[5], 4.0f);
  // Size mismatch for a label.
  s = MakeEinsum("ij,jk->ik", 2);
  ASSERT_TRUE(s);
  r = s->Run({{"x0", F32({2, 2}, {1, 2, 3, 4})}, {"x1", F32({3, 2}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // Malformed equations are rejected when the session is made.
  for (const char* eq : {"ij,jk->ik,", "i.j->ij", "ij->kk", "ij->q"}) {
    std::string bytes = OneNodeModel(12, "Einsum", {{"x0", DataType::kFloat}}, {{"y", DataType::kFloat}},
                              [&](auto& n) { StrAttr(n, "equation", eq); });
    EXPECT_FALSE(Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{}).ok()) << eq;
  }
}

TEST(MatmulKernels, MatMulIntegerPerRowZeroPoint) {
  auto s = Make(OneNodeModel(10, "MatMulInteger",
                      {{"a", DataType::kUInt8}, {"b", DataType::kUInt8}, {"az", DataType::kUInt8}, {"bz", DataType::kUInt8}},
                      {{"y", DataType::kInt32}}));
  ASSERT_TRUE(s);
  // a - az = [[1,1],[2,2]], b - bz = [[1,0],[0,1]] -> y = a - az.
  auto r = s->Run({{"a", U8({2, 2}, {11, 11, 22, 22})},
                   {"b", U8({2, 2}, {6, 5, 5, 6})},
                   {"az", U8({2}, {10, 20})},
                   {"bz", U8({}, {5})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const int32_t* y = (*r)[0].second.tensor().data<int32_t>();
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(y[1], 1);
  EXPECT_EQ(y[2], 2);
  EXPECT_EQ(y[3], 2);
  r = s->Run({{"a", U8({2, 2}, {11, 11, 22, 22})},
              {"b", U8({2, 2}, {6, 5, 5, 6})},
              {"az", U8({3}, {10, 20, 30})},
              {"bz", U8({}, {5})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop
