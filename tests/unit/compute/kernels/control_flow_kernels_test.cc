// Focused tests for the control-flow, sequence, ml, training and random kernels: error paths
// (bad positions, bad bodies, out-of-range indices, malformed trees) and semantics the
// conformance suite does not reach (Scan axes/directions, zero-trip Loop, seeded randomness).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "unit/compute/tensor_makers.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

using testing::F32;
using testing::I64;

onnxpb::AttributeProto* Attr(onnxpb::NodeProto& n, const std::string& name, onnxpb::AttributeProto::AttributeType t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}
void Ints(onnxpb::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = Attr(n, name, onnxpb::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void Int(onnxpb::NodeProto& n, const std::string& name, int64_t v) { Attr(n, name, onnxpb::AttributeProto::INT)->set_i(v); }
void Float(onnxpb::NodeProto& n, const std::string& name, float v) { Attr(n, name, onnxpb::AttributeProto::FLOAT)->set_f(v); }
void Str(onnxpb::NodeProto& n, const std::string& name, const std::string& v) { Attr(n, name, onnxpb::AttributeProto::STRING)->set_s(v); }
void TensorAttr(onnxpb::NodeProto& n, const std::string& name, const Tensor& t) {
  TensorToProto(t, Attr(n, name, onnxpb::AttributeProto::TENSOR)->mutable_t());
}

// A value declared with an element type only (any shape), or as a sequence of it.
void Declare(onnxpb::ValueInfoProto* vi, const std::string& name, DataType t, bool seq = false) {
  vi->set_name(name);
  auto* tp = vi->mutable_type();
  if (seq) tp = tp->mutable_sequence_type()->mutable_elem_type();
  tp->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
}

struct Io {
  std::string name;
  DataType t;
  bool seq = false;
};

// A body graph: inputs, outputs and nodes added by `fill`.
onnxpb::GraphProto* Body(onnxpb::NodeProto& n, const std::string& attr, const std::vector<Io>& ins, const std::vector<Io>& outs,
                         const std::function<void(onnxpb::GraphProto&)>& fill) {
  auto* g = Attr(n, attr, onnxpb::AttributeProto::GRAPH)->mutable_g();
  g->set_name(attr);
  for (const auto& i : ins) Declare(g->add_input(), i.name, i.t, i.seq);
  for (const auto& o : outs) Declare(g->add_output(), o.name, o.t, o.seq);
  fill(*g);
  return g;
}
onnxpb::NodeProto* AddNode(onnxpb::GraphProto& g, const std::string& op, const std::vector<std::string>& ins,
                           const std::vector<std::string>& outs, const std::string& domain = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

// One-node model; `domain_opsets` adds extra opset imports.
std::string OneNode(int64_t opset, const std::string& op, const std::vector<Io>& ins, const std::vector<Io>& outs,
                    const std::function<void(onnxpb::NodeProto&)>& attrs, const std::string& domain = "",
                    int64_t domain_opset = 1) {
  ModelBuilder b(opset);
  if (!domain.empty()) {
    auto* oi = b.proto().add_opset_import();
    oi->set_domain(domain);
    oi->set_version(domain_opset);
  }
  std::vector<std::string> in_names, out_names;
  for (const auto& i : ins) {
    if (!i.name.empty()) Declare(b.proto().mutable_graph()->add_input(), i.name, i.t, i.seq);
    in_names.push_back(i.name);
  }
  for (const auto& o : outs) {
    Declare(b.proto().mutable_graph()->add_output(), o.name, o.t, o.seq);
    out_names.push_back(o.name);
  }
  auto& n = b.Node(op, in_names, out_names, domain);
  if (attrs) attrs(n);
  return b.Bytes();
}

Result<std::unique_ptr<Session>> Make(const std::string& bytes) { return Session::CreateFromBytes(bytes.data(), bytes.size()); }

std::vector<float> Floats(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.size()); }

// ---------------------------------------------------------------------------------------------

TEST(FlowKernels, SequenceAtRejectsOutOfRangePosition) {
  ModelBuilder b(17);
  Declare(b.proto().mutable_graph()->add_input(), "x", DataType::kFloat);
  Declare(b.proto().mutable_graph()->add_input(), "p", DataType::kInt64);
  Declare(b.proto().mutable_graph()->add_output(), "y", DataType::kFloat);
  b.Node("SequenceConstruct", {"x", "x"}, {"s"});
  b.Node("SequenceAt", {"s", "p"}, {"y"});
  auto s = Make(b.Bytes());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({1}, {5})}, {"p", I64({}, {-2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  r = (*s)->Run({{"x", F32({1}, {5})}, {"p", I64({}, {2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
}

TEST(FlowKernels, SplitToSequenceRejectsBadSplitSum) {
  auto s = Make(OneNode(17, "SplitToSequence", {{"x", DataType::kFloat}, {"sp", DataType::kInt64}}, {{"y", DataType::kFloat, true}},
                        [](onnxpb::NodeProto& n) { Int(n, "axis", 0); }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({3}, {1, 2, 3})}, {"sp", I64({2}, {1, 1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sums to 2"), std::string::npos) << r.status().ToString();
  // A scalar split leaves a short last chunk.
  r = (*s)->Run({{"x", F32({3}, {1, 2, 3})}, {"sp", I64({}, {2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)[0].second.sequence().size(), 2u);
  EXPECT_EQ((*r)[0].second.sequence()[1].shape(), Shape({1}));
}

TEST(FlowKernels, IfRejectsNonBoolCondition) {
  auto s = Make(OneNode(13, "If", {{"c", DataType::kInt64}}, {{"y", DataType::kFloat}}, [](onnxpb::NodeProto& n) {
    for (const char* br : {"then_branch", "else_branch"})
      Body(n, br, {}, {{"o", DataType::kFloat}}, [](onnxpb::GraphProto& g) {
        auto* c = AddNode(g, "Constant", {}, {"o"});
        TensorAttr(*c, "value", F32({1}, {1}));
      });
  }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"c", I64({}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bool"), std::string::npos) << r.status().ToString();
}

// Loop body: v_out = v + v, cond_out = i < 2, scan = v_out.
void DoublingBody(onnxpb::NodeProto& n) {
  Body(n, "body", {{"i", DataType::kInt64}, {"c", DataType::kBool}, {"v", DataType::kFloat}},
       {{"c2", DataType::kBool}, {"v2", DataType::kFloat}, {"sc", DataType::kFloat}}, [](onnxpb::GraphProto& g) {
         AddNode(g, "Add", {"v", "v"}, {"v2"});
         auto* k = AddNode(g, "Constant", {}, {"two"});
         TensorAttr(*k, "value", I64({}, {2}));
         AddNode(g, "Less", {"i", "two"}, {"c2"});
         AddNode(g, "Identity", {"v2"}, {"sc"});
       });
}

TEST(FlowKernels, LoopStopsOnBodyConditionAndHandlesZeroTrips) {
  auto s = Make(OneNode(13, "Loop", {{"M", DataType::kInt64}, {"", DataType::kBool}, {"v", DataType::kFloat}},
                        {{"vf", DataType::kFloat}, {"scan", DataType::kFloat}}, DoublingBody));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"M", I64({}, {10})}, {"v", F32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Iterations 0, 1, 2 run (cond becomes false after i = 2).
  EXPECT_EQ(Floats((*r)[0].second.tensor()), std::vector<float>({8, 16}));
  EXPECT_EQ((*r)[1].second.tensor().shape(), Shape({3, 2}));
  r = (*s)->Run({{"M", I64({}, {0})}, {"v", F32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats((*r)[0].second.tensor()), std::vector<float>({1, 2}));
  EXPECT_EQ((*r)[1].second.tensor().shape()[0], 0);
}

TEST(FlowKernels, LoopRejectsBodyWithWrongInputCount) {
  auto s = Make(OneNode(13, "Loop", {{"M", DataType::kInt64}, {"", DataType::kBool}}, {{"vf", DataType::kFloat}}, DoublingBody));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("body has 3 inputs, expected 2"), std::string::npos) << s.status().ToString();
}

// Scan body: s2 = s + x, y = s2.
void SumBody(onnxpb::NodeProto& n) {
  Body(n, "body", {{"s", DataType::kFloat}, {"x", DataType::kFloat}}, {{"s2", DataType::kFloat}, {"y", DataType::kFloat}},
       [](onnxpb::GraphProto& g) {
         AddNode(g, "Add", {"s", "x"}, {"s2"});
         AddNode(g, "Identity", {"s2"}, {"y"});
       });
}

TEST(FlowKernels, ScanHonoursAxesAndDirections) {
  auto s = Make(OneNode(11, "Scan", {{"init", DataType::kFloat}, {"X", DataType::kFloat}}, {{"fin", DataType::kFloat}, {"Y", DataType::kFloat}},
                        [](onnxpb::NodeProto& n) {
                          SumBody(n);
                          Int(n, "num_scan_inputs", 1);
                          Ints(n, "scan_input_axes", {1});
                          Ints(n, "scan_input_directions", {1});
                          Ints(n, "scan_output_axes", {-1});
                          Ints(n, "scan_output_directions", {1});
                        }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // X = [[0,1,2],[3,4,5]] scanned over columns from the back: partial sums (1,2)+(2,5)=(3,7), +(1,4)=(4,11), +(0,3)=(4,14).
  auto r = (*s)->Run({{"init", F32({2}, {1, 2})}, {"X", F32({2, 3}, {0, 1, 2, 3, 4, 5})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats((*r)[0].second.tensor()), std::vector<float>({4, 14}));
  // Output built in reverse along the last axis: column t holds the partial sum of iteration 2 - t.
  EXPECT_EQ((*r)[1].second.tensor().shape(), Shape({2, 3}));
  EXPECT_EQ(Floats((*r)[1].second.tensor()), std::vector<float>({4, 4, 3, 14, 11, 7}));
}

TEST(FlowKernels, ScanRejectsMismatchedLengthsAndBadAxis) {
  auto s = Make(OneNode(11, "Scan", {{"init", DataType::kFloat}, {"X", DataType::kFloat}}, {{"fin", DataType::kFloat}, {"Y", DataType::kFloat}},
                        [](onnxpb::NodeProto& n) {
                          SumBody(n);
                          Int(n, "num_scan_inputs", 1);
                          Ints(n, "scan_input_axes", {2});
                        }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"init", F32({2}, {1, 2})}, {"X", F32({3, 2}, {0, 1, 2, 3, 4, 5})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
}

TEST(FlowKernels, Scan8HonoursSequenceLens) {
  auto s = Make(OneNode(8, "Scan", {{"lens", DataType::kInt64}, {"init", DataType::kFloat}, {"X", DataType::kFloat}},
                        {{"fin", DataType::kFloat}, {"Y", DataType::kFloat}}, [](onnxpb::NodeProto& n) {
                          SumBody(n);
                          Int(n, "num_scan_inputs", 1);
                        }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Batch 0 runs 3 steps, batch 1 only 1; its later scan rows are zero.
  auto r = (*s)->Run({{"lens", I64({2}, {3, 1})}, {"init", F32({2, 1}, {0, 0})}, {"X", F32({2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats((*r)[0].second.tensor()), std::vector<float>({6, 4}));
  EXPECT_EQ(Floats((*r)[1].second.tensor()), std::vector<float>({1, 3, 6, 4, 0, 0}));
  r = (*s)->Run({{"lens", I64({2}, {4, 1})}, {"init", F32({2, 1}, {0, 0})}, {"X", F32({2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(r.ok());
}

TEST(FlowKernels, ArrayFeatureExtractorRejectsOutOfRangeIndex) {
  auto s = Make(OneNode(17, "ArrayFeatureExtractor", {{"x", DataType::kFloat}, {"i", DataType::kInt64}}, {{"y", DataType::kFloat}}, nullptr,
                        "ai.onnx.ml", 1));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({2, 2}, {1, 2, 3, 4})}, {"i", I64({1}, {2})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().ToString();
}

TEST(FlowKernels, LabelEncoderMatchesNanKeysAndLastDuplicateWins) {
  auto s = Make(OneNode(17, "LabelEncoder", {{"x", DataType::kFloat}}, {{"y", DataType::kInt64}},
                        [](onnxpb::NodeProto& n) {
                          auto* k = Attr(n, "keys_floats", onnxpb::AttributeProto::FLOATS);
                          for (float f : {1.0f, NAN, 1.0f}) k->add_floats(f);
                          Ints(n, "values_int64s", {10, 20, 30});
                          Int(n, "default_int64", 7);
                        },
                        "ai.onnx.ml", 2));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({3}, {1.0f, -NAN, 2.0f})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const int64_t* y = (*r)[0].second.tensor().data<int64_t>();
  EXPECT_EQ(y[0], 30);
  EXPECT_EQ(y[1], 20);
  EXPECT_EQ(y[2], 7);
}

TEST(FlowKernels, TreeEnsembleRejectsCyclesAndBadIndices) {
  auto make = [](std::vector<int64_t> true_ids, std::vector<int64_t> true_leafs) {
    return OneNode(17, "TreeEnsemble", {{"x", DataType::kFloat}}, {{"y", DataType::kFloat}},
                   [&](onnxpb::NodeProto& n) {
                     Int(n, "n_targets", 1);
                     Ints(n, "tree_roots", {0});
                     Ints(n, "nodes_featureids", {0, 0});
                     TensorAttr(n, "nodes_modes", Tensor::FromVector<uint8_t>(DataType::kUInt8, {2}, {0, 0}));
                     TensorAttr(n, "nodes_splits", F32({2}, {0.5f, 0.5f}));
                     Ints(n, "nodes_truenodeids", true_ids);
                     Ints(n, "nodes_trueleafs", true_leafs);
                     Ints(n, "nodes_falsenodeids", {0, 0});
                     Ints(n, "nodes_falseleafs", {1, 1});
                     Ints(n, "leaf_targetids", {0});
                     TensorAttr(n, "leaf_weights", F32({1}, {1}));
                   },
                   "ai.onnx.ml", 5);
  };
  auto ok = Make(make({1, 0}, {0, 1}));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  auto r = (*ok)->Run({{"x", F32({2, 1}, {0.0f, 1.0f})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto cyc = Make(make({1, 0}, {0, 0}));  // node 1's true branch goes back to node 0
  ASSERT_FALSE(cyc.ok());
  EXPECT_NE(cyc.status().message().find("cycle"), std::string::npos) << cyc.status().ToString();
  auto bad = Make(make({1, 5}, {0, 1}));  // leaf 5 does not exist
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos) << bad.status().ToString();
  // Feature index beyond X's columns is a run-time error.
  r = (*ok)->Run({{"x", F32({1, 0}, {})}});
  ASSERT_FALSE(r.ok());
}

TEST(FlowKernels, MomentumRequiresKnownMode) {
  auto s = Make(OneNode(17, "Momentum",
                        {{"r", DataType::kFloat}, {"t", DataType::kInt64}, {"x", DataType::kFloat}, {"g", DataType::kFloat}, {"v", DataType::kFloat}},
                        {{"xn", DataType::kFloat}, {"vn", DataType::kFloat}},
                        [](onnxpb::NodeProto& n) {
                          Float(n, "alpha", 0.9f);
                          Float(n, "beta", 0.1f);
                          Float(n, "norm_coefficient", 0.0f);
                          Str(n, "mode", "heavy-ball");
                        },
                        "ai.onnx.preview.training", 1));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("mode"), std::string::npos) << s.status().ToString();
}

TEST(FlowKernels, SeededRandomUniformIsReproducibleAndInRange) {
  auto s = Make(OneNode(17, "RandomUniform", {}, {{"y", DataType::kDouble}}, [](onnxpb::NodeProto& n) {
    Ints(n, "shape", {3, 4});
    Int(n, "dtype", static_cast<int64_t>(DataType::kDouble));
    Float(n, "low", -2.0f);
    Float(n, "high", 3.0f);
    Float(n, "seed", 42.0f);
  }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto a = (*s)->Run({});
  auto b = (*s)->Run({});
  ASSERT_TRUE(a.ok() && b.ok());
  const Tensor& ta = (*a)[0].second.tensor();
  const Tensor& tb = (*b)[0].second.tensor();
  ASSERT_EQ(ta.shape(), Shape({3, 4}));
  ASSERT_EQ(ta.dtype(), DataType::kDouble);
  for (int64_t i = 0; i < ta.size(); ++i) {
    EXPECT_EQ(ta.data<double>()[i], tb.data<double>()[i]);
    EXPECT_GE(ta.data<double>()[i], -2.0);
    EXPECT_LT(ta.data<double>()[i], 3.0);
  }
}

TEST(FlowKernels, BernoulliRejectsProbabilitiesOutsideUnitInterval) {
  auto s = Make(OneNode(22, "Bernoulli", {{"p", DataType::kFloat}}, {{"y", DataType::kFloat}}, nullptr));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"p", F32({3}, {0.0f, 1.0f, 0.5f})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[0], 0.0f);
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 1.0f);
  r = (*s)->Run({{"p", F32({1}, {1.5f})}});
  ASSERT_FALSE(r.ok());
}

}  // namespace
}  // namespace inferloop
