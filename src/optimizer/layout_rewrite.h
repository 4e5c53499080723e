// LayoutRewrite: the node list a layout pass (NchwcLayout, Int8NhwcLayout) builds while it walks
// the main graph in order. A node moved to the layout writes its output 0 under a new name
// (<value>__<suffix>); wherever the plain value is still needed (a reader that stays plain, a
// graph output) a conversion node gives it back under its original name, once, right before
// the first such use. Plain values a layout node reads get a layout copy (<value>__<suffix>_in),
// converted once. Finish() replaces the graph's nodes only when some node moved.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "optimizer/graph_editor.h"

namespace inferloop {

class LayoutRewrite {
 public:
  struct Spec {
    std::string suffix;  // of the new value names, e.g. "nchwc"
    // Node n can read a value in the layout (once the pass has rewritten it).
    bool (*reader_takes_layout)(const Node& n);
    // The node writing `out`, the layout copy of plain value `in`.
    std::function<Node(const std::string& in, const std::string& out)> to_layout;
    // The node writing plain value `out` from its layout copy `in` (`tag` as given to Emit).
    std::function<Node(const std::string& in, const std::string& out, int64_t tag)> to_plain;
  };
  // A value's copy in the layout, and what the pass tagged it with (NCHWc layouts: the channels).
  struct LayoutValue {
    std::string name;
    int64_t tag = 0;
  };

  LayoutRewrite(GraphEditor& ed, Spec spec);

  // The layout copy an emitted node writes for plain value `v`; nullptr when there is none.
  const LayoutValue* Find(const std::string& v) const;
  // The layout copy of `v`: the emitted one, else one converted here (once).
  std::string AsLayout(const std::string& v);
  // Plain value `v` may live in the layout only: no graph output, no subgraph reads it, and
  // every reader takes the layout.
  bool MayStayInLayout(const std::string& v) const;
  // Adds `n`, which writes output 0 in the layout (tagged `tag`). Unless that value may stay in
  // the layout, the plain value comes back right after it.
  void Emit(Node n, int64_t tag);
  // Adds `n` as it is, after giving back the plain values of its inputs.
  void Keep(Node n);
  // Gives back the graph outputs; when some node was emitted, the graph's nodes become the new
  // list. Returns how many nodes were emitted.
  int Finish();

 private:
  void GiveBackPlain(const std::string& v);

  GraphEditor& ed_;
  Spec spec_;
  std::map<std::string, LayoutValue> layout_;    // plain name -> layout copy written by a node
  std::set<std::string> restored_;               // plain names given back by a conversion
  std::map<std::string, std::string> converted_;  // plain name -> its converted layout copy
  std::vector<Node> out_;
  int emitted_ = 0;
};

}  // namespace inferloop
