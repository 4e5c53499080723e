// Focused tests for the image and signal kernels: Resize validation and legacy rounding,
// GridSample/RoiAlign/NMS input checks, FFT of awkward lengths against a naive DFT, STFT and
// TfIdfVectorizer edge cases, ImageDecoder on small in-memory files and corrupt data.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <numbers>
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
using testing::I64;
using testing::U8;

void StrsAttr(onnxpb::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

// One-node model; an input named "" is omitted.

using testing::Make;

void ExpectInvalid(const Result<std::vector<NamedValue>>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
}

// ---------------------------------------------------------------------------------------------

TEST(ImageKernels, ResizeRejectsBadParameters) {
  auto s = Make(OneNodeModel(19, "Resize", {{"x", DataType::kFloat}, {"", DataType::kFloat}, {"scales", DataType::kFloat}, {"sizes", DataType::kInt64}},
                      {{"y", DataType::kFloat}}, [](auto& n) { StrAttr(n, "mode", "linear"); }));
  ASSERT_TRUE(s);
  Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  ExpectInvalid(s->Run({{"x", x}, {"scales", F32({4}, {1, 1, 2, 2})}, {"sizes", I64({4}, {1, 1, 4, 4})}}), "only one");
  ExpectInvalid(s->Run({{"x", x}, {"scales", F32({3}, {1, 2, 2})}, {"sizes", I64({0}, {})}}), "expected 4 scales");
  ExpectInvalid(s->Run({{"x", x}, {"scales", F32({4}, {1, 1, 0, 2})}, {"sizes", I64({0}, {})}}), "positive");
  ExpectInvalid(s->Run({{"x", x}, {"scales", F32({0}, {})}, {"sizes", I64({4}, {1, 1, -1, 2})}}), "non-negative");

  auto sa = Make(OneNodeModel(19, "Resize", {{"x", DataType::kFloat}, {"", DataType::kFloat}, {"", DataType::kFloat}, {"sizes", DataType::kInt64}},
                       {{"y", DataType::kFloat}}, [](auto& n) { IntsAttr(n, "axes", {2, 7}); }));
  ASSERT_TRUE(sa);
  ExpectInvalid(sa->Run({{"x", x}, {"sizes", I64({2}, {3, 3})}}), "out of range");

  // Unknown modes are rejected when the session is created.
  std::string bad = OneNodeModel(19, "Resize", {{"x", DataType::kFloat}, {"", DataType::kFloat}, {"scales", DataType::kFloat}},
                          {{"y", DataType::kFloat}}, [](auto& n) { StrAttr(n, "mode", "lanczos"); });
  auto sb = Session::CreateFromBytes(bad.data(), bad.size(), SessionOptions{});
  EXPECT_FALSE(sb.ok());
}

TEST(ImageKernels, ResizeCubicUint8Saturates) {
  auto s = Make(OneNodeModel(19, "Resize", {{"x", DataType::kUInt8}, {"", DataType::kFloat}, {"scales", DataType::kFloat}},
                      {{"y", DataType::kUInt8}}, [](auto& n) {
                        StrAttr(n, "mode", "cubic");
                        StrAttr(n, "coordinate_transformation_mode", "align_corners");
                      }));
  ASSERT_TRUE(s);
  // Cubic overshoot near a step must saturate to [0, 255], not wrap.
  auto r = s->Run({{"x", U8({1, 4}, {0, 0, 255, 255})}, {"scales", F32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 8}));
  EXPECT_EQ(y.data<uint8_t>()[0], 0);
  EXPECT_EQ(y.data<uint8_t>()[7], 255);
  for (int i = 0; i < 7; ++i) EXPECT_LE(y.data<uint8_t>()[i], y.data<uint8_t>()[i + 1]) << i;
}

TEST(ImageKernels, UpsampleNearestLegacy) {
  auto s = Make(OneNodeModel(9, "Upsample", {{"x", DataType::kFloat}, {"scales", DataType::kFloat}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"scales", F32({2}, {2, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 6}));
  const float want[] = {1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[6 + i], want[i]);
}

TEST(ImageKernels, GridSampleChecksGridShape) {
  auto s = Make(OneNodeModel(20, "GridSample", {{"x", DataType::kFloat}, {"g", DataType::kFloat}}, {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  ExpectInvalid(s->Run({{"x", x}, {"g", F32({1, 1, 1, 3}, {0, 0, 0})}}), "grid");
  ExpectInvalid(s->Run({{"x", x}, {"g", F32({2, 1, 1, 2}, {0, 0, 0, 0})}}), "grid");
  // The centre of a 2x2 image averages all four pixels.
  auto r = s->Run({{"x", x}, {"g", F32({1, 1, 1, 2}, {0, 0})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ((*r)[0].second.tensor().data<float>()[0], 2.5f);
}

TEST(ImageKernels, RoiAlignRejectsBadBatchIndex) {
  auto s = Make(OneNodeModel(16, "RoiAlign", {{"x", DataType::kFloat}, {"rois", DataType::kFloat}, {"bi", DataType::kInt64}},
                      {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  ExpectInvalid(s->Run({{"x", x}, {"rois", F32({1, 4}, {0, 0, 1, 1})}, {"bi", I64({1}, {1})}}), "out of range");
  ExpectInvalid(s->Run({{"x", x}, {"rois", F32({1, 3}, {0, 0, 1})}, {"bi", I64({1}, {0})}}), "rois");
}

TEST(ImageKernels, NonMaxSuppressionTiesAndLimits) {
  auto s = Make(OneNodeModel(11, "NonMaxSuppression",
                      {{"boxes", DataType::kFloat}, {"scores", DataType::kFloat}, {"max", DataType::kInt64}, {"iou", DataType::kFloat}},
                      {{"sel", DataType::kInt64}}));
  ASSERT_TRUE(s);
  // Three disjoint boxes; equal scores keep the lower index first.
  Tensor boxes = F32({1, 3, 4}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
  Tensor scores = F32({1, 1, 3}, {0.5f, 0.9f, 0.5f});
  auto r = s->Run({{"boxes", boxes}, {"scores", scores}, {"max", I64({1}, {2})}, {"iou", F32({1}, {0.5f})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& sel = (*r)[0].second.tensor();
  ASSERT_EQ(sel.shape(), (Shape{2, 3}));
  EXPECT_EQ(sel.data<int64_t>()[2], 1);
  EXPECT_EQ(sel.data<int64_t>()[5], 0);
  // max_output_boxes_per_class = 0 selects nothing.
  r = s->Run({{"boxes", boxes}, {"scores", scores}, {"max", I64({1}, {0})}, {"iou", F32({1}, {0.5f})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{0, 3}));
  ExpectInvalid(s->Run({{"boxes", boxes}, {"scores", F32({1, 1, 2}, {1, 2})}, {"max", I64({1}, {2})}, {"iou", F32({1}, {0.5f})}}),
                "scores");
}

// Naive DFT for checking the FFT on awkward lengths.
std::vector<std::complex<double>> NaiveDft(const std::vector<std::complex<double>>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<std::complex<double>> y(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < n; ++j) {
      const double a = (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      y[k] += x[j] * std::complex<double>(std::cos(a), std::sin(a));
    }
  if (inverse)
    for (auto& v : y) v /= static_cast<double>(n);
  return y;
}

TEST(SignalKernels, DftMatchesNaiveForAnyLength) {
  auto s = Make(OneNodeModel(20, "DFT", {{"x", DataType::kDouble}, {"", DataType::kInt64}, {"axis", DataType::kInt64}},
                      {{"y", DataType::kDouble}}));
  auto si = Make(OneNodeModel(20, "DFT", {{"x", DataType::kDouble}, {"", DataType::kInt64}, {"axis", DataType::kInt64}},
                       {{"y", DataType::kDouble}}, [](auto& n) { ModelBuilder::IntAttr(n, "inverse", 1); }));
  ASSERT_TRUE(s && si);
  for (int64_t n : {1, 2, 3, 7, 12, 16, 97, 100}) {
    std::vector<double> data(static_cast<size_t>(2 * n));
    std::vector<std::complex<double>> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      x[i] = {std::sin(0.3 * i + 1), std::cos(1.7 * i)};
      data[2 * i] = x[i].real();
      data[2 * i + 1] = x[i].imag();
    }
    Tensor xt = Tensor::FromVector<double>(DataType::kDouble, {n, 2}, data);
    for (bool inv : {false, true}) {
      auto r = (inv ? si : s)->Run({{"x", xt}, {"axis", I64({}, {0})}});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const Tensor& y = (*r)[0].second.tensor();
      ASSERT_EQ(y.shape(), (Shape{n, 2}));
      auto want = NaiveDft(x, inv);
      for (int64_t k = 0; k < n; ++k) {
        EXPECT_NEAR(y.data<double>()[2 * k], want[k].real(), 1e-9) << "n=" << n << " k=" << k;
        EXPECT_NEAR(y.data<double>()[2 * k + 1], want[k].imag(), 1e-9) << "n=" << n << " k=" << k;
      }
    }
  }
  // The last axis holds real/imaginary parts and is not a valid DFT axis.
  ExpectInvalid(s->Run({{"x", Tensor::FromVector<double>(DataType::kDouble, {4, 1}, {1, 2, 3, 4})}, {"axis", I64({}, {-1})}}),
                "axis");
}

TEST(SignalKernels, IrfftInvertsRfft) {
  auto fwd = Make(OneNodeModel(20, "DFT", {{"x", DataType::kFloat}, {"len", DataType::kInt64}, {"axis", DataType::kInt64}},
                        {{"y", DataType::kFloat}}, [](auto& n) { ModelBuilder::IntAttr(n, "onesided", 1); }));
  auto inv = Make(OneNodeModel(20, "DFT", {{"x", DataType::kFloat}, {"len", DataType::kInt64}, {"axis", DataType::kInt64}},
                        {{"y", DataType::kFloat}}, [](auto& n) {
                          ModelBuilder::IntAttr(n, "onesided", 1);
                          ModelBuilder::IntAttr(n, "inverse", 1);
                        }));
  ASSERT_TRUE(fwd && inv);
  Tensor x = F32({1, 9, 1}, {1, -2, 3, 0.5f, 7, 2, -1, 4, 0});
  auto r = fwd->Run({{"x", x}, {"len", I64({}, {9})}, {"axis", I64({}, {1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Tensor spec = (*r)[0].second.tensor();
  ASSERT_EQ(spec.shape(), (Shape{1, 5, 2}));
  r = inv->Run({{"x", spec}, {"len", I64({}, {9})}, {"axis", I64({}, {1})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 9, 1}));
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(y.data<float>()[i], x.data<float>()[i], 1e-5) << i;
}

TEST(SignalKernels, StftRejectsLongFrames) {
  auto s = Make(OneNodeModel(17, "STFT", {{"x", DataType::kFloat}, {"step", DataType::kInt64}, {"", DataType::kFloat}, {"len", DataType::kInt64}},
                      {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  Tensor x = F32({1, 4, 1}, {1, 2, 3, 4});
  ExpectInvalid(s->Run({{"x", x}, {"step", I64({}, {1})}, {"len", I64({}, {5})}}), "exceeds");
  ExpectInvalid(s->Run({{"x", x}, {"step", I64({}, {0})}, {"len", I64({}, {2})}}), "frame_step");
  auto r = s->Run({{"x", x}, {"step", I64({}, {2})}, {"len", I64({}, {2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{1, 2, 2, 2}));
  EXPECT_FLOAT_EQ((*r)[0].second.tensor().data<float>()[0], 3.0f);  // DC of [1, 2]
}

TEST(SignalKernels, TfIdfStringsAndTypeMismatch) {
  auto s = Make(OneNodeModel(9, "TfIdfVectorizer", {{"x", DataType::kString}}, {{"y", DataType::kFloat}}, [](auto& n) {
    StrAttr(n, "mode", "TF");
    ModelBuilder::IntAttr(n, "min_gram_length", 1);
    ModelBuilder::IntAttr(n, "max_gram_length", 2);
    ModelBuilder::IntAttr(n, "max_skip_count", 0);
    IntsAttr(n, "ngram_counts", {0, 2});
    IntsAttr(n, "ngram_indexes", {0, 1, 2});
    StrsAttr(n, "pool_strings", {"a", "b", "a", "b"});
  }));
  ASSERT_TRUE(s);
  auto r = s->Run({{"x", Tensor::FromStrings({5}, {"a", "b", "a", "b", "c"})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{3}));
  EXPECT_EQ(y.data<float>()[0], 2);  // "a"
  EXPECT_EQ(y.data<float>()[1], 2);  // "b"
  EXPECT_EQ(y.data<float>()[2], 2);  // "a b"
}

TEST(SignalKernels, TfIdfRejectsInputOfTheWrongKind) {
  auto s = Make(OneNodeModel(9, "TfIdfVectorizer", {{"x", DataType::kInt64}}, {{"y", DataType::kFloat}}, [](auto& n) {
    StrAttr(n, "mode", "TF");
    ModelBuilder::IntAttr(n, "min_gram_length", 1);
    ModelBuilder::IntAttr(n, "max_gram_length", 1);
    ModelBuilder::IntAttr(n, "max_skip_count", 0);
    IntsAttr(n, "ngram_counts", {0});
    IntsAttr(n, "ngram_indexes", {0});
    StrsAttr(n, "pool_strings", {"a"});
  }));
  ASSERT_TRUE(s);
  ExpectInvalid(s->Run({{"x", I64({2}, {1, 2})}}), "does not match");
}

TEST(SignalKernels, MelWeightMatrixRejectsEdgesAboveNyquist) {
  auto s = Make(OneNodeModel(17, "MelWeightMatrix",
                      {{"m", DataType::kInt64}, {"d", DataType::kInt64}, {"sr", DataType::kInt64}, {"lo", DataType::kFloat}, {"hi", DataType::kFloat}},
                      {{"y", DataType::kFloat}}));
  ASSERT_TRUE(s);
  auto run = [&](float hi) {
    return s->Run({{"m", I64({}, {4})}, {"d", I64({}, {16})}, {"sr", I64({}, {1000})}, {"lo", F32({}, {0})}, {"hi", F32({}, {hi})}});
  };
  auto r = run(500);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().shape(), (Shape{9, 4}));
  ExpectInvalid(run(5000), "upper_edge_hertz");
}

// A 2x1 24-bit BMP: bottom row first, BGR, rows padded to 4 bytes.
std::vector<uint8_t> TinyBmp() {
  std::vector<uint8_t> b(54 + 8, 0);
  auto le32 = [&](size_t o, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[o + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B', b[1] = 'M';
  le32(2, static_cast<uint32_t>(b.size()));
  le32(10, 54);
  le32(14, 40);
  le32(18, 1);   // width
  le32(22, 2);   // height (bottom-up)
  b[26] = 1;     // planes
  b[28] = 24;    // bpp
  const uint8_t px[8] = {30, 20, 10, 0, 60, 50, 40, 0};  // bottom: rgb(10,20,30); top: rgb(40,50,60)
  std::copy(px, px + 8, b.begin() + 54);
  return b;
}

TEST(ImageKernels, ImageDecoderBmpPnmAndCorruptData) {
  auto rgb = Make(OneNodeModel(20, "ImageDecoder", {{"x", DataType::kUInt8}}, {{"y", DataType::kUInt8}}));
  auto gray = Make(OneNodeModel(20, "ImageDecoder", {{"x", DataType::kUInt8}}, {{"y", DataType::kUInt8}},
                         [](auto& n) { StrAttr(n, "pixel_format", "Grayscale"); }));
  ASSERT_TRUE(rgb && gray);
  std::vector<uint8_t> bmp = TinyBmp();
  auto r = rgb->Run({{"x", U8({static_cast<int64_t>(bmp.size())}, bmp)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& y = (*r)[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 1, 3}));
  const uint8_t want[6] = {40, 50, 60, 10, 20, 30};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<uint8_t>()[i], want[i]) << i;

  const std::string pgm = "P2\n# comment\n2 1\n255\n0 255\n";
  std::vector<uint8_t> pb(pgm.begin(), pgm.end());
  r = gray->Run({{"x", U8({static_cast<int64_t>(pb.size())}, pb)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)[0].second.tensor().shape(), (Shape{1, 2, 1}));
  EXPECT_EQ((*r)[0].second.tensor().data<uint8_t>()[1], 255);

  // Every truncation of the BMP fails cleanly.
  for (size_t len = 0; len + 1 < bmp.size(); len += 3) {
    std::vector<uint8_t> cut(bmp.begin(), bmp.begin() + static_cast<std::ptrdiff_t>(len));
    auto rc = rgb->Run({{"x", U8({static_cast<int64_t>(len)}, cut)}});
    EXPECT_FALSE(rc.ok()) << len;
  }
  const std::vector<uint8_t> junk = {0xff, 0xd8, 0xff, 0x00, 1, 2, 3};
  EXPECT_FALSE(rgb->Run({{"x", U8({7}, junk)}}).ok());
  const std::vector<uint8_t> png_junk = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
  EXPECT_FALSE(rgb->Run({{"x", U8({12}, png_junk)}}).ok());
}

}  // namespace
}  // namespace inferloop
