// The channel-blocked layouts of the com.inferloop ops the optimizer writes (docs/DNNL_KERNELS.md):
// "NCHW16c" (16 floats: an AVX-512 vector) and "NCHW8c" (8: an AVX2 vector). A tensor of logical
// shape [N, C, S...] is stored as [N, ceil(C / b), S..., b], element (n, c, s...) at
// [n, c / b, s..., c % b], channels past C zero. The layout is each node's attribute "layout",
// so an optimized model saved on one machine means the same on another.
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace inferloop {

// The block of a layout name: 0 for "NCHW" or "" (plain), 8 / 16 for "NCHW8c" / "NCHW16c", -1
// for any other string.
int64_t ChannelBlockOf(const std::string& layout);

// "NCHW8c" / "NCHW16c" for block 8 / 16.
std::string ChannelBlockedLayoutName(int64_t block);

// The block of node `n`'s attribute "layout" (ChannelBlockOf), -1 when it names no known layout.
// Without the attribute: 16 for ReorderToNchwc / ReorderFromNchwc (models optimized before
// NCHW8c existed wrote none), 0 (plain) for any other op.
int64_t NodeChannelBlock(const Node& n);

}  // namespace inferloop
