// compute/simd/small_conv.h, the direct convolution for few channels, on every instruction set
// this CPU has, against a float64 convolution written from ONNX Conv's definition: 2-D and 3-D,
// kernels 1 to 5, symmetric, asymmetric and no padding, output widths with and without a vector
// tail, one output channel, output channels that fill no block / one block / a block and a tail,
// each activation,
// with and without the residual and the bias, row ranges split at odd points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compute/simd/cpu_isa.h"
#include "unit/compute/simd/isa_param_test.h"
#include "compute/simd/small_conv.h"

namespace inferloop {
namespace simd {
namespace {

// The activations the conv kernels give small_direct (dnnl_conv.cc).
enum class Act { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh };

SmallConvEpilogue EpilogueFor(Act act, float alpha, float beta) {
  SmallConvEpilogue e;
  e.has_act = act != Act::kNone;
  e.act = act == Act::kLeakyRelu ? UnaryOp::kLeakyRelu
          : act == Act::kClip    ? UnaryOp::kClip
          : act == Act::kSigmoid ? UnaryOp::kSigmoid
          : act == Act::kTanh    ? UnaryOp::kTanh
                                 : UnaryOp::kRelu;
  e.act_args = {alpha, beta};
  return e;
}

struct Case {
  std::string name;
  int64_t C, M, D, H, W, KD, KH, KW;
  int64_t pd0, pd1, ph0, ph1, pw0, pw1;  // leading, trailing pads
  Act act = Act::kNone;
  bool bias = true, z = false;
};

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return v;
}

double Activation(const Case& c, double v, float alpha, float beta) {
  switch (c.act) {
    case Act::kNone: return v;
    case Act::kRelu: return v > 0 ? v : 0;
    case Act::kLeakyRelu: return v >= 0 ? v : alpha * v;
    case Act::kClip: return std::min(std::max(v, static_cast<double>(alpha)), static_cast<double>(beta));
    case Act::kSigmoid: return 1 / (1 + std::exp(-v));
    case Act::kTanh: return std::tanh(v);
  }
  return v;
}

class SmallConvTest : public IsaParamTest {};

void Check(const Case& c, int64_t batch) {
  SCOPED_TRACE(c.name);
  SmallConvGeom g;
  g.C = c.C, g.M = c.M, g.D = c.D, g.H = c.H, g.W = c.W, g.KD = c.KD, g.KH = c.KH, g.KW = c.KW;
  g.pd = c.pd0, g.ph = c.ph0, g.pw = c.pw0;
  g.Do = c.D + c.pd0 + c.pd1 - c.KD + 1;
  g.Ho = c.H + c.ph0 + c.ph1 - c.KH + 1;
  g.Wo = c.W + c.pw0 + c.pw1 - c.KW + 1;
  ASSERT_TRUE(SmallConvSupported(g));
  const int64_t in_item = c.C * c.D * c.H * c.W, out_item = c.M * g.Do * g.Ho * g.Wo;
  const std::vector<float> x = Random(batch * in_item, 1), w = Random(c.M * c.C * c.KD * c.KH * c.KW, 2),
                           b = Random(c.M, 3), z = Random(batch * out_item, 4);
  SmallConvEpilogue e = EpilogueFor(c.act, c.act == Act::kClip ? -0.3f : 0.1f, 0.4f);
  e.bias = c.bias ? b.data() : nullptr;
  std::vector<float> packed(static_cast<size_t>(SmallConvPackedSize(g)));
  PackSmallConvWeights(g, w.data(), packed.data());
  std::vector<float> padded(static_cast<size_t>(SmallConvPaddedSize(g)), 123.f);  // junk the padding must overwrite
  std::vector<float> y(static_cast<size_t>(batch * out_item), -777.f);
  const int64_t in_rows = c.C * c.D * c.H, out_rows = g.Do * g.Ho;
  const bool pointwise = !SmallConvNeedsPadding(g);
  EXPECT_EQ(pointwise, c.KD == 1 && c.KH == 1 && c.KW == 1 && c.pd0 + c.pd1 + c.ph0 + c.ph1 + c.pw0 + c.pw1 == 0);
  for (int64_t n = 0; n < batch; ++n) {
    // Row ranges split unevenly, as threads would take them. A pointwise convolution reads X's
    // own rows (a copy of exactly one batch item here, so that reads past it are caught).
    const std::vector<float> item(x.begin() + n * in_item, x.begin() + (n + 1) * in_item);
    if (!pointwise)
      for (int64_t r = 0; r < in_rows; r += 3) PadSmallConvRows(g, item.data(), padded.data(), r, std::min(in_rows, r + 3));
    for (int64_t r = 0; r < out_rows; r += 5)
      SmallConvRows(g, pointwise ? item.data() : padded.data(), packed.data(), c.z ? z.data() + n * out_item : nullptr, e,
                    y.data() + n * out_item, r, std::min(out_rows, r + 5));
  }
  int64_t bad = 0;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t d = 0; d < g.Do; ++d)
        for (int64_t h = 0; h < g.Ho; ++h)
          for (int64_t wo = 0; wo < g.Wo; ++wo) {
            double s = c.bias ? b[m] : 0.0;
            for (int64_t ci = 0; ci < c.C; ++ci)
              for (int64_t kd = 0; kd < c.KD; ++kd)
                for (int64_t kh = 0; kh < c.KH; ++kh)
                  for (int64_t kw = 0; kw < c.KW; ++kw) {
                    const int64_t id = d + kd - c.pd0, ih = h + kh - c.ph0, iw = wo + kw - c.pw0;
                    if (id < 0 || id >= c.D || ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                    s += static_cast<double>(x[static_cast<size_t>(n * in_item + ((ci * c.D + id) * c.H + ih) * c.W + iw)]) *
                         w[static_cast<size_t>((((m * c.C + ci) * c.KD + kd) * c.KH + kh) * c.KW + kw)];
                  }
            const int64_t at = n * out_item + ((m * g.Do + d) * g.Ho + h) * g.Wo + wo;
            if (c.z) s += z[static_cast<size_t>(at)];
            const double want = Activation(c, s, e.act_args.alpha, e.act_args.beta);
            const double got = y[static_cast<size_t>(at)];
            if (!(std::fabs(got - want) <= 1e-4 * (1 + std::fabs(want))) && bad++ < 5)
              ADD_FAILURE() << "n=" << n << " m=" << m << " d=" << d << " h=" << h << " w=" << wo << ": " << got << " vs " << want;
          }
  EXPECT_EQ(bad, 0);
}

TEST_P(SmallConvTest, MatchesFloat64Convolution) {
  using A = Act;
  const std::vector<Case> cases = {
      // The CT U-Net's first layer (1 -> 8) and a narrow 3-D layer, width with a tail.
      {"3d_1_to_8_relu", 1, 8, 4, 5, 37, 3, 3, 3, 1, 1, 1, 1, 1, 1, A::kRelu},
      {"3d_16_to_8_residual", 16, 8, 3, 4, 20, 3, 3, 3, 1, 1, 1, 1, 1, 1, A::kNone, true, true},
      // Output channels: fewer than a block, a block and a tail, several blocks.
      {"3d_3_to_1_no_bias", 3, 1, 2, 3, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, A::kNone, false},
      {"3d_5_to_9_leaky", 5, 9, 3, 3, 33, 3, 3, 3, 1, 1, 1, 1, 1, 1, A::kLeakyRelu},
      {"3d_8_to_24_clip_residual", 8, 24, 2, 6, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, A::kClip, true, true},
      // Asymmetric and no padding, kernels that differ per dimension, 1x1x1.
      {"3d_asym_pads", 4, 6, 5, 4, 18, 3, 2, 3, 0, 2, 1, 0, 2, 0, A::kRelu},
      {"3d_valid", 2, 3, 4, 5, 21, 2, 3, 3, 0, 0, 0, 0, 0, 0},
      {"3d_pointwise", 8, 2, 2, 2, 40, 1, 1, 1, 0, 0, 0, 0, 0, 0, A::kNone, true, true},
      // One output channel (the U-Net's 1x1x1 head with its Sigmoid; its own 1-channel tiles).
      {"3d_head_8_to_1_sigmoid", 8, 1, 3, 4, 70, 1, 1, 1, 0, 0, 0, 0, 0, 0, A::kSigmoid},
      {"3d_3x3x3_to_1_tanh_residual", 4, 1, 3, 3, 19, 3, 3, 3, 1, 1, 1, 1, 1, 1, A::kTanh, true, true},
      // Padding wider than the kernel reaches: rows and columns of bias alone.
      {"3d_wide_pads", 2, 4, 2, 2, 3, 3, 3, 3, 2, 3, 2, 2, 2, 4},
      // 2-D (D = KD = 1): a 5x3 kernel, output width of one vector and of one column.
      {"2d_5x3", 3, 3, 1, 7, 70, 1, 5, 3, 0, 0, 2, 2, 1, 1, A::kRelu},
      {"2d_width_16", 6, 8, 1, 5, 16, 1, 3, 3, 0, 0, 1, 1, 1, 1},
      {"2d_width_1", 4, 5, 1, 6, 1, 1, 3, 3, 0, 0, 1, 1, 1, 1},
      {"2d_left_pad_16", 2, 2, 1, 3, 8, 1, 1, 17, 0, 0, 0, 0, 16, 0},
  };
  for (const Case& c : cases) Check(c, 2);
}

// A NaN input reaches every output whose window holds it, through Relu and Clip too (as in
// simd::Unary and ONNX's Relu / Clip), and no other output; a 3x3 kernel, 1 -> 8 channels.
TEST_P(SmallConvTest, NanInputPropagatesThroughTheActivation) {
  SmallConvGeom g;
  g.C = 1, g.M = 8, g.H = 5, g.W = 20, g.KH = g.KW = 3, g.ph = g.pw = 1, g.Ho = 5, g.Wo = 20;
  std::vector<float> x = Random(g.H * g.W, 11), w = Random(g.M * 9, 12);
  x[2 * g.W + 7] = std::numeric_limits<float>::quiet_NaN();  // row 2, column 7
  std::vector<float> packed(static_cast<size_t>(SmallConvPackedSize(g))), padded(static_cast<size_t>(SmallConvPaddedSize(g)));
  PackSmallConvWeights(g, w.data(), packed.data());
  PadSmallConvRows(g, x.data(), padded.data(), 0, g.H);
  for (Act act : {Act::kNone, Act::kRelu, Act::kClip}) {
    SmallConvEpilogue e = EpilogueFor(act, -0.3f, 0.4f);
    std::vector<float> y(static_cast<size_t>(g.M * g.Ho * g.Wo), 0.f);
    SmallConvRows(g, padded.data(), packed.data(), nullptr, e, y.data(), 0, g.Ho);
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t h = 0; h < g.Ho; ++h)
        for (int64_t wo = 0; wo < g.Wo; ++wo) {
          const bool window_has_nan = std::abs(h - 2) <= 1 && std::abs(wo - 7) <= 1;
          EXPECT_EQ(std::isnan(y[static_cast<size_t>((m * g.Ho + h) * g.Wo + wo)]), window_has_nan)
              << "act " << static_cast<int>(act) << " m=" << m << " h=" << h << " w=" << wo;
        }
  }
}

TEST_P(SmallConvTest, LeadingPadBeyondTheRowLeadIsNotSupported) {
  SmallConvGeom g;
  g.C = g.M = 1, g.W = 4, g.KW = 18, g.pw = 17, g.Wo = 4;
  EXPECT_FALSE(SmallConvSupported(g));
  g.pw = 16;
  EXPECT_TRUE(SmallConvSupported(g));
  g.Wo = 0;
  EXPECT_FALSE(SmallConvSupported(g));
}

// ConvTranspose with kernel = stride (SmallUpConvRows) against float64 from ConvTranspose's
// definition: 3-D 2x2x2 (the U-Nets' upsampling), anisotropic kernels, KW 1 / 4 / 8, output
// widths with tails, channel blocks with a tail, with and without bias.
TEST_P(SmallConvTest, UpConvMatchesFloat64ConvTranspose) {
  struct UpCase {
    std::string name;
    int64_t C, M, D, H, W, KD, KH, KW;
    bool bias;
  };
  const std::vector<UpCase> cases = {
      {"3d_16_to_8_k2", 16, 8, 3, 4, 9, 2, 2, 2, true},      {"3d_32_to_16_k2", 32, 16, 2, 3, 16, 2, 2, 2, true},
      {"3d_3_to_9_k1x2x4", 3, 9, 2, 3, 5, 1, 2, 4, false},   {"2d_5_to_3_k3x8", 5, 3, 1, 4, 3, 1, 3, 8, true},
      {"3d_4_to_2_k2x1x1", 4, 2, 3, 2, 21, 2, 1, 1, true},
  };
  for (const UpCase& c : cases) {
    SCOPED_TRACE(c.name);
    SmallConvGeom g;
    g.C = c.C, g.M = c.M, g.D = c.D, g.H = c.H, g.W = c.W, g.KD = c.KD, g.KH = c.KH, g.KW = c.KW;
    g.Do = c.D * c.KD, g.Ho = c.H * c.KH, g.Wo = c.W * c.KW;
    ASSERT_TRUE(SmallUpConvSupported(g));
    const int64_t batch = 2, in_item = c.C * c.D * c.H * c.W, out_item = c.M * g.Do * g.Ho * g.Wo;
    const std::vector<float> x = Random(batch * in_item, 7), w = Random(c.C * c.M * c.KD * c.KH * c.KW, 8), b = Random(c.M, 9);
    std::vector<float> packed(static_cast<size_t>(SmallUpConvPackedSize(g)));
    PackSmallUpConvWeights(g, w.data(), packed.data());
    SmallConvEpilogue e;
    e.bias = c.bias ? b.data() : nullptr;
    std::vector<float> y(static_cast<size_t>(batch * out_item), -777.f);
    for (int64_t n = 0; n < batch; ++n) {
      const std::vector<float> item(x.begin() + n * in_item, x.begin() + (n + 1) * in_item);
      for (int64_t r = 0; r < c.D * c.H; r += 2)
        SmallUpConvRows(g, item.data(), packed.data(), e, y.data() + n * out_item, r, std::min(c.D * c.H, r + 2));
    }
    int64_t bad = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t od = 0; od < g.Do; ++od)
          for (int64_t oh = 0; oh < g.Ho; ++oh)
            for (int64_t ow = 0; ow < g.Wo; ++ow) {
              double s = c.bias ? b[m] : 0.0;
              for (int64_t ci = 0; ci < c.C; ++ci)
                s += static_cast<double>(x[static_cast<size_t>(n * in_item + ((ci * c.D + od / c.KD) * c.H + oh / c.KH) * c.W + ow / c.KW)]) *
                     w[static_cast<size_t>((((ci * c.M + m) * c.KD + od % c.KD) * c.KH + oh % c.KH) * c.KW + ow % c.KW)];
              const double got = y[static_cast<size_t>(n * out_item + ((m * g.Do + od) * g.Ho + oh) * g.Wo + ow)];
              if (!(std::fabs(got - s) <= 1e-4 * (1 + std::fabs(s))) && bad++ < 5)
                ADD_FAILURE() << "n=" << n << " m=" << m << " " << od << "," << oh << "," << ow << ": " << got << " vs " << s;
            }
    EXPECT_EQ(bad, 0);
  }
}

TEST_P(SmallConvTest, UpConvTakesOnlyKernelEqualStrideShapes) {
  SmallConvGeom g;
  g.C = 4, g.M = 4, g.D = 2, g.H = 2, g.W = 8, g.KD = g.KH = g.KW = 2, g.Do = 4, g.Ho = 4, g.Wo = 16;
  EXPECT_TRUE(SmallUpConvSupported(g));
  SmallConvGeom odd = g;
  odd.KW = 3, odd.Wo = 24;  // 3 column phases do not repeat within a vector
  EXPECT_FALSE(SmallUpConvSupported(odd));
  SmallConvGeom padded = g;
  padded.pw = 1;
  EXPECT_FALSE(SmallUpConvSupported(padded));
  SmallConvGeom wrong_out = g;
  wrong_out.Ho = 5;
  EXPECT_FALSE(SmallUpConvSupported(wrong_out));
  SmallConvGeom wide = g;
  wide.C = 64, wide.W = 300, wide.Wo = 600;  // a widened row past kSmallUpConvMaxRow
  EXPECT_FALSE(SmallUpConvSupported(wide));
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SmallConvTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         IsaParamName);

}  // namespace
}  // namespace simd
}  // namespace inferloop
