// AttentionFusion on small graphs, and the com.inferloop MultiHeadAttention / Gelu kernels
// against straightforward reference computations.
#include <cmath>

#include "base/status_macros.h"
#include "compute/simd/cpu_isa.h"

#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

constexpr int64_t kB = 2, kS = 5, kH = 3, kD = 4, kHidden = kH * kD;

struct AttnOptions {
  bool dynamic_shapes = false;  // Reshape targets built from Shape/Gather/Unsqueeze/Concat
  bool mask = true;
  bool mul_scale = false;       // Mul by 1/sqrt(D) instead of Div by sqrt(D)
  int64_t sk = kS;              // key length (cross attention when != kS)
  bool two_step_kt = false;     // K^T as Transpose [0,2,1,3] then [0,1,3,2]
  int64_t softmax_axis = -1;
};

// x [B,S,hidden], mem [B,Sk,hidden] -> q = x Wq + bq; k, v from mem -> attention -> y.
Model AttentionModel(const AttnOptions& o) {
  ModelBuilder b(17);
  b.Input("x", DataType::kFloat, {kB, kS, kHidden}).Input("mem", DataType::kFloat, {kB, o.sk, kHidden});
  if (o.mask) b.Input("mask", DataType::kFloat, {kB, 1, 1, o.sk});
  b.Output("y", DataType::kFloat, {kB, kS, kHidden});
  int seed = 100;
  for (const char* p : {"q", "k", "v"}) {
    b.Initializer(std::string("W") + p, RandomTensor({kHidden, kHidden}, seed++));
    b.Initializer(std::string("b") + p, RandomTensor({kHidden}, seed++));
    b.Node("MatMul", {std::string(p) == "q" ? "x" : "mem", std::string("W") + p}, {std::string(p) + "_mm"});
    b.Node("Add", {std::string(p) + "_mm", std::string("b") + p}, {p});
  }
  b.Initializer("heads", Int64Tensor({1}, {kH})).Initializer("hd", Int64Tensor({1}, {kD}));
  b.Initializer("zero", Int64Tensor({}, {0})).Initializer("one", Int64Tensor({}, {1}));
  b.Initializer("ax0", Int64Tensor({1}, {0})).Initializer("minus1", Int64Tensor({1}, {-1}));
  b.Initializer("split_const", Int64Tensor({4}, {0, 0, kH, kD}));
  b.Initializer("merge_const", Int64Tensor({3}, {0, 0, kHidden}));
  // Target [dim0(t), dim1(t), H, D] built at run time from t's shape.
  auto dynamic_target = [&](const std::string& t, const std::vector<std::string>& tail) {
    b.Node("Shape", {t}, {t + "_shape"});
    b.Node("Gather", {t + "_shape", "zero"}, {t + "_d0"});
    b.Node("Gather", {t + "_shape", "one"}, {t + "_d1"});
    b.Node("Unsqueeze", {t + "_d0", "ax0"}, {t + "_u0"});
    b.Node("Unsqueeze", {t + "_d1", "ax0"}, {t + "_u1"});
    std::vector<std::string> parts = {t + "_u0", t + "_u1"};
    parts.insert(parts.end(), tail.begin(), tail.end());
    ModelBuilder::IntAttr(b.Node("Concat", parts, {t + "_target"}), "axis", 0);
    return t + "_target";
  };
  for (const char* p : {"q", "k", "v"}) {
    const std::string target = o.dynamic_shapes ? dynamic_target(p, {"heads", "hd"}) : "split_const";
    b.Node("Reshape", {p, target}, {std::string(p) + "_r"});
  }
  IntsAttr(b.Node("Transpose", {"q_r"}, {"q_t"}), "perm", {0, 2, 1, 3});
  if (o.two_step_kt) {
    IntsAttr(b.Node("Transpose", {"k_r"}, {"k_h"}), "perm", {0, 2, 1, 3});
    IntsAttr(b.Node("Transpose", {"k_h"}, {"k_t"}), "perm", {0, 1, 3, 2});
  } else {
    IntsAttr(b.Node("Transpose", {"k_r"}, {"k_t"}), "perm", {0, 2, 3, 1});
  }
  IntsAttr(b.Node("Transpose", {"v_r"}, {"v_t"}), "perm", {0, 2, 1, 3});
  b.Node("MatMul", {"q_t", "k_t"}, {"scores"});
  if (o.mul_scale) {
    b.Initializer("scale", ScalarF(static_cast<float>(1.0 / std::sqrt(double(kD)))));
    b.Node("Mul", {"scale", "scores"}, {"scaled"});
  } else {
    b.Initializer("scale", ScalarF(static_cast<float>(std::sqrt(double(kD)))));
    b.Node("Div", {"scores", "scale"}, {"scaled"});
  }
  if (o.mask) b.Node("Add", {"scaled", "mask"}, {"masked"});
  ModelBuilder::IntAttr(b.Node("Softmax", {o.mask ? "masked" : "scaled"}, {"probs"}), "axis", o.softmax_axis);
  b.Node("MatMul", {"probs", "v_t"}, {"ctx"});
  IntsAttr(b.Node("Transpose", {"ctx"}, {"ctx_t"}), "perm", {0, 2, 1, 3});
  b.Initializer("hidden", Int64Tensor({1}, {kHidden}));
  const std::string merge = o.dynamic_shapes ? dynamic_target("x", {"hidden"}) : "merge_const";
  b.Node("Reshape", {"ctx_t", merge}, {"y"});
  return LoadBuilt(b);
}

