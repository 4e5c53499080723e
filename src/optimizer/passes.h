// The optimizer's passes, one per file (src/optimizer/<name>.cc). Each factory returns a fresh
// pass; see graph_pass.h for what every pass guarantees and each .cc for its patterns.
#pragma once

#include <memory>

#include "optimizer/graph_pass.h"

namespace inferloop {

// Level 1 (basic): exact rewrites that need no fused kernels.
std::unique_ptr<GraphPass> MakeConstantFoldingPass();           // constant_folding.cc
std::unique_ptr<GraphPass> MakeDeadNodeEliminationPass();       // dead_node_elimination.cc
std::unique_ptr<GraphPass> MakeIdentityEliminationPass();       // identity_elimination.cc
std::unique_ptr<GraphPass> MakeTransposeReshapeCancellationPass();  // transpose_reshape_cancellation.cc

// Level 2: fusions.
std::unique_ptr<GraphPass> MakeQdqFusionPass();                 // qdq_fusion.cc (runs before constant folding)
std::unique_ptr<GraphPass> MakeConvBatchNormFoldingPass();      // conv_bn_folding.cc
std::unique_ptr<GraphPass> MakeMatMulAddFusionPass();           // matmul_add_fusion.cc
std::unique_ptr<GraphPass> MakeActivationFusionPass();          // activation_fusion.cc
std::unique_ptr<GraphPass> MakeResidualAddFusionPass();         // residual_add_fusion.cc
std::unique_ptr<GraphPass> MakeLayerNormFusionPass();           // layer_norm_fusion.cc
std::unique_ptr<GraphPass> MakeGeluFusionPass();                // gelu_fusion.cc
std::unique_ptr<GraphPass> MakeAttentionFusionPass();           // attention_fusion.cc
// Level 2, once after the fusions: channel-blocked layout between 2-D convolutions.
std::unique_ptr<GraphPass> MakeNchwcLayoutPass(int64_t block = 0);  // nchwc_layout.cc; 0: PreferredChannelBlock
// Level 2, once after the fusions: channels-last 8-bit tensors between the int8 ops.
std::unique_ptr<GraphPass> MakeInt8NhwcLayoutPass();            // int8_nhwc_layout.cc

}  // namespace inferloop
