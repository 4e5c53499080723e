// The float32 fast paths of the ONNX kernels (elementwise, Softmax, LayerNormalization,
// BatchNormalization, ReduceSum/Mean, Transpose, Concat, Gather) run through a Session on
// every instruction set this CPU has, with two threads, against plain reference loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compute/simd/cpu_isa.h"
#include "unit/compute/simd/isa_param_test.h"
#include "inferloop/session.h"
#include "unit/compute/tensor_makers.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using simd::Isa;
using testing::ModelBuilder;

std::vector<float> Randn(int64_t n, uint32_t seed, float scale = 2.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

using testing::F32;

void FloatAttr(onnxpb::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::FLOAT);
  a->set_f(v);
}

class SimdKernelsTest : public simd::IsaParamTest {
 protected:
  // Runs `bytes` (no graph optimization, two threads) and returns output `out_index`.
  static Tensor Run(const std::string& bytes, const std::vector<NamedValue>& inputs, int out_index = 0) {
    SessionOptions o;
    o.optimization_level = 0;
    o.intra_op_threads = 2;
    auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return Tensor();
    auto r = (*s)->Run(inputs);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return Tensor();
    return (*r)[out_index].second.tensor();
  }
  static Status RunStatus(const std::string& bytes, const std::vector<NamedValue>& inputs) {
    auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{});
    if (!s.ok()) return s.status();
    return (*s)->Run(inputs).status();
  }
};

void ExpectClose(const Tensor& got, const Shape& shape, const std::vector<float>& want, double rtol, double atol) {
  ASSERT_EQ(got.dtype(), DataType::kFloat);
  ASSERT_EQ(got.shape(), shape);
  for (int64_t i = 0; i < got.size(); ++i) {
    const float g = got.data<float>()[i];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i;
      continue;
    }
    ASSERT_NEAR(g, want[i], atol + rtol * std::fabs(want[i])) << "element " << i;
  }
}

// Flat index of `a` (shape as) for output index i of shape ys under numpy broadcasting.
int64_t BroadcastIndex(int64_t i, const Shape& as, const Shape& ys) {
  int64_t ia = 0, stride = 1;
  for (int d = static_cast<int>(ys.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % ys[d];
    i /= ys[d];
    const int da = d - static_cast<int>(ys.size() - as.size());
    if (da < 0) continue;
    if (as[da] != 1) ia += idx * stride;
    stride *= as[da];
  }
  return ia;
}

TEST_P(SimdKernelsTest, ArithmeticBroadcastsLikeNumpy) {
  struct Case {
    Shape a, b, y;
  };
  const Case cases[] = {{{2, 16, 9, 9}, {16, 1, 1}, {2, 16, 9, 9}},
                        {{4, 10, 48}, {48}, {4, 10, 48}},
                        {{48}, {4, 10, 48}, {4, 10, 48}},
                        {{3, 70}, {}, {3, 70}},
                        {{}, {3, 70}, {3, 70}},
                        {{5, 1, 7}, {1, 6, 1}, {5, 6, 7}},
                        {{300, 300}, {300, 300}, {300, 300}}};
  const char* ops[] = {"Add", "Sub", "Mul", "Div"};
  for (const Case& c : cases) {
    const std::vector<float> a = Randn(Count(c.a), 1), b = Randn(Count(c.b), 2);
    for (int k = 0; k < 4; ++k) {
      const std::string m =
          testing::OneNodeModel(14, ops[k], {{"a", DataType::kFloat}, {"b", DataType::kFloat}}, {{"y", DataType::kFloat}});
      const Tensor y = Run(m, {{"a", F32(c.a, a)}, {"b", F32(c.b, b)}});
      std::vector<float> want(Count(c.y));
      for (int64_t i = 0; i < Count(c.y); ++i) {
        const float x = a[BroadcastIndex(i, c.a, c.y)], z = b[BroadcastIndex(i, c.b, c.y)];
        want[i] = k == 0 ? x + z : k == 1 ? x - z : k == 2 ? x * z : x / z;
      }
      ExpectClose(y, c.y, want, 0, 0);
    }
  }
}

TEST_P(SimdKernelsTest, UnaryOpsMatchTheirFormulas) {
  struct Case {
    const char* op;
    std::function<double(double)> ref;
    std::function<void(onnxpb::NodeProto&)> attrs;
    double rtol;
  };
  const Case cases[] = {
      {"Relu", [](double x) { return x < 0 ? 0 : x; }, nullptr, 0},
      {"LeakyRelu", [](double x) { return x < 0 ? 0.2f * static_cast<float>(x) : x; },
       [](onnxpb::NodeProto& n) { FloatAttr(n, "alpha", 0.2f); }, 0},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, nullptr, 3e-7},
      {"Tanh", [](double x) { return std::tanh(x); }, nullptr, 3e-7},
      {"Exp", [](double x) { return std::exp(x); }, nullptr, 3e-7},
      {"Log", [](double x) { return std::log(x); }, nullptr, 3e-7},
      {"Erf", [](double x) { return std::erf(x); }, nullptr, 3e-7},
      {"Sqrt", [](double x) { return std::sqrt(x); }, nullptr, 1e-7},
      {"Reciprocal", [](double x) { return 1 / x; }, nullptr, 1e-7},
      {"Neg", [](double x) { return -x; }, nullptr, 0},
      {"Abs", [](double x) { return std::fabs(x); }, nullptr, 0},
      {"HardSigmoid", [](double x) { return std::min(1.0, std::max(0.0, 0.25 * x + 0.4)); },
       [](onnxpb::NodeProto& n) {
         FloatAttr(n, "alpha", 0.25f);
         FloatAttr(n, "beta", 0.4f);
       },
       3e-7},
      {"HardSwish", [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); }, nullptr, 3e-7},
  };
  const Shape shape = {3, 1001};
  std::vector<float> x = Randn(Count(shape), 5, 3.f);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const std::string m = testing::OneNodeModel(14, c.op, {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}}, c.attrs);
    const Tensor y = Run(m, {{"x", F32(shape, x)}});
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::isnan(x[i]) ? x[i] : static_cast<float>(c.ref(x[i]));  // NaN propagates
    ExpectClose(y, shape, want, c.rtol, 1e-7 * (c.rtol > 0));
  }
}