std::vector<NamedValue> AttentionInputs(const AttnOptions& o) {
  std::vector<NamedValue> in = {{"x", RandomTensor({kB, kS, kHidden}, 1)}, {"mem", RandomTensor({kB, o.sk, kHidden}, 2)}};
  if (o.mask) {
    std::vector<float> m(kB * o.sk, 0.f);
    m[o.sk - 1] = -10000.f;  // batch 0 ignores its last key
    in.emplace_back("mask", FloatTensor({kB, 1, 1, o.sk}, m));
  }
  return in;
}

TEST(OptAttention, FusesSelfAttentionWithMask) {
  for (bool dynamic : {false, true}) {
    AttnOptions o;
    o.dynamic_shapes = dynamic;
    auto r = OptimizeAndCompare(AttentionModel(o), AttentionInputs(o));
    const Node* mha = FindOp(r.model, "MultiHeadAttention");
    ASSERT_NE(mha, nullptr) << dynamic;
    EXPECT_EQ(mha->inputs.size(), 4u);
    EXPECT_EQ(mha->FindAttribute("num_heads")->i, kH);
    EXPECT_NEAR(mha->FindAttribute("scale")->f, 0.5f, 1e-6);
    // Left: three FusedMatMul projections (bias) and the attention node.
    EXPECT_EQ(r.model.graph.nodes.size(), 4u) << FormatOptimizeReport(r.report);
  }
}

TEST(OptAttention, MulScaleNoMaskCrossAttention) {
  AttnOptions o;
  o.mask = false;
  o.mul_scale = true;
  o.sk = 7;
  o.dynamic_shapes = true;
  auto r = OptimizeAndCompare(AttentionModel(o), AttentionInputs(o));
  const Node* mha = FindOp(r.model, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr);
  EXPECT_EQ(mha->inputs.size(), 3u);
}

TEST(OptAttention, TwoStepKeyTransposeIsMergedThenFused) {
  AttnOptions o;
  o.two_step_kt = true;
  auto r = OptimizeAndCompare(AttentionModel(o), AttentionInputs(o));
  EXPECT_EQ(CountOp(r.model, "MultiHeadAttention"), 1);
}

