// Layout probe: what plain NCHW in/out costs the oneDNN convolutions of ResNet-50 (batch 1),
// against blocked layouts (nChw16c) with the reorders a per-op NCHW contract needs, and against
// blocked layouts kept between ops (no reorders: what a layout-propagating graph would pay).
// Direct and Winograd algorithms. Prints milliseconds per convolution (median of 25 runs).
//
//   g++ -O2 -std=c++17 bench/dnnl_layout_probe.cc -o /tmp/dnnl_layout_probe -ldnnl && \
//     OMP_NUM_THREADS=1 /tmp/dnnl_layout_probe
//
// Columns: plain = src/dst nchw (oneDNN picks im2col + sgemm); blk+ro = blocked conv plus
// reorders in and out; blk = blocked conv alone; wino+ro / wino = the same with Winograd
// (3x3 stride 1 only); best = min(plain, blk+ro, wino+ro), what inferloop's autotuner can reach
// with NCHW between ops; chain = min(blk, wino), what it could reach with blocked tensors
// between ops.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

struct Shape {
  int c, m, h, k, s;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr double kNone = std::numeric_limits<double>::infinity();

// Returns {with reorders, without} in ms; kNone when the algorithm does not apply.
std::pair<double, double> Time(const engine& eng, stream& st, const Shape& sh, bool plain, algorithm alg) {
  const int p = sh.k / 2, oh = (sh.h + 2 * p - sh.k) / sh.s + 1;
  const memory::dims src_d{1, sh.c, sh.h, sh.h}, w_d{sh.m, sh.c, sh.k, sh.k}, b_d{sh.m}, dst_d{1, sh.m, oh, oh};
  std::vector<float> x(size_t(sh.c) * sh.h * sh.h, 0.5f), w(size_t(sh.m) * sh.c * sh.k * sh.k, 0.01f), b(sh.m, 0.1f),
      y(size_t(sh.m) * oh * oh);
  memory xm({src_d, dt::f32, tag::nchw}, eng, x.data()), wm({w_d, dt::f32, tag::oihw}, eng, w.data()),
      bm({b_d, dt::f32, tag::x}, eng, b.data()), ym({dst_d, dt::f32, tag::nchw}, eng, y.data());
  const tag t = plain ? tag::nchw : tag::any;
  convolution_forward::primitive_desc pd;
  try {
    post_ops po;
    po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(po);
    pd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_inference, alg, {src_d, dt::f32, t}, {w_d, dt::f32, tag::any},
                                  {b_d, dt::f32, tag::x}, {dst_d, dt::f32, t}, {sh.s, sh.s}, {p, p}, {p, p}),
        attr, eng);
  } catch (const dnnl::error&) {
    return {kNone, kNone};
  }
  memory wp(pd.weights_desc(), eng);
  reorder(wm, wp).execute(st, wm, wp);
  const bool rx = pd.src_desc() != xm.get_desc(), ry = pd.dst_desc() != ym.get_desc();
  memory xs = rx ? memory(pd.src_desc(), eng) : xm, yd = ry ? memory(pd.dst_desc(), eng) : ym;
  convolution_forward conv(pd);
  std::vector<double> with, without;
  for (int it = 0; it < 30; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    if (rx) reorder(xm, xs).execute(st, xm, xs);
    const auto t1 = std::chrono::steady_clock::now();
    conv.execute(st, {{DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, yd}});
    st.wait();
    const auto t2 = std::chrono::steady_clock::now();
    if (ry) reorder(yd, ym).execute(st, yd, ym);
    st.wait();
    const auto t3 = std::chrono::steady_clock::now();
    if (it < 5) continue;
    with.push_back(std::chrono::duration<double, std::milli>(t3 - t0).count());
    without.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  return {Median(with), Median(without)};
}

}  // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  // (C_in, C_out, H_in, kernel, stride), each once (ResNet-50 repeats most of them).
  const std::vector<Shape> shapes = {
      {3, 64, 224, 7, 2},    {64, 64, 56, 1, 1},    {64, 64, 56, 3, 1},    {64, 256, 56, 1, 1},  {256, 64, 56, 1, 1},
      {256, 128, 56, 1, 1},  {128, 128, 56, 3, 2},  {128, 512, 28, 1, 1},  {256, 512, 56, 1, 2}, {512, 128, 28, 1, 1},
      {128, 128, 28, 3, 1},  {512, 256, 28, 1, 1},  {256, 256, 28, 3, 2},  {256, 1024, 14, 1, 1}, {512, 1024, 28, 1, 2},
      {1024, 256, 14, 1, 1}, {256, 256, 14, 3, 1},  {1024, 512, 14, 1, 1}, {512, 512, 14, 3, 2}, {512, 2048, 7, 1, 1},
      {1024, 2048, 14, 1, 2}, {2048, 512, 7, 1, 1}, {512, 512, 7, 3, 1},
  };
  std::printf("%-24s %8s %8s %8s %8s %8s %8s %8s\n", "conv (Cin->Cout HxW k s)", "plain", "blk+ro", "blk", "wino+ro", "wino",
              "best", "chain");
  double sum_best = 0, sum_chain = 0, sum_plain = 0;
  for (const Shape& sh : shapes) {
    const double plain = Time(eng, st, sh, true, algorithm::convolution_direct).first;
    const auto blk = Time(eng, st, sh, false, algorithm::convolution_direct);
    const auto wino = Time(eng, st, sh, false, algorithm::convolution_winograd);
    const double best = std::min({plain, blk.first, wino.first}), chain = std::min(blk.second, wino.second);
    sum_best += best;
    sum_chain += chain;
    sum_plain += plain;
    char name[64];
    std::snprintf(name, sizeof name, "%d->%d %dx%d k%d s%d", sh.c, sh.m, sh.h, sh.h, sh.k, sh.s);
    auto f = [](double v) {
      static char buf[4][16];
      static int i = 0;
      i = (i + 1) % 4;
      if (v == kNone) std::snprintf(buf[i], sizeof buf[i], "-");
      else std::snprintf(buf[i], sizeof buf[i], "%.3f", v);
      return buf[i];
    };
    std::printf("%-24s %8.3f %8.3f %8.3f %8s %8s %8.3f %8.3f\n", name, plain, blk.first, blk.second, f(wino.first), f(wino.second),
                best, chain);
  }
  std::printf("sum: plain %.3f  best per-op NCHW %.3f  blocked chain %.3f (chain/best %.2f)\n", sum_plain, sum_best, sum_chain,
              sum_chain / sum_best);
}
