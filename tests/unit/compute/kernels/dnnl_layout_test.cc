// The channel-blocked chains (NCHW16c and NCHW8c): ReorderToNchwc -> FusedConv / pools with that
// layout -> ReorderFromNchwc gives what the plain ONNX graph gives (float64 reference), with channel
// counts that are not multiples of the block, a plain-input first convolution, a residual Z, a
// depthwise convolution and every pool kind; plus the errors of malformed blocked inputs.
#include <cstdio>
#include <cstdlib>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_kernels.h"
#include "unit/compute/kernels/dnnl_test_util.h"

namespace inferloop {
namespace {

using namespace dnnl_test;

struct Weights {
  Shape shape;
  std::vector<double> w, b;
};

Weights MakeWeights(Shape shape, uint32_t seed) {
  return {shape, RandomValues(Count(shape), seed), RandomValues(shape[0], seed + 100)};
}

void AddInput(ModelBuilder& m, const std::string& name, DataType t) {
  auto* vi = m.proto().mutable_graph()->add_input();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
}

void AddOutput(ModelBuilder& m, const std::string& name, DataType t) {
  auto* vo = m.proto().mutable_graph()->add_output();
  vo->set_name(name);
  vo->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
}


Result<std::vector<NamedValue>> RunModel(ModelBuilder& m, const std::vector<NamedValue>& feeds, int threads) {
  SessionOptions so;
  so.optimization_level = 0;
  so.intra_op_threads = threads;
  const std::string bytes = m.Bytes();
  IL_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::CreateFromBytes(bytes.data(), bytes.size(), so));
  return s->Run(feeds);
}

// x [2, 24, 12, 12] -> conv1 3x3 (24 -> 40) + Relu -> MaxPool 2x2 -> conv2 1x1 (40 -> 40) + Z
// (the pool output) + Clip(0, 6) -> depthwise 3x3 (40) -> outputs: y2 (after conv2) and g
// (GlobalAveragePool of the depthwise output). Also avg (AveragePool 3x3 s2 pad 1 with
// count_include_pad of conv1's output), gmax (GlobalMaxPool of it), and two MaxPools of the
// depthwise output (which has negative values, so padding must never win): mp 3x3 stride 2 pad 1
// (ResNet's) and mpd 2x2 with dilation 2, pad 1.
void CheckBlockedChain(const std::string& layout) {
  const Weights w1 = MakeWeights({40, 24, 3, 3}, 1), w2 = MakeWeights({40, 40, 1, 1}, 2), w3 = MakeWeights({40, 1, 3, 3}, 3);
  const Shape xs{2, 24, 12, 12};
  const std::vector<double> xv = RandomValues(Count(xs), 9);

  // Reference: the plain ONNX graph in float64.
  ModelBuilder ref(17);
  const DataType f64 = DataType::kDouble;
  AddInput(ref, "x", f64);
  for (auto [name, wt] : {std::pair{"1", &w1}, std::pair{"2", &w2}, std::pair{"3", &w3}}) {
    ref.Initializer(std::string("w") + name, MakeTensor(f64, wt->shape, wt->w));
    ref.Initializer(std::string("b") + name, MakeTensor(f64, {wt->shape[0]}, wt->b));
  }
  IntsAttr(ref.Node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  ref.Node("Relu", {"c1"}, {"r1"});
  auto& rp = ref.Node("MaxPool", {"r1"}, {"p1"});
  IntsAttr(rp, "kernel_shape", {2, 2});
  IntsAttr(rp, "strides", {2, 2});
  ref.Node("Conv", {"p1", "w2", "b2"}, {"c2"});
  ref.Node("Add", {"c2", "p1"}, {"a2"});
  ref.Initializer("lo", Tensor::FromVector<double>(f64, {}, {0.0})).Initializer("hi", Tensor::FromVector<double>(f64, {}, {6.0}));
  ref.Node("Clip", {"a2", "lo", "hi"}, {"y2"});
  auto& rdw = ref.Node("Conv", {"y2", "w3", "b3"}, {"c3"});
  ModelBuilder::IntAttr(rdw, "group", 40);
  IntsAttr(rdw, "pads", {1, 1, 1, 1});
  ref.Node("GlobalAveragePool", {"c3"}, {"g"});
  auto& ravg = ref.Node("AveragePool", {"r1"}, {"avg"});
  IntsAttr(ravg, "kernel_shape", {3, 3});
  IntsAttr(ravg, "strides", {2, 2});
  IntsAttr(ravg, "pads", {1, 1, 1, 1});
  ModelBuilder::IntAttr(ravg, "count_include_pad", 1);
  ref.Node("GlobalMaxPool", {"r1"}, {"gmax"});
  auto max_pools = [&layout](ModelBuilder& b, const std::string& x, const std::string& suffix, const std::string& dom) {
    auto& mp = b.Node("MaxPool", {x}, {"mp" + suffix}, dom);
    IntsAttr(mp, "kernel_shape", {3, 3});
    IntsAttr(mp, "strides", {2, 2});
    IntsAttr(mp, "pads", {1, 1, 1, 1});
    auto& mpd = b.Node("MaxPool", {x}, {"mpd" + suffix}, dom);
    IntsAttr(mpd, "kernel_shape", {2, 2});
    IntsAttr(mpd, "dilations", {2, 2});
    IntsAttr(mpd, "pads", {1, 1, 1, 1});
    if (!dom.empty()) {
      StrAttr(mp, "layout", layout);
      StrAttr(mpd, "layout", layout);
    }
  };
  max_pools(ref, "c3", "", "");
  for (const char* o : {"y2", "g", "avg", "gmax", "mp", "mpd"}) AddOutput(ref, o, f64);
  auto want = RunModel(ref, {{"x", Value(MakeTensor(f64, xs, xv))}}, 1);
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  for (bool plain_first : {false, true}) {
    ModelBuilder m(17);
    auto* op = m.proto().add_opset_import();
    op->set_domain("com.inferloop");
    op->set_version(1);
    const DataType f32 = DataType::kFloat;
    const std::string dom = "com.inferloop";
    AddInput(m, "x", f32);
    for (auto [name, wt] : {std::pair{"1", &w1}, std::pair{"2", &w2}, std::pair{"3", &w3}}) {
      m.Initializer(std::string("w") + name, MakeTensor(f32, wt->shape, wt->w));
      m.Initializer(std::string("b") + name, MakeTensor(f32, {wt->shape[0]}, wt->b));
    }
    if (!plain_first) StrAttr(m.Node("ReorderToNchwc", {"x"}, {"xb"}, dom), "layout", layout);
    auto& c1 = m.Node("FusedConv", {plain_first ? "x" : "xb", "w1", "b1"}, {"r1b"}, dom);
    IntsAttr(c1, "pads", {1, 1, 1, 1});
    StrAttr(c1, "activation", "Relu");
    StrAttr(c1, "layout", layout);
    auto& p1 = m.Node("MaxPool", {"r1b"}, {"p1b"}, dom);
    IntsAttr(p1, "kernel_shape", {2, 2});
    IntsAttr(p1, "strides", {2, 2});
    StrAttr(p1, "layout", layout);
    auto& c2 = m.Node("FusedConv", {"p1b", "w2", "b2", "p1b"}, {"y2b"}, dom);
    StrAttr(c2, "activation", "Clip");
    auto* ap = c2.add_attribute();
    ap->set_name("activation_params");
    ap->set_type(onnxpb::AttributeProto::FLOATS);
    ap->add_floats(0.f);
    ap->add_floats(6.f);
    StrAttr(c2, "layout", layout);
    auto& c3 = m.Node("FusedConv", {"y2b", "w3", "b3"}, {"c3b"}, dom);
    ModelBuilder::IntAttr(c3, "group", 40);
    IntsAttr(c3, "pads", {1, 1, 1, 1});
    StrAttr(c3, "layout", layout);
    StrAttr(m.Node("GlobalAveragePool", {"c3b"}, {"gb"}, dom), "layout", layout);
    auto& avg = m.Node("AveragePool", {"r1b"}, {"avgb"}, dom);
    IntsAttr(avg, "kernel_shape", {3, 3});
    IntsAttr(avg, "strides", {2, 2});
    IntsAttr(avg, "pads", {1, 1, 1, 1});
    ModelBuilder::IntAttr(avg, "count_include_pad", 1);
    StrAttr(avg, "layout", layout);
    StrAttr(m.Node("GlobalMaxPool", {"r1b"}, {"gmaxb"}, dom), "layout", layout);
    max_pools(m, "c3b", "b", dom);
    for (auto [from, to] : {std::pair{"y2b", "y2"}, std::pair{"gb", "g"}, std::pair{"avgb", "avg"}, std::pair{"gmaxb", "gmax"},
                            std::pair{"mpb", "mp"}, std::pair{"mpdb", "mpd"}}) {
      auto& back = m.Node("ReorderFromNchwc", {from}, {to}, dom);
      ModelBuilder::IntAttr(back, "channels", 40);
      StrAttr(back, "layout", layout);
      AddOutput(m, to, f32);
    }
    for (int threads : {1, 2}) {
      auto got = RunModel(m, {{"x", Value(MakeTensor(f32, xs, xv))}}, threads);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(got->size(), 6u);
      for (size_t i = 0; i < 6; ++i) {
        const Tensor& r = (*want)[i].second.tensor();
        ExpectClose((*got)[i].second.tensor(), r.shape(), ToDoubles(r), 1e-4,
                    (*got)[i].first + (plain_first ? " (plain first conv)" : "") + " threads=" + std::to_string(threads) + " " + layout);
      }
    }
  }
}

TEST(DnnlLayout, BlockedChainMatchesPlainGraph) {
  CheckBlockedChain("NCHW16c");
  CheckBlockedChain("NCHW8c");
}

// The same on the AVX2 path (in a fresh process: oneDNN reads its ISA once), where oneDNN has only
// its reference kernel for max pooling on 16-channel blocks and the pools run BlockedMaxPool, and
// NCHW8c is the block its convolutions take.
TEST(DnnlLayout, BlockedChainMatchesPlainGraphOnAvx2) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("INFERLOOP_ISA", "avx2", 1);
        unsetenv("ONEDNN_MAX_CPU_ISA");
        CheckBlockedChain("NCHW16c");
        CheckBlockedChain("NCHW8c");
        std::fprintf(stderr, "blocked chain on avx2: %s\n", ::testing::Test::HasFailure() ? "failed" : "passed");
        std::exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "blocked chain on avx2: passed");
}

