// Weights that only packing kernels read are passed without data (the kernels keep their own
// copy), and results stay the same: across shapes that pack into other layouts, and in the
// scalar fallback, which gets the plain weights rebuilt from the packed copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "graph/onnx_loader.h"
#include "runtime/plan.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

Tensor Random(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(ShapeElementCount(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::FromVector(DataType::kFloat, shape, v);
}

// x[?, 16] -> MatMul(B) -> y;  v[1,16,6,6] -> Conv(W) -> c;  z = Add(K, K2) where K is also
// read by Relu (no packing kernel), so K stays.
Model BuildModel() {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {-1, 16}).Input("v", DataType::kFloat, {1, 16, 6, 6});
  b.Output("y", DataType::kFloat, {}).Output("c", DataType::kFloat, {}).Output("r", DataType::kFloat, {});
  b.Output("y2", DataType::kFloat, {});
  b.Initializer("B", Random({16, 24}, 1));
  b.Initializer("W", Random({16, 16, 3, 3}, 2));
  b.Initializer("K", Random({16, 24}, 3));
  b.Node("MatMul", {"x", "B"}, {"y"});
  b.Node("MatMul", {"x", "K"}, {"y2"});
  b.Node("Relu", {"K"}, {"r"});
  testing::IntsAttr(b.Node("Conv", {"v", "W"}, {"c"}), "pads", {1, 1, 1, 1});
  const std::string bytes = b.Bytes();
  auto m = LoadModelFromBytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : Model();
}

float MaxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float d = 0;
  for (int64_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return d;
}

TEST(RtReleasedConstants, PackedWeightsAreDroppedAndResultsStayTheSame) {
  Model kept_model = BuildModel(), released_model = BuildModel();
  PlanOptions keep;
  keep.release_kept_constants = false;
  auto kept = ExecutionPlan::Compile(kept_model.graph, kept_model.opsets, keep);
  auto released = ExecutionPlan::Compile(released_model.graph, released_model.opsets, PlanOptions{});
  ASSERT_TRUE(kept.ok() && released.ok());
  EXPECT_TRUE((*kept)->released_constants().empty());
  std::vector<std::string> names = (*released)->released_constants();
  std::sort(names.begin(), names.end());
  if (std::getenv("INFERLOOP_DISABLE_DNNL") != nullptr && std::string(std::getenv("INFERLOOP_DISABLE_DNNL")) != "0") {
    EXPECT_TRUE(names.empty());  // the scalar kernels read the weights themselves
    return;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"B", "W"}));  // K has a reader that is no packing kernel

  // Row counts 3, 64, 1 (other packed layouts may be picked per shape), then 0 rows: the
  // scalar fallback, handed the plain B rebuilt from the packed copy (compute/kernels/dnnl_common_test
  // checks the rebuilt values).
  const Tensor v = Random({1, 16, 6, 6}, 9);
  for (int64_t rows : {3, 64, 1, 0}) {
    const Tensor x = Random({rows, 16}, 10 + static_cast<uint32_t>(rows));
    auto want = (*kept)->Execute({Value(x), Value(v)}, nullptr);
    auto got = (*released)->Execute({Value(x), Value(v)}, nullptr);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_TRUE(got.ok()) << "rows " << rows << ": " << got.status().ToString();
    ASSERT_EQ(want->size(), got->size());
    for (size_t k = 0; k < want->size(); ++k)
      EXPECT_LE(MaxDiff((*want)[k].tensor(), (*got)[k].tensor()), 1e-5f) << "rows " << rows << " output " << k;
  }
}

}  // namespace
}  // namespace inferloop
