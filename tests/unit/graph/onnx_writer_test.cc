// ONNX writer: load -> write -> load gives the same model and the same outputs.
#include <filesystem>

#include "base/npy.h"
#include "unit/optimizer/opt_test_util.h"

namespace inferloop::testing {
namespace {

const std::string kTinyCnn = std::string(INFERLOOP_SOURCE_DIR) + "/examples/model_repository/tiny_cnn/1/model.onnx";

void ExpectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    EXPECT_EQ(x.op_type, y.op_type);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    ASSERT_EQ(x.attributes.size(), y.attributes.size());
    for (size_t k = 0; k < x.attributes.size(); ++k) {
      const Attribute &p = x.attributes[k], &q = y.attributes[k];
      EXPECT_EQ(p.name, q.name);
      EXPECT_EQ(p.type, q.type);
      EXPECT_EQ(p.i, q.i);
      EXPECT_EQ(p.f, q.f);
      EXPECT_EQ(p.s, q.s);
      EXPECT_EQ(p.ints, q.ints);
      EXPECT_EQ(p.floats, q.floats);
      EXPECT_EQ(p.strings, q.strings);
      if (p.g) {
        ASSERT_TRUE(q.g);
        ExpectSameGraph(*p.g, *q.g);
      }
    }
  }
  ASSERT_EQ(a.initializers.size(), b.initializers.size());
  for (size_t i = 0; i < a.initializers.size(); ++i) {
    EXPECT_EQ(a.initializers[i].first, b.initializers[i].first);
    ExpectAllClose(a.initializers[i].second, b.initializers[i].second, 0, 0);
  }
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) EXPECT_EQ(a.inputs[i].type.ToString(), b.inputs[i].type.ToString());
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) EXPECT_EQ(a.outputs[i].type.ToString(), b.outputs[i].type.ToString());
}

TEST(OnnxWriter, TinyCnnRoundTrips) {
  auto m = LoadModelFromFile(kTinyCnn);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::string path = (std::filesystem::temp_directory_path() / "inferloop_writer_roundtrip.onnx").string();
  ASSERT_TRUE(SaveModelToFile(*m, path).ok());
  auto back = LoadModelFromFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->opsets, m->opsets);
  EXPECT_EQ(back->ir_version, m->ir_version);
  ExpectSameGraph(m->graph, back->graph);
  auto image = ReadNpyFile(std::string(INFERLOOP_SOURCE_DIR) + "/examples/data/tiny_cnn/image.npy");
  ASSERT_TRUE(image.ok());
  auto a = RunModel(*m, {{"image", *image}});
  auto b = RunModel(*back, {{"image", *image}});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ExpectAllClose(a[0], b[0], 0, 0);
  std::filesystem::remove(path);
}

TEST(OnnxWriter, EveryAttributeKindAndSubgraphs) {
  ModelBuilder b;
  b.Input("c", DataType::kBool, {}).Input("x", DataType::kFloat, {2, -1}, {"", "n"}).Output("y", DataType::kFloat, {});
  b.Initializer("s", Tensor::FromStrings({2}, {"a", "bc"}));
  auto& n = b.Node("If", {"c"}, {"y"});
  n.set_name("branch");
  FloatAttr(n, "f", 1.5f);
  ModelBuilder::IntAttr(n, "i", -3);
  StrAttr(n, "str", "text");
  IntsAttr(n, "ints", {1, 2, 3});
  auto* fl = n.add_attribute();
  fl->set_name("floats");
  fl->set_type(onnxpb::AttributeProto::FLOATS);
  fl->add_floats(0.25f);
  auto* ts = n.add_attribute();
  ts->set_name("t");
  ts->set_type(onnxpb::AttributeProto::TENSOR);
  TensorToProto(Int64Tensor({3}, {4, 5, 6}), ts->mutable_t());
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n.add_attribute();
    a->set_name(branch);
    a->set_type(onnxpb::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    auto* node = g->add_node();
    node->set_op_type(std::string(branch) == "then_branch" ? "Relu" : "Neg");
    node->add_input("x");
    node->add_output("o");
    g->add_output()->set_name("o");
  }
  std::string bytes = b.Bytes();
  auto m = LoadModelFromBytes(bytes.data(), bytes.size(), "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto written = SerializeModel(*m);
  ASSERT_TRUE(written.ok());
  auto back = LoadModelFromBytes(written->data(), written->size(), "");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameGraph(m->graph, back->graph);
  EXPECT_EQ(back->graph.inputs[1].type.dims[1].symbol, "n");
  EXPECT_EQ(back->graph.initializers[0].second.strings()[1], "bc");
}

TEST(OnnxWriter, SaveToMissingFolderFails) {
  Model m;
  auto st = SaveModelToFile(m, "/nonexistent-dir/x.onnx");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent-dir/x.onnx"), std::string::npos);
}

}  // namespace
}  // namespace inferloop::testing