TEST_P(SimdKernelsTest, ClipWithEitherOrBothBounds) {
  const Shape shape = {2, 333};
  const std::vector<float> x = Randn(Count(shape), 6, 5.f);
  for (int which = 0; which < 3; ++which) {
    ModelBuilder b(13);
    b.Input("x", DataType::kFloat, {2, 333}).Output("y", DataType::kFloat, {2, 333});
    const float lo = -1.f, hi = 6.f;
    if (which != 1) b.Initializer("lo", Tensor::FromVector<float>(DataType::kFloat, {}, {lo}));
    if (which != 0) b.Initializer("hi", Tensor::FromVector<float>(DataType::kFloat, {}, {hi}));
    b.Node("Clip", {"x", which != 1 ? "lo" : "", which != 0 ? "hi" : ""}, {"y"});
    const Tensor y = Run(b.Bytes(), {{"x", F32(shape, x)}});
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      float v = x[i];
      if (which != 1) v = std::max(v, lo);
      if (which != 0) v = std::min(v, hi);
      want[i] = v;
    }
    ExpectClose(y, shape, want, 0, 0);
  }
}

// Softmax reference over [outer, n, inner] in double.
std::vector<float> RefSoftmax(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t r) { return (o * n + r) * inner + i; };
      double mx = -INFINITY, s = 0;
      for (int64_t r = 0; r < n; ++r) mx = std::max<double>(mx, x[at(r)]);
      for (int64_t r = 0; r < n; ++r) s += std::exp(x[at(r)] - mx);
      for (int64_t r = 0; r < n; ++r)
        y[at(r)] = static_cast<float>(log ? x[at(r)] - mx - std::log(s) : std::exp(x[at(r)] - mx) / s);
    }
  return y;
}