TEST(OptAttention, SoftmaxOverAnotherAxisIsLeft) {
  AttnOptions o;
  o.softmax_axis = 2;
  auto r = OptimizeAndCompare(AttentionModel(o), AttentionInputs(o));
  EXPECT_EQ(CountOp(r.model, "MultiHeadAttention"), 0);
  EXPECT_EQ(CountOp(r.model, "Softmax"), 1);
}

// --- kernels ---

Result<std::vector<NamedValue>> RunOne(const std::string& bytes, const std::vector<NamedValue>& in) {
  IL_ASSIGN_OR_RETURN(auto s, Session::CreateFromBytes(bytes.data(), bytes.size()));
  return s->Run(in);
}

std::string MhaModel(int64_t heads, bool mask, float scale, bool has_scale) {
  ModelBuilder b(17);
  b.proto().add_opset_import()->set_domain("com.inferloop");
  b.proto().mutable_opset_import(1)->set_version(1);
  for (const char* n : {"q", "k", "v"}) b.Input(n, DataType::kFloat, {-1, -1, -1}, {n + std::string("0"), n + std::string("1"), n + std::string("2")});
  if (mask) {
    auto* vi = b.proto().mutable_graph()->add_input();
    vi->set_name("mask");
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  }
  auto* out = b.proto().mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  std::vector<std::string> ins = {"q", "k", "v"};
  if (mask) ins.push_back("mask");
  auto& n = b.Node("MultiHeadAttention", ins, {"y"}, "com.inferloop");
  ModelBuilder::IntAttr(n, "num_heads", heads);
  if (has_scale) FloatAttr(n, "scale", scale);
  return b.Bytes();
}

// softmax(scale * Q_h K_h^T + mask) V_h, in double.
std::vector<float> ReferenceMha(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, int64_t H,
                                double scale) {
  const int64_t B = q.dim(0), Sq = q.dim(1), hid = q.dim(2), Sk = k.dim(1), D = hid / H, Dv = v.dim(2) / H;
  std::vector<float> y(B * Sq * H * Dv);
  std::vector<int64_t> mdims(4, 1);
  if (mask)
    for (int d = 0; d < mask->rank(); ++d) mdims[4 - mask->rank() + d] = mask->dim(d);
  auto mask_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    if (!mask) return 0.0;
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int d = 0; d < 4; ++d) off = off * mdims[d] + (mdims[d] == 1 ? 0 : idx[d]);
    return static_cast<double>(mask->data<float>()[off]);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        std::vector<double> s(Sk);
        double mx = -1e300;
        for (int64_t j = 0; j < Sk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(q.data<float>()[(b * Sq + i) * hid + h * D + d]) * k.data<float>()[(b * Sk + j) * hid + h * D + d];
          s[j] = scale * dot + mask_at(b, h, i, j);
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& x : s) sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < Sk; ++j) acc += s[j] / sum * v.data<float>()[(b * Sk + j) * H * Dv + h * Dv + d];
          y[(b * Sq + i) * H * Dv + h * Dv + d] = static_cast<float>(acc);
        }
      }
  return y;
}

// Every instruction-set path of the attention GEMM (fused_attention_gemm.cc).
class IsaScope {
 public:
  explicit IsaScope(simd::Isa isa) : saved_(simd::ActiveIsa()) { simd::SetActiveIsa(isa); }
  ~IsaScope() { simd::SetActiveIsa(saved_); }

 private:
  simd::Isa saved_;
};