// ReorderToNchwc then ReorderFromNchwc with `layout` ("" = the attribute absent: NCHW16c) on
// 20 channels: the storage [N, ceil(20/B), S..., B] holds each value at its place and zeros in
// the padded channels, and the round trip gives X back.
void CheckReorderRoundTrip(const std::string& layout, int64_t block) {
  SCOPED_TRACE("layout " + (layout.empty() ? std::string("(absent)") : layout));
  const Shape xs{2, 20, 3, 5};
  const std::vector<double> xv = RandomValues(Count(xs), 4);
  ModelBuilder m(17);
  auto* op = m.proto().add_opset_import();
  op->set_domain("com.inferloop");
  op->set_version(1);
  AddInput(m, "x", DataType::kFloat);
  auto& to = m.Node("ReorderToNchwc", {"x"}, {"xb"}, "com.inferloop");
  auto& back = m.Node("ReorderFromNchwc", {"xb"}, {"y"}, "com.inferloop");
  ModelBuilder::IntAttr(back, "channels", 20);
  if (!layout.empty()) {
    StrAttr(to, "layout", layout);
    StrAttr(back, "layout", layout);
  }
  AddOutput(m, "xb", DataType::kFloat);
  AddOutput(m, "y", DataType::kFloat);
  auto got = RunModel(m, {{"x", Value(MakeTensor(DataType::kFloat, xs, xv))}}, 1);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const Tensor& xb = (*got)[0].second.tensor();
  const int64_t blocks = (20 + block - 1) / block;
  ASSERT_EQ(xb.shape(), (Shape{2, blocks, 3, 5, block}));
  const float* pb = xb.data<float>();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < blocks * block; ++c)
      for (int64_t sp = 0; sp < 15; ++sp) {
        const float v = pb[((n * blocks + c / block) * 15 + sp) * block + c % block];
        const double want = c < 20 ? xv[(n * 20 + c) * 15 + sp] : 0.0;  // padded channels are zero
        ASSERT_EQ(v, static_cast<float>(want)) << n << "," << c << "," << sp;
      }
  ExpectClose((*got)[1].second.tensor(), xs, xv, 0, "round trip");
}

