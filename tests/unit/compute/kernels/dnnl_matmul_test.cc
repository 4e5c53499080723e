// The oneDNN float32 MatMul / Gemm / FusedMatMul / FusedGemm against the scalar float64 path:
// 2-D, batched, broadcast batches, 1-D operands, constant (pre-packed) and run-time B; Gemm
// transposes, alpha, beta and every C broadcast; fused bias and activations; 1 and 2 threads.
#include "compute/kernels/dnnl_kernels.h"
#include "unit/compute/kernels/dnnl_test_util.h"

namespace inferloop {
namespace {

using namespace dnnl_test;

TEST(DnnlMatMul, ShapesAndBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 5}, {5, 4}},          {{4, 3, 5}, {5, 6}},        {{2, 4, 3, 5}, {5, 6}},   {{5}, {5, 4}},
      {{3, 5}, {5}},             {{7}, {7}},                 {{4, 3, 5}, {4, 5, 2}},   {{2, 1, 3, 5}, {3, 5, 2}},
      {{3, 5}, {4, 5, 2}},       {{4, 3, 5}, {1, 5, 2}},     {{5}, {3, 5, 2}},         {{4, 3, 5}, {5}},
      {{1, 64}, {64, 48}},       {{33, 70}, {70, 130}},      {{2, 2, 1, 3, 5}, {1, 2, 4, 5, 2}},
  };
  uint32_t seed = 1;
  for (const auto& [as, bs] : cases) {
    for (bool const_b : {true, false}) {
      OneNode n;
      n.op = "MatMul";
      n.inputs = {{"a", as, RandomValues(Count(as), seed), false}, {"b", bs, RandomValues(Count(bs), seed + 1), const_b}};
      CheckAgainstDouble(n, "MatMul " + ShapeToString(as) + " x " + ShapeToString(bs) + (const_b ? " const-B" : ""));
      seed += 2;
    }
  }
}

TEST(DnnlMatMul, MismatchedInnerDimensionIsAnError) {
  OneNode n;
  n.op = "MatMul";
  n.inputs = {{"a", {3, 5}, RandomValues(15, 1), false}, {"b", {4, 2}, RandomValues(8, 2), true}};
  auto got = RunNode(n, DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("inner dimensions"), std::string::npos) << got.status().ToString();
}

struct GemmCase {
  bool ta, tb;
  float alpha, beta;
  Shape c;  // {} with has_c = false: no C
  bool has_c;
};

TEST(DnnlGemm, TransposesScalesAndCBroadcasts) {
  const int64_t M = 6, K = 9, N = 5;
  const std::vector<GemmCase> cases = {
      {false, false, 1.f, 1.f, {}, false},   {false, true, 1.f, 1.f, {N}, true},     {true, false, 1.f, 1.f, {1, N}, true},
      {true, true, 1.f, 1.f, {M, N}, true},  {false, true, 0.5f, 1.f, {N}, true},    {false, false, 1.f, 2.f, {M, 1}, true},
      {true, true, 0.25f, -1.5f, {M, N}, true}, {false, true, 2.f, 0.5f, {}, true},  {false, false, 1.f, 1.f, {1}, true},
      {false, true, 1.5f, 0.f, {M, N}, true},   {false, true, 3.f, 1.f, {}, false},
  };
  uint32_t seed = 50;
  for (const GemmCase& g : cases) {
    for (bool const_b : {true, false}) {
      OneNode n;
      n.op = "Gemm";
      const Shape as = g.ta ? Shape{K, M} : Shape{M, K}, bs = g.tb ? Shape{N, K} : Shape{K, N};
      n.inputs = {{"a", as, RandomValues(Count(as), seed), false}, {"b", bs, RandomValues(Count(bs), seed + 1), const_b}};
      if (g.has_c) n.inputs.push_back({"c", g.c, RandomValues(Count(g.c), seed + 2), const_b});
      n.attrs = [g](onnxpb::NodeProto& p) {
        ModelBuilder::IntAttr(p, "transA", g.ta);
        ModelBuilder::IntAttr(p, "transB", g.tb);
        auto* a = p.add_attribute();
        a->set_name("alpha");
        a->set_type(onnxpb::AttributeProto::FLOAT);
        a->set_f(g.alpha);
        auto* b = p.add_attribute();
        b->set_name("beta");
        b->set_type(onnxpb::AttributeProto::FLOAT);
        b->set_f(g.beta);
      };
      CheckAgainstDouble(n, "Gemm tA=" + std::to_string(g.ta) + " tB=" + std::to_string(g.tb) + " alpha=" + std::to_string(g.alpha) +
                                " beta=" + std::to_string(g.beta) + " C=" + (g.has_c ? ShapeToString(g.c) : "none") +
                                (const_b ? " const" : ""));
      seed += 3;
    }
  }
}

