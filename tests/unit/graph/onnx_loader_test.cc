#include "graph/onnx_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "inferloop/session.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;
namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("inferloop_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A model whose weight lives in an external file: y = x + w.
void WriteExternalModel(const fs::path& dir, const std::string& location, int64_t offset) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {3}).Output("y", DataType::kFloat, {3});
  b.Node("Add", {"x", "w"}, {"y"});
  auto* w = b.proto().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(3);
  w->set_data_location(onnxpb::TensorProto::EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  kv("offset", std::to_string(offset));
  kv("length", "12");
  std::ofstream(dir / "model.onnx", std::ios::binary) << b.Bytes();
}

TEST(OnnxLoader, ReadsExternalData) {
  fs::path dir = TempDir("ext");
  WriteExternalModel(dir, "weights.bin", 4);
  float w[4] = {0, 10, 20, 30};  // first float is padding before offset 4
  std::ofstream(dir / "weights.bin", std::ios::binary).write(reinterpret_cast<char*>(w), sizeof w);
  auto s = Session::CreateFromFile((dir / "model.onnx").string());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", Tensor::FromVector<float>(DataType::kFloat, {3}, {1, 2, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[2], 33.0f);
  fs::remove_all(dir);
}

TEST(OnnxLoader, ExternalDataMissingOrShortOrEscapingIsAnError) {
  fs::path dir = TempDir("ext_bad");
  WriteExternalModel(dir, "missing.bin", 0);
  auto s = Session::CreateFromFile((dir / "model.onnx").string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("missing.bin"), std::string::npos) << s.status().ToString();

  WriteExternalModel(dir, "short.bin", 0);
  std::ofstream(dir / "short.bin", std::ios::binary) << "abc";
  s = Session::CreateFromFile((dir / "model.onnx").string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exceeds file"), std::string::npos) << s.status().ToString();

  WriteExternalModel(dir, "../../etc/passwd", 0);
  s = Session::CreateFromFile((dir / "model.onnx").string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("inside the model's folder"), std::string::npos) << s.status().ToString();
  fs::remove_all(dir);
}

TEST(OnnxLoader, InlinesModelLocalFunctionsWithAttributeReferences) {
  // Function "AddTwice"(a, b) -> out: t = Add(a, b); out = Add(t, b). Called twice.
  ModelBuilder b;
  b.proto().add_opset_import()->set_domain("local");
  b.proto().mutable_opset_import(1)->set_version(1);
  auto* fn = b.proto().add_functions();
  fn->set_name("AddTwice");
  fn->set_domain("local");
  fn->add_input("a");
  fn->add_input("b");
  fn->add_output("out");
  auto* op = fn->add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* n1 = fn->add_node();
  n1->set_op_type("Add");
  n1->add_input("a");
  n1->add_input("b");
  n1->add_output("t");
  auto* n2 = fn->add_node();
  n2->set_op_type("Add");
  n2->add_input("t");
  n2->add_input("b");
  n2->add_output("out");
  b.Input("x", DataType::kFloat, {2}).Input("y", DataType::kFloat, {2}).Output("z", DataType::kFloat, {2});
  b.Node("AddTwice", {"x", "y"}, {"t"}, "local");  // "t" also names a value inside the body
  b.Node("AddTwice", {"t", "y"}, {"z"}, "local");
  std::string bytes = b.Bytes();
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", Tensor::FromVector<float>(DataType::kFloat, {2}, {1, 2})},
                      {"y", Tensor::FromVector<float>(DataType::kFloat, {2}, {10, 100})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[0], 41.0f);   // 1 + 4*10
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 402.0f);  // 2 + 4*100
}

TEST(OnnxLoader, RecursiveFunctionIsAnErrorNotAStackOverflow) {
  ModelBuilder b;
  b.proto().add_opset_import()->set_domain("local");
  b.proto().mutable_opset_import(1)->set_version(1);
  auto* fn = b.proto().add_functions();
  fn->set_name("Loop");
  fn->set_domain("local");
  fn->add_input("a");
  fn->add_output("out");
  auto* n = fn->add_node();
  n->set_op_type("Loop");
  n->set_domain("local");
  n->add_input("a");
  n->add_output("out");
  b.Input("x", DataType::kFloat, {2}).Output("z", DataType::kFloat, {2});
  b.Node("Loop", {"x"}, {"z"}, "local");
  std::string bytes = b.Bytes();
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("recurses"), std::string::npos) << s.status().ToString();
}

TEST(OnnxLoader, Int4InitializerIsUnpacked) {
  ModelBuilder b;
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("q");
  t->set_data_type(22);  // INT4
  t->add_dims(3);
  t->set_raw_data(std::string("\x7f\x08", 2));  // elements 0xf(-1), 0x7(7), 0x8(-8)
  auto m = LoadModelFromBytes(b.Bytes().data(), b.Bytes().size(), "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Tensor& q = m->graph.initializers[0].second;
  ASSERT_EQ(q.size(), 3);
  EXPECT_EQ(q.data<int8_t>()[0], -1);
  EXPECT_EQ(q.data<int8_t>()[1], 7);
  EXPECT_EQ(q.data<int8_t>()[2], -8);
}

TEST(OnnxLoader, InitializerWithWrongByteCountIsAnError) {
  ModelBuilder b;
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(1);
  t->add_dims(4);
  t->set_raw_data(std::string(15, '\0'));
  auto m = LoadModelFromBytes(b.Bytes().data(), b.Bytes().size(), "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'w'"), std::string::npos);
  EXPECT_NE(m.status().message().find("16 bytes"), std::string::npos) << m.status().ToString();
}

}  // namespace
}  // namespace inferloop