// ReorderFromNchwc with `channels` (and `layout`, unless empty) on a [1, 2, 3, 3, 16] tensor:
// its status.
Status FromNchwcStatus(int64_t channels, const std::string& layout) {
  ModelBuilder bad(17);
  auto* op = bad.proto().add_opset_import();
  op->set_domain("com.inferloop");
  op->set_version(1);
  AddInput(bad, "xb", DataType::kFloat);
  auto& from = bad.Node("ReorderFromNchwc", {"xb"}, {"y"}, "com.inferloop");
  ModelBuilder::IntAttr(from, "channels", channels);
  if (!layout.empty()) StrAttr(from, "layout", layout);
  AddOutput(bad, "y", DataType::kFloat);
  return RunModel(bad, {{"xb", Value(MakeTensor(DataType::kFloat, {1, 2, 3, 3, 16}, RandomValues(288, 1)))}}, 1).status();
}

TEST(DnnlLayout, ReordersRoundTripAndCheckShapes) {
  CheckReorderRoundTrip("", 16);
  CheckReorderRoundTrip("NCHW16c", 16);
  CheckReorderRoundTrip("NCHW8c", 8);
  // A blocked tensor whose block count does not match `channels`.
  const Status r = FromNchwcStatus(40, "");
  EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.message().find("channels = 40"), std::string::npos) << r.ToString();
  // A 16-blocked tensor is not an 8-blocked one.
  const Status r8 = FromNchwcStatus(20, "NCHW8c");
  EXPECT_EQ(r8.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r8.message().find("NCHW8c"), std::string::npos) << r8.ToString();
  // A reorder's layout must be a blocked one, and a known one.
  for (const char* layout : {"NCHW", "NCHW4c"}) {
    const Status bad = FromNchwcStatus(20, layout);
    EXPECT_FALSE(bad.ok()) << layout;
    EXPECT_NE(bad.message().find("NCHW16c"), std::string::npos) << bad.ToString();
    EXPECT_NE(bad.message().find(layout), std::string::npos) << bad.ToString();
  }
}