TEST(FusedKernels, MultiHeadAttentionMatchesReference) {
 for (simd::Isa isa : {simd::Isa::kAvx512, simd::Isa::kAvx2, simd::Isa::kScalar}) {
  IsaScope scope(isa);
  SCOPED_TRACE(simd::IsaName(simd::ActiveIsa()));
  struct Case {
    int64_t B, Sq, Sk, H, D;
    Shape mask;  // empty: none
    bool explicit_scale;
  };
  std::vector<Case> cases = {
      {2, 5, 5, 3, 4, {}, false},       {2, 7, 9, 2, 8, {2, 1, 1, 9}, true}, {1, 70, 70, 2, 16, {70, 70}, false},
      {2, 3, 600, 1, 5, {9}, false},    {3, 4, 6, 4, 3, {3, 4, 4, 6}, true}, {1, 1, 1, 1, 1, {1}, false},
      {1, 37, 83, 2, 64, {1, 1, 1, 83}, false},  // full 8-row and 32-column tiles plus every edge
  };
  for (auto c : cases) {
    if (c.mask.size() == 1) c.mask = {c.Sk};
    const float scale = 0.3f;
    std::string bytes = MhaModel(c.H, !c.mask.empty(), scale, c.explicit_scale);
    Tensor q = RandomTensor({c.B, c.Sq, c.H * c.D}, 3, -2, 2), k = RandomTensor({c.B, c.Sk, c.H * c.D}, 4, -2, 2);
    Tensor v = RandomTensor({c.B, c.Sk, c.H * c.D}, 5);
    std::vector<NamedValue> in = {{"q", q}, {"k", k}, {"v", v}};
    Tensor mask;
    if (!c.mask.empty()) {
      mask = RandomTensor(c.mask, 6, -3, 0);
      in.emplace_back("mask", mask);
    }
    auto r = RunOne(bytes, in);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Tensor& y = (*r)[0].second.tensor();
    ASSERT_EQ(y.shape(), (Shape{c.B, c.Sq, c.H * c.D}));
    const double s = c.explicit_scale ? scale : 1.0 / std::sqrt(double(c.D));
    auto want = ReferenceMha(q, k, v, c.mask.empty() ? nullptr : &mask, c.H, s);
    ExpectAllClose(y, FloatTensor(y.shape(), want), 1e-5f, 1e-4f);
  }
 }
}

TEST(FusedKernels, MultiHeadAttentionRejectsBadShapes) {
  std::string bytes = MhaModel(3, true, 0.f, false);
  Tensor q = RandomTensor({1, 2, 6}, 1), k = RandomTensor({1, 3, 6}, 2), v = RandomTensor({1, 3, 6}, 3);
  auto r = RunOne(bytes, {{"q", q}, {"k", k}, {"v", v}, {"mask", RandomTensor({2, 1, 1, 3}, 4)}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not broadcast"), std::string::npos) << r.status().message();
  r = RunOne(MhaModel(4, false, 0.f, false), {{"q", q}, {"k", k}, {"v", v}});  // 6 % 4 != 0
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("divisible"), std::string::npos);
  r = RunOne(bytes, {{"q", q}, {"k", RandomTensor({1, 3, 5}, 5)}, {"v", v}, {"mask", RandomTensor({3}, 6)}});
  ASSERT_FALSE(r.ok());
}

TEST(FusedKernels, GeluMatchesFormula) {
  for (const char* approx : {"none", "tanh"}) {
    ModelBuilder b(17);
    b.proto().add_opset_import()->set_domain("com.inferloop");
    b.proto().mutable_opset_import(1)->set_version(1);
    b.Input("x", DataType::kFloat, {1000}).Output("y", DataType::kFloat, {1000});
    StrAttr(b.Node("Gelu", {"x"}, {"y"}, "com.inferloop"), "approximate", approx);
    Tensor x = RandomTensor({1000}, 7, -6, 6);
    auto r = RunOne(b.Bytes(), {{"x", x}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<float> want(1000);
    for (int i = 0; i < 1000; ++i) {
      const double v = x.data<float>()[i];
      want[i] = std::string(approx) == "none"
                    ? static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))))
                    : static_cast<float>(0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
    }
    ExpectAllClose((*r)[0].second.tensor(), FloatTensor({1000}, want), 1e-6f, 1e-5f);
  }
}

}  // namespace
}  // namespace inferloop::testing
