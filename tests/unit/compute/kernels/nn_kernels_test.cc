// Focused tests for the nn kernels: shape validation errors, im2col geometry (asymmetric pads,
// strides, dilations, groups) against a naive convolution, ConvTranspose, pooling indices and
// divisors, DeformConv with zero offsets, MaxUnpool index checks, Dropout determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
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
using Attrs = std::function<void(onnxpb::NodeProto&)>;

using testing::F32;
using testing::I64;



using testing::Make;

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

const std::vector<std::pair<std::string, DataType>> kXWB = {{"x", DataType::kFloat}, {"w", DataType::kFloat}, {"b", DataType::kFloat}};
const std::vector<std::pair<std::string, DataType>> kY = {{"y", DataType::kFloat}};

// Naive 2-D grouped convolution.
std::vector<float> NaiveConv2d(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b, int N, int C,
                               int H, int W, int M, int KH, int KW, int G, int sh, int sw, int dh, int dw, int pt, int pl,
                               int OH, int OW) {
  std::vector<float> y(static_cast<size_t>(N) * M * OH * OW);
  const int Cg = C / G, Mg = M / G;
  for (int n = 0; n < N; ++n)
    for (int m = 0; m < M; ++m)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          double acc = b[m];
          const int g = m / Mg;
          for (int c = 0; c < Cg; ++c)
            for (int kh = 0; kh < KH; ++kh)
              for (int kw = 0; kw < KW; ++kw) {
                const int ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x[((n * C + g * Cg + c) * H + ih) * W + iw] * w[((m * Cg + c) * KH + kh) * KW + kw];
              }
          y[((n * M + m) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
  return y;
}

TEST(NnKernels, ConvMatchesNaiveWithGroupsPadsStridesDilations) {
  const int N = 2, C = 4, H = 9, W = 11, M = 6, KH = 3, KW = 2, G = 2, sh = 2, sw = 3, dh = 2, dw = 1;
  const int pt = 1, pl = 0, pb = 2, pr = 1;
  const int OH = (H + pt + pb - ((KH - 1) * dh + 1)) / sh + 1, OW = (W + pl + pr - ((KW - 1) * dw + 1)) / sw + 1;
  auto s = Make(OneNodeModel(22, "Conv", kXWB, kY, [&](auto& n) {
    ModelBuilder::IntAttr(n, "group", G);
    IntsAttr(n, "strides", {sh, sw});
    IntsAttr(n, "dilations", {dh, dw});
    IntsAttr(n, "pads", {pt, pl, pb, pr});
  }));
  ASSERT_TRUE(s);
  auto x = Random(N * C * H * W, 1), w = Random(M * (C / G) * KH * KW, 2), b = Random(M, 3);
  auto r = s->Run({{"x", F32({N, C, H, W}, x)}, {"w", F32({M, C / G, KH, KW}, w)}, {"b", F32({M}, b)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{N, M, OH, OW}));
  auto want = NaiveConv2d(x, w, b, N, C, H, W, M, KH, KW, G, sh, sw, dh, dw, pt, pl, OH, OW);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y.data<float>()[i], want[i], 1e-5) << i;
}

TEST(NnKernels, ConvShapeErrors) {
  auto s = Make(OneNodeModel(22, "Conv", kXWB, kY, [](auto& n) { ModelBuilder::IntAttr(n, "group", 2); }));
  ASSERT_TRUE(s);
  // W expects 2 * 2 = 4 input channels, X has 3 (also not divisible by group).
  auto r = s->Run({{"x", F32({1, 3, 4, 4}, std::vector<float>(48, 1))}, {"w", F32({2, 2, 1, 1}, {1, 1, 1, 1})},
                   {"b", F32({2}, {0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("group"), std::string::npos) << r.status().ToString();
  // Output channels 3 not divisible by group 2.
  r = s->Run({{"x", F32({1, 4, 2, 2}, std::vector<float>(16, 1))}, {"w", F32({3, 2, 1, 1}, std::vector<float>(6, 1))},
              {"b", F32({3}, {0, 0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // Kernel larger than the input.
  auto s1 = Make(OneNodeModel(22, "Conv", kXWB, kY));
  ASSERT_TRUE(s1);
  r = s1->Run({{"x", F32({1, 1, 2, 2}, {1, 2, 3, 4})}, {"w", F32({1, 1, 3, 3}, std::vector<float>(9, 1))}, {"b", F32({1}, {0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not fit"), std::string::npos) << r.status().ToString();
  // Bias of the wrong length.
  r = s1->Run({{"x", F32({1, 1, 2, 2}, {1, 2, 3, 4})}, {"w", F32({1, 1, 1, 1}, {1})}, {"b", F32({2}, {0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // Bad auto_pad is rejected when the session is made.
  std::string bytes = OneNodeModel(22, "Conv", kXWB, kY, [](auto& n) { StrAttr(n, "auto_pad", "SAME"); });
  EXPECT_FALSE(Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{}).ok());
}

TEST(NnKernels, ConvTransposeOutputPaddingAndGroups) {
  // 1-D, group 2, stride 2, output_padding 1: each input element spreads its kernel.
  auto s = Make(OneNodeModel(22, "ConvTranspose", kXWB, kY, [](auto& n) {
    ModelBuilder::IntAttr(n, "group", 2);
    IntsAttr(n, "strides", {2});
    IntsAttr(n, "output_padding", {1});
  }));
  ASSERT_TRUE(s);
  // X [1, 2, 2], W [2, 1, 2] -> Y [1, 2, (2-1)*2 + 2 + 1 = 5].
  auto r = s->Run({{"x", F32({1, 2, 2}, {1, 2, 3, 4})}, {"w", F32({2, 1, 2}, {1, 10, 100, 1000})}, {"b", F32({2}, {0.5f, -0.5f})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 2, 5}));
  const std::vector<float> want = {1.5f, 10.5f, 2.5f, 20.5f, 0.5f, 299.5f, 2999.5f, 399.5f, 3999.5f, -0.5f};
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;
  // W's first dim must equal X's channels.
  r = s->Run({{"x", F32({1, 2, 2}, {1, 2, 3, 4})}, {"w", F32({1, 1, 2}, {1, 1})}, {"b", F32({2}, {0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(NnKernels, MaxPoolIndicesStorageOrder) {
  for (int order : {0, 1}) {
    auto s = Make(OneNodeModel(12, "MaxPool", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}, {"i", DataType::kInt64}}, [&](auto& n) {
      IntsAttr(n, "kernel_shape", {2, 2});
      IntsAttr(n, "strides", {2, 2});
      ModelBuilder::IntAttr(n, "storage_order", order);
    }));
    ASSERT_TRUE(s);
    // 2 x 3 plane (H=2, W=3), ceil off: one window over columns 0-1; max 9 at (1, 0).
    auto r = s->Run({{"x", F32({1, 1, 2, 3}, {1, 2, 3, 9, 4, 5})}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].second.tensor().data<float>()[0], 9.0f);
    // Row-major: 1 * 3 + 0 = 3; column-major: 1 + 0 * 2 = 1.
    EXPECT_EQ((*r)[1].second.tensor().data<int64_t>()[0], order == 0 ? 3 : 1);
  }
}

TEST(NnKernels, AveragePoolCeilModeDivisors) {
  // in 5, kernel 2, stride 2, pad 1 both sides, ceil: out = ceil((5 + 2 - 2) / 2) + 1 = 4.
  for (int cip : {0, 1}) {
    auto s = Make(OneNodeModel(19, "AveragePool", {{"x", DataType::kFloat}}, kY, [&](auto& n) {
      IntsAttr(n, "kernel_shape", {2});
      IntsAttr(n, "strides", {2});
      IntsAttr(n, "pads", {1, 1});
      ModelBuilder::IntAttr(n, "ceil_mode", 1);
      ModelBuilder::IntAttr(n, "count_include_pad", cip);
    }));
    ASSERT_TRUE(s);
    auto r = s->Run({{"x", F32({1, 1, 5}, {2, 4, 6, 8, 10})}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Tensor& y = (*r)[0].second.tensor();
    ASSERT_EQ(y.shape(), (Shape{1, 1, 3}));
    // Windows: [-1,0], [1,2], [3,4] (the 4th would start in the trailing pad and is dropped).
    const float* p = y.data<float>();
    EXPECT_FLOAT_EQ(p[0], cip ? 1.0f : 2.0f);
    EXPECT_FLOAT_EQ(p[1], 5.0f);
    EXPECT_FLOAT_EQ(p[2], 9.0f);
  }
  // Missing kernel_shape is rejected at creation.
  std::string bytes = OneNodeModel(19, "AveragePool", {{"x", DataType::kFloat}}, kY);
  EXPECT_FALSE(Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{}).ok());
}

TEST(NnKernels, DeformConvWithZeroOffsetsIsConv) {
  const int N = 1, C = 2, H = 5, W = 4, M = 3;
  auto x = Random(N * C * H * W, 7), w = Random(M * C * 3 * 3, 8), b = Random(M, 9);
  auto conv = Make(OneNodeModel(22, "Conv", kXWB, kY, [](auto& n) { IntsAttr(n, "pads", {1, 1, 1, 1}); }));
  auto deform = Make(OneNodeModel(22, "DeformConv", {{"x", DataType::kFloat}, {"w", DataType::kFloat}, {"o", DataType::kFloat}, {"b", DataType::kFloat}},
                           kY, [](auto& n) { IntsAttr(n, "pads", {1, 1, 1, 1}); }));
  ASSERT_TRUE(conv && deform);
  auto rc = conv->Run({{"x", F32({N, C, H, W}, x)}, {"w", F32({M, C, 3, 3}, w)}, {"b", F32({M}, b)}});
  auto rd = deform->Run({{"x", F32({N, C, H, W}, x)}, {"w", F32({M, C, 3, 3}, w)},
                         {"o", F32({N, 2 * 9, H, W}, std::vector<float>(N * 18 * H * W, 0.f))}, {"b", F32({M}, b)}});
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  ASSERT_TRUE(rd.ok()) << rd.status().ToString();
  const Tensor& yc = (*rc)[0].second.tensor();
  const Tensor& yd = (*rd)[0].second.tensor();
  ASSERT_EQ(yc.shape(), yd.shape());
  for (int64_t i = 0; i < yc.size(); ++i) EXPECT_NEAR(yc.data<float>()[i], yd.data<float>()[i], 1e-5);
  // Offsets of the wrong shape.
  rd = deform->Run({{"x", F32({N, C, H, W}, x)}, {"w", F32({M, C, 3, 3}, w)},
                    {"o", F32({N, 9, H, W}, std::vector<float>(N * 9 * H * W, 0.f))}, {"b", F32({M}, b)}});
  ASSERT_FALSE(rd.ok());
  EXPECT_NE(rd.status().message().find("offset"), std::string::npos) << rd.status().ToString();
}

TEST(NnKernels, MaxUnpoolRejectsOutOfRangeIndices) {
  auto s = Make(OneNodeModel(11, "MaxUnpool", {{"x", DataType::kFloat}, {"i", DataType::kInt64}}, kY, [](auto& n) {
    IntsAttr(n, "kernel_shape", {2, 2});
    IntsAttr(n, "strides", {2, 2});
  }));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({1, 1, 1, 1}, {5})}, {"i", I64({1, 1, 1, 1}, {3})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[3], 5.0f);
  r = s->Run({{"x", F32({1, 1, 1, 1}, {5})}, {"i", I64({1, 1, 1, 1}, {4})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
}

TEST(NnKernels, NormalizationErrors) {
  auto ln = Make(OneNodeModel(17, "LayerNormalization", {{"x", DataType::kFloat}, {"s", DataType::kFloat}}, kY,
                       [](auto& n) { ModelBuilder::IntAttr(n, "axis", 2); }));
  ASSERT_TRUE(ln);
  auto r = ln->Run({{"x", F32({2, 2}, {1, 2, 3, 4})}, {"s", F32({2}, {1, 1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("axis"), std::string::npos) << r.status().ToString();
  // Scale that does not broadcast.
  auto ln1 = Make(OneNodeModel(17, "LayerNormalization", {{"x", DataType::kFloat}, {"s", DataType::kFloat}}, kY));
  ASSERT_TRUE(ln1);
  r = ln1->Run({{"x", F32({2, 2}, {1, 2, 3, 4})}, {"s", F32({3}, {1, 1, 1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // Each row normalized: [1, 3] -> [-1, 1] (up to epsilon).
  r = ln1->Run({{"x", F32({1, 2}, {1, 3})}, {"s", F32({2}, {1, 1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR((*r)[0].second.tensor().data<float>()[0], -1.0f, 1e-4);
  // GroupNormalization: channels not divisible by num_groups.
  auto gn = Make(OneNodeModel(21, "GroupNormalization", {{"x", DataType::kFloat}, {"s", DataType::kFloat}, {"b", DataType::kFloat}}, kY,
                       [](auto& n) { ModelBuilder::IntAttr(n, "num_groups", 2); }));
  ASSERT_TRUE(gn);
  r = gn->Run({{"x", F32({1, 3, 1}, {1, 2, 3})}, {"s", F32({3}, {1, 1, 1})}, {"b", F32({3}, {0, 0, 0})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("num_groups"), std::string::npos) << r.status().ToString();
}

TEST(NnKernels, DropoutTrainingIsSeededAndRatioZeroIsIdentity) {
  auto s = Make(OneNodeModel(13, "Dropout", {{"x", DataType::kFloat}, {"r", DataType::kFloat}, {"t", DataType::kBool}},
                      {{"y", DataType::kFloat}, {"m", DataType::kBool}}, [](auto& n) { ModelBuilder::IntAttr(n, "seed", 3); }));
  ASSERT_TRUE(s);
  std::vector<float> xv(64, 1.0f);
  Tensor t = Tensor::FromVector<uint8_t>(DataType::kBool, {}, {1});
  auto r1 = s->Run({{"x", F32({64}, xv)}, {"r", F32({}, {0.5f})}, {"t", t}});
  auto r2 = s->Run({{"x", F32({64}, xv)}, {"r", F32({}, {0.5f})}, {"t", t}});
  ASSERT_TRUE(r1.ok() && r2.ok());
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    const float y = (*r1)[0].second.tensor().data<float>()[i];
    const bool m = (*r1)[1].second.tensor().data<uint8_t>()[i] != 0;
    EXPECT_EQ(y, m ? 2.0f : 0.0f);
    EXPECT_EQ(y, (*r2)[0].second.tensor().data<float>()[i]);
    kept += m;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 64);
  auto r = s->Run({{"x", F32({64}, xv)}, {"r", F32({}, {0.0f})}, {"t", t}});
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ((*r)[0].second.tensor().data<float>()[i], 1.0f);
  // Ratio outside [0, 1).
  r = s->Run({{"x", F32({64}, xv)}, {"r", F32({}, {1.0f})}, {"t", t}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop
