// A direct float32 convolution for few channels (the 3-D U-Nets of CT segmentation: 1 to 32
// channels on large volumes), where oneDNN pads the channels to its 16-channel blocks or runs
// im2col + GEMM with 8 columns. Stride 1, no dilation, one group; 2-D is 3-D with D = KD = 1.
//
// Measured on an AMD EPYC (Zen 4, AVX-512), 2 threads, batch 8, 32x64x64 volume, 3x3x3 kernel,
// 8 -> 8 channels: oneDNN 2.6's best layout (brgconv, channels-last) 53 GMAC/s, its nCdhw8c 44,
// plain NCDHW (im2col + sgemm) 10, this kernel 80 (docs/DNNL_KERNELS.md, "small_direct"; the
// models: docs/PERFORMANCE.md, "3-D U-Net against ONNX Runtime").
//
// Use: pack the weights once (PackSmallConvWeights), copy each batch item's input into padded
// rows (PadSmallConvRows, any split of the rows over threads; not for a pointwise convolution,
// SmallConvNeedsPadding), then compute output rows (SmallConvRows, any split over threads).
// Layouts are plain: X [C, D, H, W] and Y / Z [M, Do, Ho, Wo] per batch item.
#pragma once

#include <cstdint>

#include "compute/simd/float_kernels.h"

namespace inferloop {
namespace simd {

// Output channels per packed weight block.
constexpr int kSmallConvOutBlock = 8;
// Leading floats of a padded row before the first input column (the left padding is read from
// there, so at most this many columns of it).
constexpr int64_t kSmallConvLead = 16;

struct SmallConvGeom {
  int64_t C = 0, M = 0;            // input and output channels
  int64_t D = 1, H = 1, W = 1;     // input volume
  int64_t KD = 1, KH = 1, KW = 1;  // kernel
  int64_t pd = 0, ph = 0, pw = 0;  // leading padding (the trailing padding follows from the output size)
  int64_t Do = 1, Ho = 1, Wo = 1;  // output volume
};

// True when the kernel takes `g`: positive sizes, non-negative leading pads, pw <=
// kSmallConvLead. The caller computes the output sizes (Do = D + both pads - KD + 1, ...).
bool SmallConvSupported(const SmallConvGeom& g);

// y = act(conv + bias + z), act (when has_act) one of float_kernels.h's unary ops, computed as
// simd::Unary computes it (the same vector code).
struct SmallConvEpilogue {
  const float* bias = nullptr;  // [M] or nullptr
  bool has_act = false;
  UnaryOp act = UnaryOp::kRelu;
  UnaryArgs act_args;
};

// Floats of the packed weights: ceil(M / 8) blocks of [C, KD, KH, KW, 8] (zeros past M).
int64_t SmallConvPackedSize(const SmallConvGeom& g);
// Packs W [M, C, KD, KH, KW] into `packed` (SmallConvPackedSize floats).
void PackSmallConvWeights(const SmallConvGeom& g, const float* w, float* packed);

// Floats per padded row: the row's W inputs at kSmallConvLead, zeros around them, room for the
// widest vector loads past the last output column. A 64-byte multiple.
int64_t SmallConvRowStride(const SmallConvGeom& g);
// Floats of one batch item's padded rows: C * D * H * SmallConvRowStride.
int64_t SmallConvPaddedSize(const SmallConvGeom& g);
// Copies input rows [begin, end) of one batch item (row = (c * D + d) * H + h of X [C, D, H, W])
// into their padded rows.
void PadSmallConvRows(const SmallConvGeom& g, const float* x, float* padded, int64_t begin, int64_t end);

// False for a pointwise convolution (1x1x1 kernel, no padding): SmallConvRows then reads X's
// rows where they are (pass X as `padded`; no copy, the last vector of a row masked).
bool SmallConvNeedsPadding(const SmallConvGeom& g);

// Output rows [begin, end) (row = d * Ho + h) of one batch item, for every output channel, with
// the instruction set of ActiveIsa(). z (the residual, Y's layout) may be nullptr.
void SmallConvRows(const SmallConvGeom& g, const float* padded, const float* packed, const float* z,
                   const SmallConvEpilogue& e, float* y, int64_t begin, int64_t end);

// ---------------------------------------------------------------------------------------------
// ConvTranspose with kernel = stride and no padding (the 2x2x2 / stride-2 upsampling of U-Nets):
// each input voxel writes its own KD x KH x KW block, y[m, d*KD + a, h*KH + b, w*KW + c] =
// bias[m] + sum over ci of x[ci, d, h, w] * W[ci, m, a, b, c]. The geometry is SmallConvGeom's
// with K = the strides, no pads and Do = D * KD, Ho = H * KH, Wo = W * KW; W is ConvTranspose's
// [C, M, KD, KH, KW]. Per input row the input columns are widened KW times, then each of its
// KD * KH output rows is computed like a pointwise convolution whose weight vector repeats the
// KW column phases.

// True when the kernel takes `g`: positive sizes, KW in {1, 2, 4, 8}, no pads, the output sizes
// above, and C * Wo rounded up to 16 within kSmallUpConvMaxRow (one widened input row).
constexpr int64_t kSmallUpConvMaxRow = 16384;
bool SmallUpConvSupported(const SmallConvGeom& g);
// Floats of the packed weights: KD * KH * ceil(M / 8) * C * 8 vectors of 16.
int64_t SmallUpConvPackedSize(const SmallConvGeom& g);
void PackSmallUpConvWeights(const SmallConvGeom& g, const float* w, float* packed);
// Input rows [begin, end) (row = d * H + h) of one batch item: all their output rows. e.has_act
// must be false and z is not taken (ConvTranspose has neither).
void SmallUpConvRows(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e, float* y,
                     int64_t begin, int64_t end);

}  // namespace simd
}  // namespace inferloop