TEST(DnnlLayout, BlockedConvRejectsMismatchedInputAndUnknownLayout) {
  ModelBuilder m(17);
  auto* op = m.proto().add_opset_import();
  op->set_domain("com.inferloop");
  op->set_version(1);
  AddInput(m, "xb", DataType::kFloat);
  m.Initializer("w", MakeTensor(DataType::kFloat, {8, 24, 1, 1}, RandomValues(192, 1)));
  StrAttr(m.Node("FusedConv", {"xb", "w"}, {"y"}, "com.inferloop"), "layout", "NCHW16c");
  AddOutput(m, "y", DataType::kFloat);
  // 24 channels need 2 blocks; 3 given.
  auto r = RunModel(m, {{"xb", Value(MakeTensor(DataType::kFloat, {1, 3, 2, 2, 16}, RandomValues(192, 2)))}}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("NCHW16c"), std::string::npos) << r.status().ToString();

  ModelBuilder u(17);
  op = u.proto().add_opset_import();
  op->set_domain("com.inferloop");
  op->set_version(1);
  AddInput(u, "x", DataType::kFloat);
  u.Initializer("w", MakeTensor(DataType::kFloat, {8, 24, 1, 1}, RandomValues(192, 1)));
  StrAttr(u.Node("FusedConv", {"x", "w"}, {"y"}, "com.inferloop"), "layout", "NHWC");
  AddOutput(u, "y", DataType::kFloat);
  const std::string bytes = u.Bytes();
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("NHWC"), std::string::npos) << s.status().ToString();
}

}  // namespace
}  // namespace inferloop
