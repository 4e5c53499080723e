#include "tools/run_profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "unit/comma_decimal_locale.h"
#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

// y = If(cond, then: Neg(Relu(x)), else: Identity(Relu(x))), with named nodes.
std::string IfModel() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Input("cond", DataType::kBool, {});
  b.Output("y", DataType::kFloat, {2});
  b.Node("Relu", {"x"}, {"r"}).set_name("relu1");
  onnxpb::NodeProto& n = b.Node("If", {"cond"}, {"y"});
  n.set_name("if1");
  auto branch = [&](const char* attr, const char* op, const char* node, const char* out) {
    auto* a = n.add_attribute();
    a->set_name(attr);
    a->set_type(onnxpb::AttributeProto::GRAPH);
    onnxpb::GraphProto* g = a->mutable_g();
    g->set_name(attr);
    auto* body = g->add_node();
    body->set_op_type(op);
    body->set_name(node);
    body->add_input("r");
    body->add_output(out);
    auto* vi = g->add_output();
    vi->set_name(out);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(DataType::kFloat));
  };
  branch("then_branch", "Neg", "neg1", "t_out");
  branch("else_branch", "Identity", "ident1", "e_out");
  return b.Bytes();
}

TEST(RunProfile, SessionRecordsEveryNodeWithBodiesNestedInTheirParent) {
  const std::string bytes = IfModel();
  SessionOptions so;
  so.optimization_level = 0;
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), so);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::vector<NamedValue> feeds = {{"x", Tensor::FromVector<float>(DataType::kFloat, {2}, {-1.f, 2.f})},
                                         {"cond", Tensor::FromVector<uint8_t>(DataType::kBool, {}, {1})}};
  // No profile: nothing is recorded anywhere (and the run is right).
  auto plain = (*s)->Run(feeds);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ((*plain)[0].second.tensor().data<float>()[1], -2.f);

  std::vector<NodeTiming> t;
  RunOptions ro;
  ro.profile = &t;
  auto r = (*s)->Run(feeds, ro);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].node, "relu1");
  EXPECT_EQ(t[0].op_type, "Relu");
  EXPECT_EQ(t[0].depth, 0);
  EXPECT_EQ(t[1].node, "neg1");  // the body's node, recorded before its If
  EXPECT_EQ(t[1].op_type, "Neg");
  EXPECT_EQ(t[1].depth, 1);
  EXPECT_EQ(t[2].node, "if1");
  EXPECT_EQ(t[2].depth, 0);
  for (const NodeTiming& x : t) EXPECT_GE(x.duration_ns, 0);
  EXPECT_LE(t[0].start_ns + t[0].duration_ns, t[2].start_ns);  // sequential
  EXPECT_GE(t[1].start_ns, t[2].start_ns);                      // the body inside its If
  EXPECT_LE(t[1].start_ns + t[1].duration_ns, t[2].start_ns + t[2].duration_ns);

  // The other branch, through RunInto, appends to the same vector.
  std::vector<NamedValue> outs;
  const std::vector<NamedValue> feeds2 = {feeds[0], {"cond", Tensor::FromVector<uint8_t>(DataType::kBool, {}, {0})}};
  ASSERT_TRUE((*s)->RunInto(feeds2, outs, ro).ok());
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[4].node, "ident1");
  EXPECT_EQ(t[4].depth, 1);
}

NodeTiming T(const char* node, const char* op, int64_t start_ms, int64_t ms, int depth = 0) {
  return NodeTiming{node, op, start_ms * 1'000'000, ms * 1'000'000, depth};
}

