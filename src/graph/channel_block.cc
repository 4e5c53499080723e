#include "graph/channel_block.h"

namespace inferloop {

int64_t ChannelBlockOf(const std::string& layout) {
  if (layout.empty() || layout == "NCHW") return 0;
  if (layout == "NCHW16c") return 16;
  if (layout == "NCHW8c") return 8;
  return -1;
}

std::string ChannelBlockedLayoutName(int64_t block) { return "NCHW" + std::to_string(block) + "c"; }

int64_t NodeChannelBlock(const Node& n) {
  if (const Attribute* a = n.FindAttribute("layout")) return ChannelBlockOf(a->s);
  return n.op_type == "ReorderToNchwc" || n.op_type == "ReorderFromNchwc" ? 16 : 0;
}

}  // namespace inferloop
