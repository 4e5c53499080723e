#include "graph/topological_sort.h"

#include <gtest/gtest.h>

#include "graph/graph.h"

namespace inferloop {
namespace {

Node MakeNode(const std::string& name, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  Node n;
  n.name = name;
  n.op_type = "Relu";
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

TEST(TopologicalSort, KeepsAnOrderThatIsAlreadyTopological) {
  auto t = StableTopologicalOrder({{}, {0}, {}, {1, 2}});
  EXPECT_EQ(t.order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(t.unordered.empty());
}

TEST(TopologicalSort, LowestReadyIndexFirst) {
  // 0 needs 1; 2 is free: 1, then 0 (now ready, lower than 2), then 2.
  auto t = StableTopologicalOrder({{1}, {}, {}});
  EXPECT_EQ(t.order, (std::vector<int>{1, 0, 2}));
}

TEST(TopologicalSort, CycleAndSelfDependencyAreLeftUnordered) {
  auto t = StableTopologicalOrder({{}, {2}, {1}, {3}, {1}});
  EXPECT_EQ(t.order, (std::vector<int>{0}));
  EXPECT_EQ(t.unordered, (std::vector<int>{1, 2, 3, 4}));
}

TEST(TopologicalSort, GraphNodesByValueName) {
  Graph g;
  g.inputs.push_back(GraphValue{"x", TypeInfo{}});
  g.nodes.push_back(MakeNode("b", {"a"}, {"b"}));
  g.nodes.push_back(MakeNode("a", {"x"}, {"a"}));
  auto order = TopologicalNodeOrder(g);
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  EXPECT_EQ(*order, (std::vector<int>{1, 0}));
}

TEST(TopologicalSort, GraphErrorsNameANode) {
  Graph cycle;
  cycle.nodes.push_back(MakeNode("p", {"q"}, {"p"}));
  cycle.nodes.push_back(MakeNode("q", {"p"}, {"q"}));
  auto r = TopologicalNodeOrder(cycle);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cycle through Relu (node 'p')"), std::string::npos) << r.status().ToString();

  Graph twice;
  twice.nodes.push_back(MakeNode("p", {}, {"v"}));
  twice.nodes.push_back(MakeNode("q", {}, {"v"}));
  EXPECT_FALSE(TopologicalNodeOrder(twice).ok());

  Graph nowhere;
  nowhere.nodes.push_back(MakeNode("p", {"outer"}, {"v"}));
  r = TopologicalNodeOrder(nowhere);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reads 'outer'"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace inferloop