TEST_P(SimdKernelsTest, SoftmaxKeepsEachOpsetsAxisSemantics) {
  const Shape shape = {3, 5, 40};
  const std::vector<float> x = Randn(Count(shape), 7, 4.f);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    const bool log = std::string(op) == "LogSoftmax";
    for (int64_t axis : {1, -1, 0}) {
      for (int64_t opset : {11, 13}) {
        SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis) + " opset " + std::to_string(opset));
        const std::string m = testing::OneNodeModel(opset, op, {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}},
                                                    [&](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "axis", axis); });
        const Tensor y = Run(m, {{"x", F32(shape, x)}});
        const int64_t a = axis < 0 ? axis + 3 : axis;
        int64_t outer = 1, n = shape[a], inner = 1;
        for (int d = 0; d < a; ++d) outer *= shape[d];
        for (int d = a + 1; d < 3; ++d) inner *= shape[d];
        if (opset < 13) {  // coerced to 2-D: [outer, everything from axis on]
          n *= inner;
          inner = 1;
        }
        ExpectClose(y, shape, RefSoftmax(x, outer, n, inner, log), 2e-6, log ? 5e-7 : 1e-7);
      }
    }
  }
}

TEST_P(SimdKernelsTest, LayerNormalizationWithStatistics) {
  const Shape shape = {4, 6, 50};
  const std::vector<float> x = Randn(Count(shape), 8, 3.f);
  for (int64_t axis : {-1, 1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const int64_t outer = a == 2 ? 24 : 4, inner = Count(shape) / outer;
    const Shape pshape(shape.begin() + a, shape.end());
    const std::vector<float> scale = Randn(inner, 9), bias = Randn(inner, 10);
    const std::string m = testing::OneNodeModel(
        17, "LayerNormalization", {{"x", DataType::kFloat}, {"s", DataType::kFloat}, {"b", DataType::kFloat}},
        {{"y", DataType::kFloat}, {"mean", DataType::kFloat}, {"inv", DataType::kFloat}},
        [&](onnxpb::NodeProto& n) {
          ModelBuilder::IntAttr(n, "axis", axis);
          FloatAttr(n, "epsilon", 1e-3f);
        });
    std::vector<float> want(x.size()), want_mean(outer), want_inv(outer);
    for (int64_t o = 0; o < outer; ++o) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += x[o * inner + j];
      mean /= inner;
      for (int64_t j = 0; j < inner; ++j) var += (x[o * inner + j] - mean) * (x[o * inner + j] - mean);
      const double inv = 1 / std::sqrt(var / inner + 1e-3);
      for (int64_t j = 0; j < inner; ++j)
        want[o * inner + j] = static_cast<float>((x[o * inner + j] - mean) * inv * scale[j] + bias[j]);
      want_mean[o] = static_cast<float>(mean);
      want_inv[o] = static_cast<float>(inv);
    }
    std::vector<NamedValue> in = {{"x", F32(shape, x)}, {"s", F32(pshape, scale)}, {"b", F32(pshape, bias)}};
    ExpectClose(Run(m, in, 0), shape, want, 1e-5, 1e-5);
    Shape stat_shape(shape.begin(), shape.begin() + a);
    stat_shape.resize(3, 1);
    ExpectClose(Run(m, in, 1), stat_shape, want_mean, 1e-6, 1e-6);
    ExpectClose(Run(m, in, 2), stat_shape, want_inv, 1e-6, 0);
  }
}

