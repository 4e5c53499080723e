// The oneDNN float32 pooling kernels against the scalar float64 path: kernel/stride/pads,
// ceil_mode, dilations, SAME padding, count_include_pad, 1-D / 2-D / 3-D, global pools, and the
// cases that stay scalar (MaxPool's Indices, count_include_pad with ceil_mode overhang).
#include "compute/kernels/dnnl_kernels.h"
#include "unit/compute/kernels/dnnl_test_util.h"

namespace inferloop {
namespace {

using namespace dnnl_test;

struct PoolCase {
  std::string op{};
  Shape x{};
  std::vector<int64_t> kernel{}, strides{}, pads{}, dilations{};
  bool ceil_mode = false;
  bool count_include_pad = false;
  std::string auto_pad{};
  bool expect_dnnl = true;
};

OneNode PoolNode(const PoolCase& c, uint32_t seed) {
  OneNode n;
  n.op = c.op;
  n.opset = 19;
  n.inputs = {{"x", c.x, RandomValues(Count(c.x), seed), false}};
  n.attrs = [c](onnxpb::NodeProto& p) {
    if (!c.kernel.empty()) IntsAttr(p, "kernel_shape", c.kernel);
    if (!c.strides.empty()) IntsAttr(p, "strides", c.strides);
    if (!c.pads.empty()) IntsAttr(p, "pads", c.pads);
    if (!c.dilations.empty()) IntsAttr(p, "dilations", c.dilations);
    if (c.ceil_mode) ModelBuilder::IntAttr(p, "ceil_mode", 1);
    if (c.count_include_pad) ModelBuilder::IntAttr(p, "count_include_pad", 1);
    if (!c.auto_pad.empty()) StrAttr(p, "auto_pad", c.auto_pad);
  };
  return n;
}

TEST(DnnlPool, MatchesScalarReference) {
  const std::vector<PoolCase> cases = {
      {.op = "MaxPool", .x = {1, 64, 16, 16}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
      {.op = "MaxPool", .x = {2, 5, 11, 9}, .kernel = {3, 2}, .strides = {2, 3}, .pads = {0, 1, 1, 0}, .ceil_mode = true},
      {.op = "MaxPool", .x = {1, 3, 12, 12}, .kernel = {2, 2}, .strides = {1, 1}, .dilations = {2, 3}},
      {.op = "MaxPool", .x = {1, 3, 10, 11}, .kernel = {3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
      {.op = "MaxPool", .x = {2, 4, 17}, .kernel = {4}, .strides = {3}, .pads = {1, 2}},
      // 2 x 2 (x 2) windows of stride 2 without padding: inferloop's own loop, not oneDNN (odd
      // sizes drop their last row / column as floor mode does).
      {.op = "MaxPool", .x = {1, 4, 6, 7, 8}, .kernel = {2, 2, 2}, .strides = {2, 2, 2}, .expect_dnnl = false},
      {.op = "MaxPool", .x = {2, 3, 9, 11}, .kernel = {2, 2}, .strides = {2, 2}, .expect_dnnl = false},
      {.op = "MaxPool", .x = {1, 2, 5, 7, 9}, .kernel = {2, 2, 2}, .strides = {2, 2, 2}, .expect_dnnl = false},
      {.op = "MaxPool", .x = {1, 2, 6, 8, 8}, .kernel = {2, 2, 2}, .strides = {2, 2, 2}, .ceil_mode = true,
       .expect_dnnl = false},
      {.op = "MaxPool", .x = {1, 2, 5, 8, 8}, .kernel = {2, 2, 2}, .strides = {2, 2, 2}, .ceil_mode = true},  // overhang: oneDNN
      {.op = "AveragePool", .x = {1, 8, 9, 9}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
      {.op = "AveragePool", .x = {1, 8, 9, 9}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .count_include_pad = true},
      {.op = "AveragePool", .x = {2, 3, 10, 7}, .kernel = {3, 2}, .strides = {2, 2}, .pads = {0, 1, 1, 0}, .ceil_mode = true},
      // ceil_mode window overhang with count_include_pad: the divisor differs, stays scalar.
      {.op = "AveragePool", .x = {1, 2, 10, 10}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = true,
       .count_include_pad = true, .expect_dnnl = false},
      {.op = "AveragePool", .x = {1, 4, 6, 7, 8}, .kernel = {3, 3, 3}, .strides = {1, 2, 2}, .pads = {1, 1, 1, 1, 1, 1}},
      {.op = "AveragePool", .x = {3, 4, 20}, .kernel = {5}, .strides = {2}, .pads = {2, 2}, .count_include_pad = true},
      {.op = "AveragePool", .x = {1, 3, 10, 11}, .kernel = {3, 3}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"},
      {.op = "GlobalAveragePool", .x = {2, 16, 7, 7}},
      {.op = "GlobalAveragePool", .x = {1, 5, 3, 4, 5}},
      {.op = "GlobalAveragePool", .x = {2, 3, 11}},
      {.op = "GlobalMaxPool", .x = {2, 16, 7, 7}},
      {.op = "GlobalMaxPool", .x = {1, 5, 3, 4, 5}},
  };
  uint32_t seed = 3;
  for (const PoolCase& c : cases) {
    const OneNode n = PoolNode(c, seed++);
    const std::string what = c.op + " " + ShapeToString(c.x) + " k=" + ShapeToString(c.kernel) + (c.ceil_mode ? " ceil" : "") +
                             (c.count_include_pad ? " include_pad" : "") + " " + c.auto_pad;
    CheckAgainstDouble(n, what, 1e-5, c.expect_dnnl);
  }
}

// With its Indices output wanted, MaxPool stays on the scalar kernel and both outputs are right.
TEST(DnnlPool, MaxPoolWithIndicesUsesScalarKernel) {
  PoolCase c{.op = "MaxPool", .x = {1, 1, 4, 4}, .kernel = {2, 2}, .strides = {2, 2}};
  OneNode n = PoolNode(c, 1);
  n.inputs[0].values = {1, 2, 3, 4, 8, 7, 6, 5, 9, 10, 11, 12, 16, 15, 14, 13};
  n.outputs = 2;
  const int64_t before = dnnl_kernels::PrimitiveExecutions();
  auto got = RunNode(n, DataType::kFloat);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(dnnl_kernels::PrimitiveExecutions(), before);
  ExpectClose(*got, {1, 1, 2, 2}, {8, 6, 16, 14}, 0, "MaxPool values");
}

}  // namespace
}  // namespace inferloop
