// Factories of the oneDNN-backed float32 kernels (dnnl_*.cc), for the registrations in
// nn_conv.cc, nn_pool.cc and matmul_kernels.cc. This header does not include oneDNN.
//
// Each wraps the scalar factory of the same ONNX op: the scalar kernel keeps every dtype other
// than float32, every attribute combination oneDNN cannot take, and the wording of errors for
// invalid inputs. The com.inferloop fused ops (docs/FUSED_OPS.md) take the unfused op's scalar
// factory; for dtypes other than float32 they run it and apply the epilogue in float32.
#pragma once

#include <cstdint>
#include <memory>

#include "compute/kernel.h"

namespace inferloop {
namespace dnnl_kernels {

// The channel block (graph/channel_block.h) this process's convolutions run fastest in, for the
// optimizer's NchwcLayout pass: 16 where the tensor kernels may use AVX-512 (compute/simd/
// cpu_isa.h, INFERLOOP_ISA included), 8 on AVX2 and below.
int64_t PreferredChannelBlock();

// Registration of the oneDNN kernels. Each wraps the scalar factory of the same op, which
// keeps every dtype other than float32 and every case oneDNN cannot take.
Result<std::unique_ptr<Kernel>> MakeConv(const KernelInfo& info, const KernelFactory& scalar_conv);
// com.inferloop FusedConv; scalar_conv is the ONNX Conv factory (used for error messages and
// non-float32 inputs, whose fused epilogue then runs in float32). Attribute layout = "NCHW16c" or
// "NCHW8c": Y and Z channel-blocked, X plain or blocked (float32 only, no scalar path).
Result<std::unique_ptr<Kernel>> MakeFusedConv(const KernelInfo& info, const KernelFactory& scalar_conv);
Result<std::unique_ptr<Kernel>> MakeConvTranspose(const KernelInfo& info, const KernelFactory& scalar_conv_transpose);
// com.inferloop ReorderToNchwc / ReorderFromNchwc (attributes channels, layout: NCHW16c when
// absent, or NCHW8c): plain <-> channel-blocked.
Result<std::unique_ptr<Kernel>> MakeReorderToNchwc(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeReorderFromNchwc(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeMatMul(const KernelInfo& info, const KernelFactory& scalar_matmul);
Result<std::unique_ptr<Kernel>> MakeFusedMatMul(const KernelInfo& info, const KernelFactory& scalar_matmul);
Result<std::unique_ptr<Kernel>> MakeGemm(const KernelInfo& info, const KernelFactory& scalar_gemm);
Result<std::unique_ptr<Kernel>> MakeFusedGemm(const KernelInfo& info, const KernelFactory& scalar_gemm);
// True when the oneDNN kernels are on (Enabled()) and oneDNN's CPU ISA has AVX512_BF16 (with
// AMX-BF16 it uses that too): Precision::kBf16 can compute in bfloat16. ONEDNN_MAX_CPU_ISA
// lowers it like oneDNN's own dispatch.
bool Bf16ComputeSupported();
// oneDNN primitive executions so far in this process (all kernels, reorders included), and runs
// of the kernels' own fast paths that a oneDNN primitive could have taken (Conv's small_direct):
// lets tests check that a case took a fast path rather than the scalar fallback.
int64_t PrimitiveExecutions();
// The fast-path runs alone (counted in PrimitiveExecutions too).
int64_t FastPathExecutions();

enum class PoolKind { kMax, kAverage, kGlobalMax, kGlobalAverage };
// Also the com.inferloop pools of the same names, whose attribute layout = "NCHW16c" makes X
// and Y channel-blocked.
Result<std::unique_ptr<Kernel>> MakePool(const KernelInfo& info, PoolKind kind, const KernelFactory& scalar_pool);

}  // namespace dnnl_kernels
}  // namespace inferloop
