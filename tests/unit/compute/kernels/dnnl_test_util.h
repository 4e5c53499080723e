// Helpers of the oneDNN kernel tests (dnnl_*_test.cc): one-node models whose inputs may be
// initializers, run in float32 (the oneDNN path) and in float64 (the scalar reference path).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_kernels.h"
#include "compute/tensor_cast.h"
#include "inferloop/session.h"
#include "unit/model_builder.h"

namespace inferloop::dnnl_test {

using testing::IntsAttr;
using testing::ModelBuilder;
using testing::StrAttr;

inline std::vector<double> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(d(g));  // representable in float32 exactly
  return v;
}

inline int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A tensor of `shape` from double values, in dtype `t` (float or double).
inline Tensor MakeTensor(DataType t, const Shape& shape, const std::vector<double>& v) {
  Tensor d = Tensor::FromVector<double>(DataType::kDouble, shape, v);
  if (t == DataType::kDouble) return d;
  auto c = CastTensor(d, t);
  EXPECT_TRUE(c.ok());
  return c.ok() ? std::move(c).value() : Tensor();
}

inline std::vector<double> ToDoubles(const Tensor& t) {
  auto c = CastTensor(t, DataType::kDouble);
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return {};
  return std::vector<double>(c->data<double>(), c->data<double>() + c->size());
}

struct Operand {
  std::string name;          // "" = omitted optional input
  Shape shape;
  std::vector<double> values;
  bool constant = false;     // an initializer instead of a graph input
};

struct OneNode {
  std::string op;
  std::string domain;  // "" or "com.inferloop"
  std::vector<Operand> inputs;
  std::function<void(onnxpb::NodeProto&)> attrs;
  int64_t opset = 17;
  int outputs = 1;
};

// Runs the node with every operand in dtype `t`; returns output 0 (or the error status).
inline Result<Tensor> RunNode(const OneNode& n, DataType t, int threads = 1) {
  ModelBuilder b(n.opset);
  if (!n.domain.empty()) {
    auto* op = b.proto().add_opset_import();
    op->set_domain(n.domain);
    op->set_version(1);
  }
  std::vector<std::string> in_names;
  std::vector<NamedValue> feeds;
  for (const Operand& o : n.inputs) {
    in_names.push_back(o.name);
    if (o.name.empty()) continue;
    Tensor v = MakeTensor(t, o.shape, o.values);
    if (o.constant) {
      b.Initializer(o.name, v);
    } else {
      auto* vi = b.proto().mutable_graph()->add_input();
      vi->set_name(o.name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
      feeds.emplace_back(o.name, Value(v));
    }
  }
  std::vector<std::string> out_names;
  for (int i = 0; i < n.outputs; ++i) {
    out_names.push_back("y" + std::to_string(i));
    auto* vi = b.proto().mutable_graph()->add_output();
    vi->set_name(out_names.back());
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(i == 0 ? t : DataType::kInt64));
  }
  auto& node = b.Node(n.op, in_names, out_names, n.domain);
  if (n.attrs) n.attrs(node);
  SessionOptions so;
  so.optimization_level = 0;
  so.intra_op_threads = threads;
  const std::string bytes = b.Bytes();
  IL_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::CreateFromBytes(bytes.data(), bytes.size(), so));
  IL_ASSIGN_OR_RETURN(std::vector<NamedValue> out, s->Run(feeds));
  return out[0].second.tensor();
}

// Output of `n` in float32 matches the float64 reference `want` (shape and values): an error
// bound scaled by the magnitude of the terms summed (`scale`, e.g. the reduction length).
inline void ExpectClose(const Tensor& got, const Shape& want_shape, const std::vector<double>& want, double tol,
                        const std::string& what) {
  ASSERT_EQ(got.dtype(), DataType::kFloat) << what;
  ASSERT_EQ(got.shape(), want_shape) << what;
  const std::vector<double> g = ToDoubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], want[i], tol * (1.0 + std::fabs(want[i]))) << what << " at " << i;
}

// Runs `n` in float64 (the scalar reference) and in float32 at 1 and 2 threads; the float32
// results must be within `tol` of the reference and, when `expect_dnnl`, run on oneDNN.
inline void CheckAgainstDouble(const OneNode& n, const std::string& what, double tol = 1e-4, bool expect_dnnl = true) {
  auto ref = RunNode(n, DataType::kDouble);
  ASSERT_TRUE(ref.ok()) << what << ": " << ref.status().ToString();
  for (int threads : {1, 2}) {
    const int64_t before = dnnl_kernels::PrimitiveExecutions();
    auto got = RunNode(n, DataType::kFloat, threads);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
    if (expect_dnnl) {
      EXPECT_GT(dnnl_kernels::PrimitiveExecutions(), before) << what << " did not run on oneDNN";
    }
    ExpectClose(*got, ref->shape(), ToDoubles(*ref), tol, what + " threads=" + std::to_string(threads));
  }
}

// Reference activations (double), as docs/FUSED_OPS.md defines them.
inline double RefActivation(const std::string& name, const std::vector<float>& p, double x) {
  if (name.empty()) return x;
  if (name == "Relu") return x > 0 ? x : 0;
  if (name == "LeakyRelu") return x >= 0 ? x : p[0] * x;
  if (name == "Clip") return std::min(std::max(x, static_cast<double>(p[0])), static_cast<double>(p[1]));
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "HardSigmoid") return std::max(0.0, std::min(1.0, p[0] * x + p[1]));
  if (name == "HardSwish") return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
  if (name == "Elu") return x >= 0 ? x : p[0] * (std::exp(x) - 1);
  if (name == "Gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (name == "GeluTanh") return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  ADD_FAILURE() << "unknown activation " << name;
  return x;
}

struct ActCase {
  std::string name;
  std::vector<float> params;
};

inline std::vector<ActCase> AllActivations() {
  return {{"", {}},           {"Relu", {}},       {"LeakyRelu", {0.1f}}, {"Clip", {-0.5f, 0.75f}},
          {"Sigmoid", {}},    {"Tanh", {}},       {"HardSigmoid", {0.3f, 0.4f}}, {"HardSwish", {}},
          {"Elu", {0.8f}},    {"Gelu", {}},       {"GeluTanh", {}}};
}

inline void SetActivation(onnxpb::NodeProto& n, const ActCase& a) {
  if (a.name.empty()) return;
  StrAttr(n, "activation", a.name);
  if (!a.params.empty()) {
    auto* at = n.add_attribute();
    at->set_name("activation_params");
    at->set_type(onnxpb::AttributeProto::FLOATS);
    for (float f : a.params) at->add_floats(f);
  }
}

}  // namespace inferloop::dnnl_test