TEST_P(SimdKernelsTest, BatchNormalizationWithConstantOrFedParameters) {
  const Shape shape = {2, 5, 7, 9};
  const std::vector<float> x = Randn(Count(shape), 11, 3.f);
  std::vector<float> scale = Randn(5, 12), bias = Randn(5, 13), mean = Randn(5, 14), var = Randn(5, 15);
  for (float& v : var) v = std::fabs(v) + 0.1f;
  std::vector<float> want(x.size());
  for (int64_t i = 0; i < Count(shape); ++i) {
    const int64_t c = (i / 63) % 5;
    want[i] = static_cast<float>((x[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * scale[c] + bias[c]);
  }
  const char* names[] = {"s", "b", "m", "v"};
  const std::vector<float>* vals[] = {&scale, &bias, &mean, &var};
  for (bool constant : {true, false}) {
    ModelBuilder b(15);
    b.Input("x", DataType::kFloat, {2, 5, 7, 9}).Output("y", DataType::kFloat, {2, 5, 7, 9});
    std::vector<NamedValue> in = {{"x", F32(shape, x)}};
    for (int k = 0; k < 4; ++k) {
      if (constant) b.Initializer(names[k], F32({5}, *vals[k]));
      else b.Input(names[k], DataType::kFloat, {5}), in.push_back({names[k], F32({5}, *vals[k])});
    }
    b.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
    ExpectClose(Run(b.Bytes(), in), shape, want, 1e-5, 1e-5);
  }
}

TEST_P(SimdKernelsTest, ReduceSumAndMeanOverTrailingAxes) {
  const Shape shape = {3, 4, 130};
  const std::vector<float> x = Randn(Count(shape), 16);
  for (const char* op : {"ReduceSum", "ReduceMean"}) {
    const bool mean = std::string(op) == "ReduceMean";
    for (auto axes : {std::vector<int64_t>{-1}, std::vector<int64_t>{1, 2}, std::vector<int64_t>{0, 1, 2}}) {
      for (int64_t keep : {0, 1}) {
        ModelBuilder b(18);
        b.Input("x", DataType::kFloat, {3, 4, 130}).Output("y", DataType::kFloat, {});
        b.Initializer("axes", Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(axes.size())}, axes));
        ModelBuilder::IntAttr(b.Node(op, {"x", "axes"}, {"y"}), "keepdims", keep);
        const int64_t first = axes[0] < 0 ? axes[0] + 3 : axes[0];
        int64_t rows = 1, n = 1;
        Shape out;
        for (int d = 0; d < 3; ++d) {
          (d < first ? rows : n) *= shape[d];
          if (d < first) out.push_back(shape[d]);
          else if (keep) out.push_back(1);
        }
        std::vector<float> want(rows);
        for (int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (int64_t j = 0; j < n; ++j) s += x[r * n + j];
          want[r] = static_cast<float>(mean ? s / n : s);
        }
        ExpectClose(Run(b.Bytes(), {{"x", F32(shape, x)}}), out, want, 1e-6, 1e-5);
      }
    }
  }
}

// Transpose of any element size against index arithmetic.
template <typename T>
void CheckTranspose(const Shape& shape, const std::vector<int64_t>& perm, DataType dt) {
  const int64_t n = Count(shape);
  std::vector<T> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(i * 7 + 3);
  const int r = static_cast<int>(shape.size());
  std::vector<int64_t> p = perm;
  if (p.empty())
    for (int d = 0; d < r; ++d) p.push_back(r - 1 - d);
  const std::string m = testing::OneNodeModel(13, "Transpose", {{"x", dt}}, {{"y", dt}}, [&](onnxpb::NodeProto& node) {
    if (!perm.empty()) testing::IntsAttr(node, "perm", perm);
  });
  SessionOptions o;
  o.optimization_level = 0;
  o.intra_op_threads = 2;
  auto s = Session::CreateFromBytes(m.data(), m.size(), o);
  ASSERT_TRUE(s.ok());
  auto res = (*s)->Run({{"x", Tensor::FromVector<T>(dt, shape, x)}});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  const Tensor& y = (*res)[0].second.tensor();
  Shape ys(r);
  for (int d = 0; d < r; ++d) ys[d] = shape[p[d]];
  ASSERT_EQ(y.shape(), ys);
  std::vector<int64_t> in_strides(r, 1);
  for (int d = r - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * shape[d + 1];
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0;
    for (int d = r - 1; d >= 0; --d) {
      src += (rem % ys[d]) * in_strides[p[d]];
      rem /= ys[d];
    }
    ASSERT_EQ(y.data<T>()[i], x[src]) << "element " << i;
  }
}

TEST_P(SimdKernelsTest, TransposeEveryPermutationKind) {
  const std::pair<Shape, std::vector<int64_t>> cases[] = {
      {{2, 33, 3, 16}, {0, 2, 1, 3}},  // [B,S,H,D] -> [B,H,S,D]
      {{2, 3, 33, 17}, {0, 1, 3, 2}},  // last two swapped
      {{40, 70}, {}},                  // 2-D, default perm
      {{5, 1, 6, 7}, {2, 0, 3, 1}},    // with a size-1 dim
      {{4, 5, 6}, {0, 1, 2}},          // identity
      {{3, 4, 5, 6}, {3, 2, 1, 0}},
      {{1, 1}, {1, 0}},
      {{0, 3}, {1, 0}},
      // NCHW -> NHWC with 2, 3, 4 and 5 channels (up to 4: the narrow-row path), more rows than
      // one narrow tile, and a tail.
      {{2, 3, 37, 41}, {0, 2, 3, 1}},
      {{1, 4, 33, 33}, {0, 2, 3, 1}},
      {{3, 2, 1100}, {0, 2, 1}},
      {{2, 5, 20, 21}, {0, 2, 3, 1}},
  };
  for (const auto& [shape, perm] : cases) {
    SCOPED_TRACE(::testing::PrintToString(shape) + " perm " + ::testing::PrintToString(perm));
    CheckTranspose<float>(shape, perm, DataType::kFloat);
    CheckTranspose<uint8_t>(shape, perm, DataType::kUInt8);
    CheckTranspose<uint16_t>(shape, perm, DataType::kFloat16);
    CheckTranspose<int64_t>(shape, perm, DataType::kInt64);
  }
}

