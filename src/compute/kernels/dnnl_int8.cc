// INT8 kernels for the QDQ fusion (src/optimizer/qdq_fusion.cc; docs/FUSED_OPS.md and
// docs/QUANTIZATION.md "INT8 execution"), all com.inferloop:
//
//   QConv(X, x_scale, x_zp, W, w_scale, w_zp, [y_scale, y_zp], [B])          2-D convolution
//   QMatMul(A, a_scale, a_zp, B, b_scale, b_zp, [y_scale, y_zp], [bias], [post_bias])
//                                                                              A [..., M, K] x B [K, N]
//   QAdd(A, a_scale, a_zp, B, b_scale, b_zp, y_scale, y_zp)                    same-shape residual add
//   QMaxPool(X)                                                                max pool, 8-bit in and out
//   QGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp)
//   DynamicQMatMul(A, a_scale, a_zp, B, b_scale, [bias])                       ORT's dynamic format (below)
//   QConcat(y_scale, y_zp, X0, s0, z0, X1, s1, z1, ...)                        Concat, inputs requantized
//   QAveragePool(X, x_scale, x_zp, y_scale, y_zp)                              count_include_pad = 0
//
// Semantics: those of the float graph DequantizeLinear -> op [-> activation] -> QuantizeLinear
// they replace (QLinearConv / QLinearMatMul's when there is no activation): X, A, B uint8 or
// int8 with per-tensor scales and zero points; W / B int8 constants with per-tensor or
// per-output-channel scales (W axis 0, B axis 1) and zero points 0; the bias int32 in units of
// x_scale * w_scale (zero point 0). Without y_scale / y_zp the output is float32 (the
// dequantized result, no rounding to 8 bits). Attribute `activation` (Relu or Clip) is applied
// before quantizing the output. Attribute `layout` "NHWC" (QConv, QMaxPool,
// QGlobalAveragePool): rank-4 8-bit tensors are stored channels-last, shape [N, H, W, C]
// (QAdd is elementwise and takes either). Scales and zero points must be constants.
// QMatMul attribute dequantize_output = 1 (with y_scale): the output is float32, the 8-bit result
// dequantized (DequantizeLinear(y, y_scale, y_zp)) plus the optional float32 post_bias [N]: what
// QuantizeLinear -> DequantizeLinear -> Add(bias) after a MatMul computes, in one primitive.
//
// QConv and QMatMul run oneDNN int8 primitives (u8/s8 x s8 -> s32 accumulation, output scales
// x_scale * w_scale / y_scale per channel, zero points, the activation as a post-op); oneDNN uses
// AMX or AVX512-VNNI where the CPU has them and its AVX2 / SSE4.1 int8 code otherwise (exact for
// full-range weights through the window split, dnnl_int8_common.h). Weights are reordered once
// per plan into the layout the primitive asks for.
//
// Files: dnnl_int8_qparams.cc (quantization parameters, int8 attributes, the float32 fallback's
// conversions; dnnl_int8_common.h), dnnl_int8_window.cc (the window split), dnnl_int8_conv.cc (QConv), dnnl_int8_matmul.cc (QMatMul,
// DynamicQMatMul), dnnl_int8_elementwise.cc (QAdd, QConcat), dnnl_int8_pool.cc (QMaxPool,
// QAveragePool, QGlobalAveragePool); this file registers them.
#include <string>

#include "compute/kernel_registry.h"
#include "compute/kernels/dnnl_int8_common.h"

namespace inferloop {

void RegisterInt8Kernels(KernelRegistry& r) {
  const std::string d = "com.inferloop";
  r.Register(d, "QConv", 1, dnnl_kernels::int8::MakeQConv);
  r.Register(d, "QMatMul", 1, dnnl_kernels::int8::MakeQMatMul);
  r.Register(d, "QAdd", 1, dnnl_kernels::int8::MakeQAdd);
  r.Register(d, "QMaxPool", 1, dnnl_kernels::int8::MakeQMaxPool);
  r.Register(d, "QGlobalAveragePool", 1, dnnl_kernels::int8::MakeQGlobalAveragePool);
  r.Register(d, "DynamicQMatMul", 1, dnnl_kernels::int8::MakeDynamicQMatMul);
  r.Register(d, "QConcat", 1, dnnl_kernels::int8::MakeQConcat);
  r.Register(d, "QAveragePool", 1, dnnl_kernels::int8::MakeQAveragePool);
}

}  // namespace inferloop
