// The oneDNN float32 Conv / FusedConv against the scalar float64 path: 1x1, 3x3 (Winograd-
// eligible), depthwise, grouped, strided, dilated, asymmetric and SAME pads, 1-D / 2-D / 3-D,
// batch 1 and 8, constant (pre-packed) and run-time weights, 1 and 2 threads; every fused
// activation with and without the residual Z; shape changes, concurrency, errors.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "compute/kernels/dnnl_kernels.h"
#include "compute/tuning_cache.h"
#include "unit/compute/kernels/dnnl_test_util.h"

namespace inferloop {
namespace {

using namespace dnnl_test;

struct ConvCase {
  std::string name{};
  Shape x{}, w{};
  int64_t group = 1;
  std::vector<int64_t> strides{}, dilations{}, pads{};
  std::string auto_pad{};
  bool bias = true;
};

OneNode ConvNode(const ConvCase& c, bool const_w, uint32_t seed) {
  OneNode n;
  n.op = "Conv";
  n.inputs.push_back({"x", c.x, RandomValues(Count(c.x), seed), false});
  n.inputs.push_back({"w", c.w, RandomValues(Count(c.w), seed + 1), const_w});
  if (c.bias) n.inputs.push_back({"b", {c.w[0]}, RandomValues(c.w[0], seed + 2), const_w});
  n.attrs = [c](onnxpb::NodeProto& p) {
    if (c.group != 1) ModelBuilder::IntAttr(p, "group", c.group);
    if (!c.strides.empty()) IntsAttr(p, "strides", c.strides);
    if (!c.dilations.empty()) IntsAttr(p, "dilations", c.dilations);
    if (!c.pads.empty()) IntsAttr(p, "pads", c.pads);
    if (!c.auto_pad.empty()) StrAttr(p, "auto_pad", c.auto_pad);
  };
  return n;
}

std::vector<ConvCase> Cases() {
  return {
      {.name = "pointwise", .x = {1, 16, 8, 8}, .w = {32, 16, 1, 1}},
      {.name = "3x3_pad1_winograd_shape", .x = {2, 8, 10, 10}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}},
      {.name = "3x3_64ch", .x = {1, 64, 14, 14}, .w = {64, 64, 3, 3}, .pads = {1, 1, 1, 1}},
      {.name = "depthwise_stride2", .x = {1, 32, 9, 9}, .w = {32, 1, 3, 3}, .group = 32, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
      {.name = "grouped_dilated_asym_pads", .x = {1, 12, 7, 7}, .w = {18, 4, 3, 3}, .group = 3, .dilations = {2, 2}, .pads = {1, 0, 2, 1}},
      {.name = "pointwise_stride2", .x = {1, 16, 9, 9}, .w = {8, 16, 1, 1}, .strides = {2, 2}},
      {.name = "first_layer_7x7", .x = {1, 3, 32, 32}, .w = {16, 3, 7, 7}, .strides = {2, 2}, .pads = {3, 3, 3, 3}},
      {.name = "conv1d", .x = {3, 5, 20}, .w = {7, 5, 4}, .strides = {3}, .dilations = {2}, .pads = {2, 1}},
      {.name = "conv3d", .x = {1, 4, 6, 7, 8}, .w = {8, 4, 3, 3, 3}, .strides = {1, 2, 1}, .pads = {1, 1, 1, 1, 1, 1}},
      {.name = "conv3d_depthwise", .x = {2, 6, 5, 5, 5}, .w = {6, 1, 3, 3, 3}, .group = 6},
      {.name = "same_upper_stride2", .x = {1, 3, 11, 10}, .w = {4, 3, 3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
      {.name = "same_lower_stride2", .x = {1, 3, 11, 10}, .w = {4, 3, 4, 4}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"},
      {.name = "valid", .x = {1, 3, 11, 10}, .w = {4, 3, 3, 2}, .auto_pad = "VALID"},
      {.name = "batch8", .x = {8, 16, 14, 14}, .w = {32, 16, 3, 3}, .pads = {1, 1, 1, 1}},
      {.name = "no_bias", .x = {1, 8, 6, 6}, .w = {8, 8, 3, 3}, .pads = {0, 1, 1, 0}, .bias = false},
  };
}

TEST(DnnlConv, MatchesScalarReference) {
  uint32_t seed = 10;
  for (const ConvCase& c : Cases()) {
    for (bool const_w : {true, false})
      CheckAgainstDouble(ConvNode(c, const_w, seed), c.name + (const_w ? " const-W" : " input-W"));
    seed += 7;
  }
}

struct DeconvCase {
  std::string name{};
  Shape x{}, w{};  // W is [C, M/group, k...]
  int64_t group = 1;
  std::vector<int64_t> strides{}, pads{}, output_padding{}, output_shape{}, dilations{};
  std::string auto_pad{};
  bool expect_dnnl = true;
};

TEST(DnnlConvTranspose, MatchesScalarReference) {
  const std::vector<DeconvCase> cases = {
      {.name = "3d_k2_s2_unet", .x = {1, 8, 4, 5, 6}, .w = {8, 4, 2, 2, 2}, .strides = {2, 2, 2}},
      {.name = "2d_k3_s2_pads", .x = {2, 6, 7, 7}, .w = {6, 5, 3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
      {.name = "2d_output_padding", .x = {1, 4, 5, 6}, .w = {4, 3, 3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .output_padding = {1, 1}},
      {.name = "2d_grouped", .x = {1, 6, 5, 5}, .w = {6, 2, 3, 3}, .group = 3, .strides = {1, 2}, .pads = {0, 1, 1, 0}},
      {.name = "2d_dilated", .x = {1, 3, 6, 6}, .w = {3, 2, 3, 2}, .strides = {1, 1}, .dilations = {2, 1}},
      {.name = "1d", .x = {2, 3, 9}, .w = {3, 4, 4}, .strides = {3}, .pads = {1, 2}},
      {.name = "2d_output_shape", .x = {1, 3, 5, 5}, .w = {3, 2, 3, 3}, .strides = {2, 2}, .output_shape = {10, 11}},
      {.name = "2d_same_upper", .x = {1, 3, 5, 4}, .w = {3, 2, 3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
      // output_padding beyond the end padding: oneDNN would need negative padding; scalar.
      {.name = "2d_output_padding_scalar", .x = {1, 2, 4, 4}, .w = {2, 2, 3, 3}, .strides = {3, 3}, .output_padding = {2, 2},
       .expect_dnnl = false},
  };
  uint32_t seed = 200;
  for (const DeconvCase& c : cases) {
    for (bool const_w : {true, false}) {
      OneNode n;
      n.op = "ConvTranspose";
      const int64_t M = c.w[1] * c.group;
      n.inputs = {{"x", c.x, RandomValues(Count(c.x), seed), false},
                  {"w", c.w, RandomValues(Count(c.w), seed + 1), const_w},
                  {"b", {M}, RandomValues(M, seed + 2), const_w}};
      n.attrs = [c](onnxpb::NodeProto& p) {
        if (c.group != 1) ModelBuilder::IntAttr(p, "group", c.group);
        if (!c.strides.empty()) IntsAttr(p, "strides", c.strides);
        if (!c.pads.empty()) IntsAttr(p, "pads", c.pads);
        if (!c.output_padding.empty()) IntsAttr(p, "output_padding", c.output_padding);
        if (!c.output_shape.empty()) IntsAttr(p, "output_shape", c.output_shape);
        if (!c.dilations.empty()) IntsAttr(p, "dilations", c.dilations);
        if (!c.auto_pad.empty()) StrAttr(p, "auto_pad", c.auto_pad);
      };
      CheckAgainstDouble(n, "ConvTranspose " + c.name + (const_w ? " const-W" : ""), 1e-4, c.expect_dnnl);
      seed += 5;
    }
  }
}

// FusedConv = act(Conv(X, W, B) + Z) for every activation, with and without Z.
TEST(DnnlConv, FusedConvActivationsAndResidual) {
  const ConvCase c{.name = "fused", .x = {2, 8, 6, 6}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}};
  for (bool with_z : {false, true}) {
    for (const ActCase& act : AllActivations()) {
      OneNode conv = ConvNode(c, true, 99);
      auto ref = RunNode(conv, DataType::kDouble);
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      std::vector<double> want = ToDoubles(*ref);
      const std::vector<double> z = RandomValues(static_cast<int64_t>(want.size()), 5);
      for (size_t i = 0; i < want.size(); ++i) want[i] = RefActivation(act.name, act.params, want[i] + (with_z ? z[i] : 0.0));

      OneNode fused = conv;
      fused.op = "FusedConv";
      fused.domain = "com.inferloop";
      if (with_z) fused.inputs.push_back({"z", ref->shape(), z, false});
      fused.attrs = [&](onnxpb::NodeProto& p) {
        conv.attrs(p);
        SetActivation(p, act);
      };
      const std::string what = "FusedConv " + (act.name.empty() ? std::string("none") : act.name) + (with_z ? " +Z" : "");
      for (int threads : {1, 2}) {
        const int64_t before = dnnl_kernels::PrimitiveExecutions();
        auto got = RunNode(fused, DataType::kFloat, threads);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
        EXPECT_GT(dnnl_kernels::PrimitiveExecutions(), before) << what;
        ExpectClose(*got, ref->shape(), want, 1e-4, what);
      }
      // float64 FusedConv: scalar Conv, epilogue in float32.
      auto got64 = RunNode(fused, DataType::kDouble);
      ASSERT_TRUE(got64.ok()) << what << " (float64): " << got64.status().ToString();
      const std::vector<double> g = ToDoubles(*got64);
      for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " f64 " << i;
    }
  }
}

// The global tuning cache on a fresh file of its own for one test (restored afterwards), and
// the keys kernels record in it.
class ScratchTuningCache {
 public:
  explicit ScratchTuningCache(const std::string& tag)
      : saved_path_(TuningCache::Global().path()),
        path_((std::filesystem::temp_directory_path() /
               ("il_" + tag + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".tsv"))
                  .string()) {
    std::filesystem::remove(path_);
    TuningCache::Global().Clear();
    TuningCache::Global().SetPath(path_);
  }
  ~ScratchTuningCache() {
    TuningCache::Global().Clear();
    TuningCache::Global().SetPath(saved_path_);
    std::filesystem::remove(path_);
  }
  // The last key recorded that contains every one of `parts` ("" when none).
  std::string KeyWith(const std::vector<std::string>& parts) const {
    std::ifstream in(path_);
    std::string line, key;
    while (std::getline(in, line)) {
      const size_t a = line.find('\t'), b = line.rfind('\t');
      if (a == std::string::npos || b <= a) continue;
      bool all = true;
      for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
      if (all) key = line.substr(a + 1, b - a - 1);
    }
    return key;
  }
  const std::string& path() const { return path_; }

 private:
  std::string saved_path_, path_;
};

// small_direct (compute/simd/small_conv.h), the kernel's own candidate for few channels, pinned
// through the tuning cache as a user's cache file would: each case runs once to record its key,
// the key is set to small_direct, and a fresh session must then run it there (FastPathExecutions)
// and match float64. A shape it cannot take (stride 2) pinned to it still runs, on oneDNN.
TEST(DnnlConv, SmallDirectPinnedByTheTuningCacheMatchesFloat64) {
  if (!AutotuneEnabled()) GTEST_SKIP() << "INFERLOOP_AUTOTUNE=0: no key is recorded to pin";
  ScratchTuningCache cache("small_direct");
  struct Pinned {
    ConvCase c;
    std::string x_key;
    ActCase act;
    bool z, expect_fast;
  };
  const std::vector<Pinned> cases = {
      {{.name = "3d_8_to_8", .x = {2, 8, 5, 6, 20}, .w = {8, 8, 3, 3, 3}, .pads = {1, 1, 1, 1, 1, 1}}, "x=2x8x5x6x20 ", {"Relu", {}}, true, true},
      {{.name = "3d_1_to_8", .x = {1, 1, 4, 5, 33}, .w = {8, 1, 3, 3, 3}, .pads = {1, 1, 1, 1, 1, 1}}, "x=1x1x4x5x33 ", {"", {}}, false, true},
      {{.name = "2d_3_to_5_asym", .x = {2, 3, 7, 19}, .w = {5, 3, 3, 2}, .pads = {0, 1, 2, 0}, .bias = false}, "x=2x3x7x19 ", {"Clip", {-0.2f, 0.3f}}, true, true},
      {{.name = "3d_head_8_to_1", .x = {2, 8, 3, 4, 40}, .w = {1, 8, 1, 1, 1}}, "x=2x8x3x4x40 ", {"Sigmoid", {}}, false, true},
      {{.name = "2d_stride2", .x = {1, 4, 9, 9}, .w = {4, 4, 3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}, "x=1x4x9x9 ", {"", {}}, false, false},
  };
  uint32_t seed = 40;
  for (const Pinned& pc : cases) {
    OneNode conv = ConvNode(pc.c, true, seed += 5);
    auto ref = RunNode(conv, DataType::kDouble);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    std::vector<double> want = ToDoubles(*ref);
    const std::vector<double> z = RandomValues(static_cast<int64_t>(want.size()), seed + 1);
    for (size_t i = 0; i < want.size(); ++i) want[i] = RefActivation(pc.act.name, pc.act.params, want[i] + (pc.z ? z[i] : 0.0));
    OneNode fused = conv;
    fused.op = "FusedConv";
    fused.domain = "com.inferloop";
    if (pc.z && !pc.c.bias) fused.inputs.push_back({"", {}, {}, false});  // B omitted: Z is input 3
    if (pc.z) fused.inputs.push_back({"z", ref->shape(), z, false});
    fused.attrs = [&](onnxpb::NodeProto& p) {
      conv.attrs(p);
      SetActivation(p, pc.act);
    };
    auto first = RunNode(fused, DataType::kFloat);  // records the key
    ASSERT_TRUE(first.ok()) << pc.c.name << ": " << first.status().ToString();
    const std::string key = cache.KeyWith({pc.x_key});
    ASSERT_FALSE(key.empty()) << pc.c.name << ": no entry in " << cache.path();
    TuningCache::Global().Store(key, "small_direct");
    for (int threads : {1, 2}) {
      const int64_t before = dnnl_kernels::FastPathExecutions();
      auto got = RunNode(fused, DataType::kFloat, threads);
      ASSERT_TRUE(got.ok()) << pc.c.name << ": " << got.status().ToString();
      if (pc.expect_fast) EXPECT_GT(dnnl_kernels::FastPathExecutions(), before) << pc.c.name << " did not run small_direct";
      else EXPECT_EQ(dnnl_kernels::FastPathExecutions(), before) << pc.c.name << " cannot run small_direct";
      ExpectClose(*got, ref->shape(), want, 1e-4, pc.c.name + " threads=" + std::to_string(threads));
    }
  }
}

// small_direct for ConvTranspose (kernel = stride, no padding), pinned the same way; a
// ConvTranspose it cannot take (kernel 3, stride 2) pinned to it runs on oneDNN.
TEST(DnnlConvTranspose, SmallDirectPinnedByTheTuningCacheMatchesFloat64) {
  if (!AutotuneEnabled()) GTEST_SKIP() << "INFERLOOP_AUTOTUNE=0: no key is recorded to pin";
  ScratchTuningCache cache("small_up");
  struct Up {
    std::string name;
    Shape x, w;
    std::vector<int64_t> strides;
    bool expect_fast;
  };
  const std::vector<Up> cases = {
      {"3d_16_to_8_k2s2", {2, 16, 3, 4, 10}, {16, 8, 2, 2, 2}, {2, 2, 2}, true},
      {"2d_4_to_3_k2s2", {1, 4, 5, 7}, {4, 3, 2, 2}, {2, 2}, true},
      {"2d_k3s2", {1, 4, 5, 7}, {4, 3, 3, 3}, {2, 2}, false},
  };
  uint32_t seed = 70;
  for (const Up& c : cases) {
    OneNode n;
    n.op = "ConvTranspose";
    n.inputs.push_back({"x", c.x, RandomValues(Count(c.x), seed += 3), false});
    n.inputs.push_back({"w", c.w, RandomValues(Count(c.w), seed + 1), true});
    n.inputs.push_back({"b", {c.w[1]}, RandomValues(c.w[1], seed + 2), true});
    n.attrs = [c](onnxpb::NodeProto& p) { IntsAttr(p, "strides", c.strides); };
    auto ref = RunNode(n, DataType::kDouble);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    auto first = RunNode(n, DataType::kFloat);  // records the key
    ASSERT_TRUE(first.ok()) << c.name << ": " << first.status().ToString();
    auto dims = [](const Shape& shape) {
      std::string k;
      for (size_t i = 0; i < shape.size(); ++i) k += (i ? "x" : "") + std::to_string(shape[i]);
      return k;
    };
    const std::string key = cache.KeyWith({"deconv", "x=" + dims(c.x) + " w=" + dims(c.w)});
    ASSERT_FALSE(key.empty()) << c.name << ": no entry in " << cache.path();
    TuningCache::Global().Store(key, "small_direct");
    for (int threads : {1, 2}) {
      const int64_t before = dnnl_kernels::FastPathExecutions();
      auto got = RunNode(n, DataType::kFloat, threads);
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
      if (c.expect_fast) EXPECT_GT(dnnl_kernels::FastPathExecutions(), before) << c.name << " did not run small_direct";
      else EXPECT_EQ(dnnl_kernels::FastPathExecutions(), before) << c.name << " cannot run small_direct";
      ExpectClose(*got, ref->shape(), ToDoubles(*ref), 1e-4, c.name + " threads=" + std::to_string(threads));
    }
  }
}

TEST(DnnlConv, FusedConvResidualOfWrongShapeIsAnError) {
  const ConvCase c{.name = "fused", .x = {1, 2, 4, 4}, .w = {3, 2, 1, 1}};
  OneNode n = ConvNode(c, true, 3);
  n.op = "FusedConv";
  n.domain = "com.inferloop";
  n.inputs.push_back({"z", {1, 3, 4, 5}, RandomValues(60, 1), false});
  auto got = RunNode(n, DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("Z must have"), std::string::npos) << got.status().ToString();
}

TEST(DnnlConv, UnknownActivationIsRejectedAtCreation) {
  const ConvCase c{.name = "fused", .x = {1, 2, 4, 4}, .w = {3, 2, 1, 1}};
  OneNode n = ConvNode(c, true, 3);
  n.op = "FusedConv";
  n.domain = "com.inferloop";
  n.attrs = [](onnxpb::NodeProto& p) { StrAttr(p, "activation", "Swishy"); };
  auto got = RunNode(n, DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("Swishy"), std::string::npos) << got.status().ToString();
}

// Invalid shapes still get the scalar kernel's precise errors.
TEST(DnnlConv, ShapeErrorsMatchScalarKernel) {
  ConvCase c{.name = "bad", .x = {1, 3, 4, 4}, .w = {2, 2, 1, 1}, .group = 2};
  auto got = RunNode(ConvNode(c, false, 1), DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("group"), std::string::npos) << got.status().ToString();
  ConvCase too_big{.name = "big", .x = {1, 1, 2, 2}, .w = {1, 1, 3, 3}};
  got = RunNode(ConvNode(too_big, true, 1), DataType::kFloat);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("does not fit"), std::string::npos) << got.status().ToString();
}

// One session, input shapes changing between runs (per-shape primitive cache), several runs
// of each, and concurrent runs from several threads.
TEST(DnnlConv, ShapeChangesRepeatsAndConcurrentRuns) {
  ModelBuilder b(17);
  const Shape wshape{8, 4, 3, 3};
  const std::vector<double> wv = RandomValues(Count(wshape), 4), bv = RandomValues(8, 5);
  b.Initializer("w", MakeTensor(DataType::kFloat, wshape, wv)).Initializer("b", MakeTensor(DataType::kFloat, {8}, bv));
  auto* vi = b.proto().mutable_graph()->add_input();
  vi->set_name("x");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(DataType::kFloat));
  auto* vo = b.proto().mutable_graph()->add_output();
  vo->set_name("y");
  vo->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(DataType::kFloat));
  auto& node = b.Node("Conv", {"x", "w", "b"}, {"y"});
  IntsAttr(node, "pads", {1, 1, 1, 1});
  SessionOptions so;
  so.optimization_level = 0;
  so.intra_op_threads = 2;
  const std::string bytes = b.Bytes();
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), so);
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  auto reference = [&](const Shape& xs, const std::vector<double>& xv) {
    ConvCase c{.name = "ref", .x = xs, .w = wshape, .pads = {1, 1, 1, 1}};
    OneNode n = ConvNode(c, true, 0);
    n.inputs[0].values = xv;
    n.inputs[1].values = wv;
    n.inputs[2].values = bv;
    auto r = RunNode(n, DataType::kDouble);
    EXPECT_TRUE(r.ok());
    return r.ok() ? ToDoubles(*r) : std::vector<double>{};
  };
  const std::vector<Shape> shapes = {{1, 4, 5, 5}, {3, 4, 7, 6}, {1, 4, 5, 5}, {2, 4, 9, 9}};
  std::vector<std::vector<double>> inputs, wants;
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(RandomValues(Count(shapes[i]), 40 + static_cast<uint32_t>(i)));
    wants.push_back(reference(shapes[i], inputs.back()));
  }
  auto run_all = [&](int reps) {
    for (int r = 0; r < reps; ++r)
      for (size_t i = 0; i < shapes.size(); ++i) {
        auto out = (*s)->Run({{"x", Value(MakeTensor(DataType::kFloat, shapes[i], inputs[i]))}});
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        Shape ys{shapes[i][0], 8, shapes[i][2], shapes[i][3]};
        ExpectClose((*out)[0].second.tensor(), ys, wants[i], 1e-4, "shape #" + std::to_string(i));
      }
  };
  run_all(2);
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) pool.emplace_back([&] { run_all(3); });
  for (auto& t : pool) t.join();
}

}  // namespace
}  // namespace inferloop
