// Small models and inputs shared by the runtime tests (session_test.cc, memory_plan_test.cc, session_*_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "unit/model_builder.h"

namespace inferloop::testing {

inline Tensor RandomFloats(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::Create(DataType::kFloat, shape).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// A small CNN with a residual: x[batch,3,8,8] -> Conv(pad 1) -> Relu -> Conv(pad 1) -> Add(residual)
// -> Relu -> MaxPool 2x2 -> Reshape [batch,64] -> Gemm -> y[batch,10].
inline std::string SmallCnnModel() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {-1, 3, 8, 8}, {"batch"}).Output("y", DataType::kFloat, {-1, 10});
  b.Initializer("w1", RandomFloats({4, 3, 3, 3}, 1, -0.5f, 0.5f));
  b.Initializer("b1", RandomFloats({4}, 2));
  b.Initializer("w2", RandomFloats({4, 4, 3, 3}, 3, -0.5f, 0.5f));
  b.Initializer("b2", RandomFloats({4}, 4));
  b.Initializer("wg", RandomFloats({10, 64}, 5, -0.2f, 0.2f));
  b.Initializer("bg", RandomFloats({10}, 6));
  b.Initializer("shape", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {-1, 64}));
  auto& c1 = b.Node("Conv", {"x", "w1", "b1"}, {"c1"});
  IntsAttr(c1, "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"});
  auto& c2 = b.Node("Conv", {"r1", "w2", "b2"}, {"c2"});
  IntsAttr(c2, "pads", {1, 1, 1, 1});
  b.Node("Add", {"c2", "r1"}, {"a"});
  b.Node("Relu", {"a"}, {"r2"});
  auto& pool = b.Node("MaxPool", {"r2"}, {"p"});
  IntsAttr(pool, "kernel_shape", {2, 2});
  IntsAttr(pool, "strides", {2, 2});
  b.Node("Reshape", {"p", "shape"}, {"f"});
  auto& gemm = b.Node("Gemm", {"f", "wg", "bg"}, {"y"});
  ModelBuilder::IntAttr(gemm, "transB", 1);
  return b.Bytes();
}

// A chain of `n` Adds of a constant: x[rows,cols] -> Add -> ... -> y. Tiny kernels, so a run
// costs mostly executor overhead.
inline std::string AddChainModel(int n, int64_t rows = 1, int64_t cols = 8) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {rows, cols}).Output("y", DataType::kFloat, {rows, cols});
  b.Initializer("one", Tensor::FromVector<float>(DataType::kFloat, {1}, {1.f}));
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = i + 1 == n ? "y" : "t" + std::to_string(i);
    b.Node("Add", {prev, "one"}, {out});
    prev = out;
  }
  return b.Bytes();
}

// A token-wise MLP on [batch, seq, d] with dynamic batch and sequence:
// MatMul -> Add -> Relu -> MatMul -> Add(residual) -> Softmax(last axis).
inline std::string SeqMlpModel(int64_t d = 16) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {-1, -1, d}, {"batch", "seq"}).Output("y", DataType::kFloat, {-1, -1, d});
  b.Initializer("w1", RandomFloats({d, 2 * d}, 11, -0.3f, 0.3f));
  b.Initializer("b1", RandomFloats({2 * d}, 12));
  b.Initializer("w2", RandomFloats({2 * d, d}, 13, -0.3f, 0.3f));
  b.Node("MatMul", {"x", "w1"}, {"h"});
  b.Node("Add", {"h", "b1"}, {"hb"});
  b.Node("Relu", {"hb"}, {"hr"});
  b.Node("MatMul", {"hr", "w2"}, {"o"});
  b.Node("Add", {"o", "x"}, {"res"});
  auto& sm = b.Node("Softmax", {"res"}, {"y"});
  ModelBuilder::IntAttr(sm, "axis", -1);
  return b.Bytes();
}

inline std::unique_ptr<Session> MakeSession(const std::string& bytes, const SessionOptions& opts = {}) {
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), opts);
  if (!s.ok()) return nullptr;
  return std::move(s).value();
}

inline float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != DataType::kFloat || b.dtype() != DataType::kFloat) return 1e30f;
  float m = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    float d = a.data<float>()[i] - b.data<float>()[i];
    m = std::max(m, d < 0 ? -d : d);
  }
  return m;
}

}  // namespace inferloop::testing