TEST(RunProfile, TablesAverageOverRunsAndCountTheMainGraphOnce) {
  RunProfile p;
  EXPECT_EQ(p.FormatTables(10), "");
  // Run 1: conv 2 ms, relu 1 ms, a loop of 3 ms whose body node took 2 ms. Run 2: conv 4 ms.
  p.AddRun({T("conv", "Conv", 100, 2), T("relu", "Relu", 102, 1), T("body_mul", "Mul", 103, 2, 1), T("loop", "Loop", 103, 3)});
  p.AddRun({T("conv", "Conv", 200, 4), T("relu", "Relu", 204, 1), T("body_mul", "Mul", 205, 2, 1), T("loop", "Loop", 205, 3)});
  EXPECT_EQ(p.runs(), 2);
  const std::string tables = p.FormatTables(2);
  // Main-graph kernel time per run: (2+1+3 + 4+1+3) / 2 = 7 ms; Conv (2+4)/2 = 3 ms = 42.9%,
  // Loop 3 ms = 42.9%, Relu 1 ms = 14.3%. The body's Mul is inside the Loop's time: not an op row.
  EXPECT_NE(tables.find("kernel total 7.000 ms per run"), std::string::npos) << tables;
  EXPECT_NE(tables.find("| Conv | 1 | 3.000 | 42.9% |"), std::string::npos) << tables;
  EXPECT_NE(tables.find("| Loop | 1 | 3.000 | 42.9% |"), std::string::npos) << tables;
  EXPECT_NE(tables.find("| Relu | 1 | 1.000 | 14.3% |"), std::string::npos) << tables;
  EXPECT_EQ(tables.find("| Mul | 1 |"), std::string::npos) << tables;
  // The 2 slowest nodes of 4, every depth: conv (3 ms) and loop (3 ms), in first-seen order on ties.
  EXPECT_NE(tables.find("The 2 slowest nodes (of 4)"), std::string::npos) << tables;
  EXPECT_NE(tables.find("| conv | Conv | 0 | 3.000 | 1.00 |"), std::string::npos) << tables;
  EXPECT_NE(tables.find("| loop | Loop | 0 | 3.000 | 1.00 |"), std::string::npos) << tables;
  EXPECT_EQ(tables.find("| body_mul |"), std::string::npos) << tables;
  EXPECT_NE(p.FormatTables(10).find("| body_mul | Mul | 1 | 2.000 | 1.00 |"), std::string::npos);
}

// The profile's Chrome trace as written to a temporary file ("" when it could not be written).
std::string TraceText(const RunProfile& p, const char* file) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  if (!p.WriteChromeTrace(path).ok()) return "";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

TEST(RunProfile, ChromeTraceIsOnnxRuntimesFormatFromTheFirstRun) {
  RunProfile p;
  p.AddRun({T("conv", "Conv", 100, 2), T("", "com.inferloop:FusedConv", 102, 1)}, 0);
  p.AddRun({T("conv", "Conv", 110, 2)}, 3);
  const std::string j = TraceText(p, "run_profile_test_trace.json");
  ASSERT_FALSE(j.empty());
  EXPECT_EQ(j.substr(0, 2), "[\n");
  EXPECT_EQ(j.substr(j.size() - 2), "]\n");
  // Run 1 starts at 0 us and lasts 3 ms; the node events keep their offsets in microseconds.
  EXPECT_NE(j.find("{\"cat\":\"Session\",\"name\":\"model_run\",\"ph\":\"X\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"tid\":0,\"ts\":0.000,\"dur\":3000.000}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"name\":\"conv_kernel_time\",\"ph\":\"X\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"tid\":0,\"ts\":2000.000,\"dur\":1000.000,\"args\":{\"op_name\":\"com.inferloop:FusedConv\",\"depth\":0}"),
            std::string::npos) << j;
  EXPECT_NE(j.find("\"name\":\"com.inferloop:FusedConv#0_kernel_time\""), std::string::npos) << j;  // unnamed node
  EXPECT_NE(j.find("\"tid\":3,\"ts\":10000.000,\"dur\":2000.000,\"args\":{\"op_name\":\"Conv\""), std::string::npos) << j;
  size_t events = 0;
  for (size_t at = j.find("\"ph\":\"X\""); at != std::string::npos; at = j.find("\"ph\":\"X\"", at + 1)) ++events;
  EXPECT_EQ(events, 5u);  // 2 runs + 3 nodes

  EXPECT_EQ(p.WriteChromeTrace("/nonexistent-dir/trace.json").code(), StatusCode::kInvalidArgument);
}

// A host program (Python, a C API user) that set a locale with ',' as the decimal point still
// gets JSON numbers: printf's %.3f wrote "ts":2000,000 there.
TEST(RunProfile, ChromeTraceNumbersIgnoreTheProcessLocale) {
  testing::CommaDecimalLocale locale;
  ASSERT_TRUE(locale.ok()) << locale.why();
  RunProfile p;
  p.AddRun({T("conv", "Conv", 100, 2)}, 0);
  const std::string j = TraceText(p, "run_profile_test_trace_locale.json");
  ASSERT_FALSE(j.empty());
  EXPECT_NE(j.find("\"ts\":0.000,\"dur\":2000.000"), std::string::npos) << j;
  EXPECT_EQ(j.find(",000"), std::string::npos) << j;
}

}  // namespace
}  // namespace inferloop