TEST(DnnlGemm, CThatDoesNotBroadcastIsAnError) {
  OneNode n;
  n.op = "Gemm";
  n.inputs = {{"a", {3, 4}, RandomValues(12, 1), false}, {"b", {4, 5}, RandomValues(20, 2), true},
              {"c", {2, 5}, RandomValues(10, 3), true}};
  auto got = RunNode(n, DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

// FusedMatMul = act(A @ B + bias), FusedGemm = act(Gemm(A, B, C)), for every activation.
TEST(DnnlFused, MatMulAndGemmWithActivations) {
  for (const ActCase& act : AllActivations()) {
    const std::string aname = act.name.empty() ? "none" : act.name;
    {
      OneNode mm;
      mm.op = "MatMul";
      mm.inputs = {{"a", {2, 3, 8}, RandomValues(48, 7), false}, {"b", {8, 6}, RandomValues(48, 8), true}};
      auto ref = RunNode(mm, DataType::kDouble);
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      const std::vector<double> bias = RandomValues(6, 9);
      std::vector<double> want = ToDoubles(*ref);
      for (size_t i = 0; i < want.size(); ++i) want[i] = RefActivation(act.name, act.params, want[i] + bias[i % 6]);
      OneNode fused = mm;
      fused.op = "FusedMatMul";
      fused.domain = "com.inferloop";
      fused.inputs.push_back({"bias", {6}, bias, true});
      fused.attrs = [act](onnxpb::NodeProto& p) { SetActivation(p, act); };
      for (int threads : {1, 2}) {
        const int64_t before = dnnl_kernels::PrimitiveExecutions();
        auto got = RunNode(fused, DataType::kFloat, threads);
        ASSERT_TRUE(got.ok()) << aname << ": " << got.status().ToString();
        EXPECT_GT(dnnl_kernels::PrimitiveExecutions(), before);
        ExpectClose(*got, ref->shape(), want, 1e-4, "FusedMatMul " + aname);
      }
      auto got64 = RunNode(fused, DataType::kDouble);
      ASSERT_TRUE(got64.ok()) << got64.status().ToString();
      const std::vector<double> g = ToDoubles(*got64);
      for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "f64 " << aname;
      // Without the bias input.
      OneNode nobias = fused;
      nobias.inputs.pop_back();
      auto got_nb = RunNode(nobias, DataType::kFloat);
      ASSERT_TRUE(got_nb.ok()) << got_nb.status().ToString();
      std::vector<double> want_nb = ToDoubles(*ref);
      for (double& v : want_nb) v = RefActivation(act.name, act.params, v);
      ExpectClose(*got_nb, ref->shape(), want_nb, 1e-4, "FusedMatMul no bias " + aname);
    }
    for (bool scaled : {false, true}) {
      OneNode gemm;
      gemm.op = "Gemm";
      gemm.inputs = {{"a", {5, 7}, RandomValues(35, 11), false}, {"b", {4, 7}, RandomValues(28, 12), true},
                     {"c", scaled ? Shape{5, 4} : Shape{4}, RandomValues(scaled ? 20 : 4, 13), true}};
      gemm.attrs = [scaled](onnxpb::NodeProto& p) {
        ModelBuilder::IntAttr(p, "transB", 1);
        if (scaled) {
          auto* a = p.add_attribute();
          a->set_name("alpha");
          a->set_type(onnxpb::AttributeProto::FLOAT);
          a->set_f(0.5f);
          auto* b = p.add_attribute();
          b->set_name("beta");
          b->set_type(onnxpb::AttributeProto::FLOAT);
          b->set_f(-2.f);
        }
      };
      auto ref = RunNode(gemm, DataType::kDouble);
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      std::vector<double> want = ToDoubles(*ref);
      for (double& v : want) v = RefActivation(act.name, act.params, v);
      OneNode fused = gemm;
      fused.op = "FusedGemm";
      fused.domain = "com.inferloop";
      fused.attrs = [gemm, act](onnxpb::NodeProto& p) {
        gemm.attrs(p);
        SetActivation(p, act);
      };
      for (int threads : {1, 2}) {
        const int64_t before = dnnl_kernels::PrimitiveExecutions();
        auto got = RunNode(fused, DataType::kFloat, threads);
        ASSERT_TRUE(got.ok()) << aname << ": " << got.status().ToString();
        EXPECT_GT(dnnl_kernels::PrimitiveExecutions(), before);
        ExpectClose(*got, ref->shape(), want, 1e-4, "FusedGemm " + aname + (scaled ? " scaled" : ""));
      }
    }
  }
}

TEST(DnnlFused, MatMulBiasOfWrongLengthIsAnError) {
  OneNode n;
  n.op = "FusedMatMul";
  n.domain = "com.inferloop";
  n.inputs = {{"a", {3, 4}, RandomValues(12, 1), false}, {"b", {4, 5}, RandomValues(20, 2), true}, {"bias", {4}, RandomValues(4, 3), true}};
  auto got = RunNode(n, DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop
