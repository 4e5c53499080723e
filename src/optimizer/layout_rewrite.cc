#include "optimizer/layout_rewrite.h"

#include <utility>

namespace inferloop {

LayoutRewrite::LayoutRewrite(GraphEditor& ed, Spec spec) : ed_(ed), spec_(std::move(spec)) {
  out_.reserve(ed_.graph().nodes.size() + 8);
}

const LayoutRewrite::LayoutValue* LayoutRewrite::Find(const std::string& v) const {
  auto it = layout_.find(v);
  return it == layout_.end() ? nullptr : &it->second;
}

std::string LayoutRewrite::AsLayout(const std::string& v) {
  if (const LayoutValue* l = Find(v)) return l->name;
  auto [it, fresh] = converted_.try_emplace(v, "");
  if (fresh) {
    it->second = ed_.UniqueName(v + "__" + spec_.suffix + "_in");
    out_.push_back(spec_.to_layout(v, it->second));
  }
  return it->second;
}

void LayoutRewrite::GiveBackPlain(const std::string& v) {
  auto it = layout_.find(v);
  if (it == layout_.end() || restored_.count(v)) return;
  out_.push_back(spec_.to_plain(it->second.name, v, it->second.tag));
  restored_.insert(v);
}

bool LayoutRewrite::MayStayInLayout(const std::string& v) const {
  if (ed_.IsGraphOutput(v) || ed_.ReadBySubgraph(v)) return false;
  for (int r : ed_.Readers(v))
    if (!spec_.reader_takes_layout(ed_.node(r))) return false;
  return true;
}

void LayoutRewrite::Emit(Node n, int64_t tag) {
  const std::string plain = n.outputs[0];
  const bool keep_in_layout = MayStayInLayout(plain);
  const std::string name = ed_.UniqueName(plain + "__" + spec_.suffix);
  layout_[plain] = {name, tag};
  n.outputs[0] = name;
  out_.push_back(std::move(n));
  if (!keep_in_layout) GiveBackPlain(plain);
  ++emitted_;
}

void LayoutRewrite::Keep(Node n) {
  for (const auto& in : n.inputs)
    if (!in.empty()) GiveBackPlain(in);
  out_.push_back(std::move(n));
}

int LayoutRewrite::Finish() {
  for (const auto& o : ed_.graph().outputs) GiveBackPlain(o.name);
  if (emitted_ > 0) ed_.graph().nodes = std::move(out_);
  return emitted_;
}

}  // namespace inferloop
