// Helpers for the optimizer tests: build a model, optimize a copy, run both through a Session
// (optimization off, via the ONNX writer) on the same random inputs and compare.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/onnx_loader.h"
#include "graph/onnx_writer.h"
#include "inferloop/session.h"
#include "optimizer/optimizer.h"
#include "unit/model_builder.h"

namespace inferloop::testing {

inline void FloatAttr(onnxpb::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::FLOAT);
  a->set_f(v);
}

inline Tensor RandomTensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(ShapeElementCount(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::FromVector(DataType::kFloat, shape, v);
}

inline Tensor FloatTensor(const Shape& shape, std::vector<float> v) { return Tensor::FromVector(DataType::kFloat, shape, v); }
inline Tensor Int64Tensor(const Shape& shape, std::vector<int64_t> v) { return Tensor::FromVector(DataType::kInt64, shape, v); }
inline Tensor ScalarF(float v) { return FloatTensor(Shape(), std::vector<float>{v}); }

inline Model LoadBuilt(const ModelBuilder& b) {
  std::string bytes = b.Bytes();
  auto m = LoadModelFromBytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : Model();
}

// Runs `m` as it is (written to ONNX, loaded with optimization off).
inline std::vector<Tensor> RunModel(const Model& m, const std::vector<NamedValue>& inputs) {
  auto bytes = SerializeModel(m);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  if (!bytes.ok()) return {};
  SessionOptions so;
  so.optimization_level = 0;
  auto s = Session::CreateFromBytes(bytes->data(), bytes->size(), so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  auto r = (*s)->Run(inputs);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<Tensor> out;
  if (r.ok())
    for (auto& [name, v] : *r) out.push_back(v.tensor());
  return out;
}

inline void ExpectAllClose(const Tensor& a, const Tensor& b, float atol = 1e-5f, float rtol = 1e-4f) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  if (a.dtype() == DataType::kString) {
    for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.strings()[i], b.strings()[i]);
    return;
  }
  if (a.dtype() != DataType::kFloat) {
    EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()));
    return;
  }
  int bad = 0;
  for (int64_t i = 0; i < a.size() && bad < 5; ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) {
      ADD_FAILURE() << "element " << i << ": " << x << " vs " << y;
      ++bad;
    }
  }
}

inline int CountOp(const Model& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.graph.nodes)
    if (node.op_type == op) ++n;
  return n;
}

inline const Node* FindOp(const Model& m, const std::string& op) {
  for (const auto& node : m.graph.nodes)
    if (node.op_type == op) return &node;
  return nullptr;
}

struct Optimized {
  Model model;
  OptimizeReport report;
};

// Optimizes a copy of `m` at `level`, checks both give the same outputs on `inputs`, returns
// the optimized model.
inline Optimized OptimizeAndCompare(const Model& m, const std::vector<NamedValue>& inputs, int level = 2,
                                    float atol = 1e-5f, float rtol = 1e-4f, int64_t channel_block = 0) {
  Optimized o{m, {}};
  OptimizeOptions opts;
  opts.level = level;
  opts.channel_block = channel_block;
  auto r = OptimizeModel(o.model, opts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) o.report = *r;
  auto want = RunModel(m, inputs);
  auto got = RunModel(o.model, inputs);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) ExpectAllClose(got[i], want[i], atol, rtol);
  return o;
}

}  // namespace inferloop::testing
