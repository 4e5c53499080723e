#include "graph/topological_sort.h"

#include <functional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>

#include "graph/graph.h"

namespace inferloop {

TopologicalOrder StableTopologicalOrder(const std::vector<std::vector<int>>& preds) {
  const size_t n = preds.size();
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int p : preds[i]) {
      users[p].push_back(static_cast<int>(i));
      ++indeg[i];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(static_cast<int>(i));
  TopologicalOrder out;
  out.order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    out.order.push_back(i);
    for (int u : users[i])
      if (--indeg[u] == 0) ready.push(u);
  }
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] > 0) out.unordered.push_back(static_cast<int>(i));
  return out;
}

Result<std::vector<int>> TopologicalNodeOrder(const Graph& g) {
  std::set<std::string> defined;
  for (const auto& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  std::unordered_map<std::string, int> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      if (defined.count(o) || producer.count(o))
        return Status::InvalidArgument(g.nodes[i].Describe() + " defines '" + o + "', which is already defined");
      producer[o] = static_cast<int>(i);
    }
  std::vector<std::vector<int>> preds(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs) {
      if (in.empty() || defined.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return Status::InvalidArgument(g.nodes[i].Describe() + " reads '" + in +
                                       "', which is not a graph input, an initializer or any node's output");
      preds[i].push_back(it->second);
    }
  TopologicalOrder t = StableTopologicalOrder(preds);
  if (!t.unordered.empty())
    return Status::InvalidArgument("the graph has a cycle through " + g.nodes[t.unordered.front()].Describe());
  return std::move(t.order);
}

}  // namespace inferloop