TEST_P(SimdKernelsTest, ConcatAlongEachAxisWithEmptyInputs) {
  for (int axis = 0; axis < 3; ++axis) {
    Shape sa = {2, 3, 4}, sb = sa, sc = sa;
    sb[axis] = 5;
    sc[axis] = 0;
    const std::vector<float> a = Randn(Count(sa), 17), b = Randn(Count(sb), 18);
    const std::string m = testing::OneNodeModel(
        13, "Concat", {{"a", DataType::kFloat}, {"c", DataType::kFloat}, {"b", DataType::kFloat}},
        {{"y", DataType::kFloat}}, [&](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "axis", axis); });
    const Tensor y = Run(m, {{"a", F32(sa, a)}, {"c", F32(sc, {})}, {"b", F32(sb, b)}});
    Shape ys = sa;
    ys[axis] += sb[axis];
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= sa[d];
    for (int d = axis + 1; d < 3; ++d) inner *= sa[d];
    std::vector<float> want;
    for (int64_t o = 0; o < outer; ++o) {
      want.insert(want.end(), a.begin() + o * sa[axis] * inner, a.begin() + (o + 1) * sa[axis] * inner);
      want.insert(want.end(), b.begin() + o * sb[axis] * inner, b.begin() + (o + 1) * sb[axis] * inner);
    }
    ExpectClose(y, ys, want, 0, 0);
  }
}

TEST_P(SimdKernelsTest, GatherRowsWithNegativeAndInt32Indices) {
  const Shape data_shape = {6, 4, 5};
  const std::vector<float> data = Randn(Count(data_shape), 19);
  for (int64_t axis : {0, 1, -1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const std::vector<int64_t> idx = {1, -1, 0, 2, -2, 3};
    for (DataType it : {DataType::kInt64, DataType::kInt32}) {
      const std::string m = testing::OneNodeModel(13, "Gather", {{"d", DataType::kFloat}, {"i", it}},
                                                  {{"y", DataType::kFloat}},
                                                  [&](onnxpb::NodeProto& n) { ModelBuilder::IntAttr(n, "axis", axis); });
      const Tensor ind = it == DataType::kInt64
                             ? Tensor::FromVector<int64_t>(it, {2, 3}, idx)
                             : Tensor::FromVector<int32_t>(it, {2, 3}, std::vector<int32_t>(idx.begin(), idx.end()));
      const Tensor y = Run(m, {{"d", F32(data_shape, data)}, {"i", ind}});
      Shape ys(data_shape.begin(), data_shape.begin() + a);
      ys.push_back(2);
      ys.push_back(3);
      ys.insert(ys.end(), data_shape.begin() + a + 1, data_shape.end());
      const int64_t dim = data_shape[a];
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < a; ++d) outer *= data_shape[d];
      for (int d = a + 1; d < 3; ++d) inner *= data_shape[d];
      std::vector<float> want;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j : idx) {
          const int64_t k = j < 0 ? j + dim : j;
          want.insert(want.end(), data.begin() + (o * dim + k) * inner, data.begin() + (o * dim + k + 1) * inner);
        }
      ExpectClose(y, ys, want, 0, 0);
    }
  }
  const std::string m = testing::OneNodeModel(13, "Gather", {{"d", DataType::kFloat}, {"i", DataType::kInt64}},
                                              {{"y", DataType::kFloat}});
  const Status st = RunStatus(m, {{"d", F32(data_shape, data)}, {"i", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {6})}});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("out of range"), std::string::npos) << st.ToString();
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SimdKernelsTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         simd::IsaParamName);

}  // namespace
}  // namespace inferloop
