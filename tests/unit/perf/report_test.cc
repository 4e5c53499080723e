#include "perf/report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "perf/endpoint.h"
#include "perf/perf_runner.h"
#include "perf/request_builder.h"

namespace inferloop::perf {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

PerfResult Point(double load, double tput, double p99) {
  PerfResult r;
  r.load = load;
  r.throughput_infer_per_s = tput;
  r.throughput_req_per_s = tput;
  r.completed = 100;
  r.latency_p99_us = p99;
  r.windows_measured = 3;
  r.stable = true;
  return r;
}

TEST(Csv, HeaderAndOneRowPerPoint) {
  auto a = Point(1, 1000, 1500);
  auto b = Point(2, 1800, 2500);
  b.errors = 3;
  b.errors_by_kind = {{"http_503", 2}, {"connect", 1}};
  b.has_server_stats = true;
  b.server_queue_us = 12.5;
  std::ostringstream os;
  RunSummary s;
  s.input_data = "samples";
  s.sample_names = {"a", "b", "c"};
  s.input_distribution = "zipf:1.2";
  WriteCsv(os, {a, b}, s);
  auto lines = Split(os.str(), '\n');
  ASSERT_EQ(lines.size(), 4u);  // header, 2 rows, trailing empty
  auto header = Split(lines[0], ',');
  EXPECT_EQ(header, CsvColumns(LoadMode::kConcurrency));
  EXPECT_EQ(header[0], "concurrency");
  auto row = Split(lines[2], ',');
  ASSERT_EQ(row.size(), header.size());
  EXPECT_EQ(row[0], "2");
  EXPECT_EQ(row[2], "1800.00");
  EXPECT_EQ(row[5], "3");
  EXPECT_EQ(row[10], "2500.0");
  EXPECT_EQ(row[13], "12.5");
  EXPECT_EQ(row[16], "yes");
  EXPECT_EQ(row[17], "connect=1;http_503=2");
  EXPECT_EQ(row[18], "3");
  EXPECT_EQ(row[19], "zipf:1.2");
  auto row_a = Split(lines[1], ',');
  EXPECT_EQ(row_a[13], "");  // no server stats: empty
}

TEST(Csv, RequestRateColumn) {
  auto p = Point(250.5, 250, 900);
  p.mode = LoadMode::kRequestRate;
  std::ostringstream os;
  WriteCsv(os, {p}, RunSummary{});
  EXPECT_EQ(os.str().rfind("request_rate,", 0), 0u);
  EXPECT_NE(os.str().find("\n250.5,"), std::string::npos);
}

TEST(Json, FieldsAndEscaping) {
  auto a = Point(4, 1000, 1500);
  a.errors_by_kind = {{"http_400", 1}};
  a.errors = 1;
  RunSummary s;
  s.url = "http://h:1";
  s.model = "m\"x";
  s.protocol = "rest-json";
  s.latency_bound_ms = 2.0;
  s.best_under_bound = 0;
  std::ostringstream os;
  WriteJson(os, {a}, s);
  std::string j = os.str();
  EXPECT_NE(j.find("\"model\": \"m\\\"x\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"latency_bound_ms\": 2"), std::string::npos);
  EXPECT_NE(j.find("\"best_under_bound\": 0"), std::string::npos);
  EXPECT_NE(j.find("\"errors_by_kind\": {\"http_400\": 1}"), std::string::npos);
  EXPECT_NE(j.find("\"server_queue_us\": null"), std::string::npos);
  EXPECT_NE(j.find("\"stable\": true"), std::string::npos);
  EXPECT_NE(j.find("\"interrupted\": false"), std::string::npos);
  EXPECT_NE(j.find("\"input_samples\": 1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"input_distribution\": \"round-robin\""), std::string::npos);
  EXPECT_NE(j.find("\"requests_per_sample\": []"), std::string::npos);
}

TEST(Table, ReportsBestPointUnderTheBound) {
  RunSummary s;
  s.model = "simple";
  s.url = "http://h:1";
  s.latency_bound_ms = 2.0;
  s.best_under_bound = 1;
  std::ostringstream os;
  WriteTable(os, {Point(1, 1000, 1500), Point(2, 1800, 1900), Point(4, 2000, 2500)}, s);
  EXPECT_NE(os.str().find("best 1800.0 infer/s at concurrency 2"), std::string::npos) << os.str();
}

TEST(MergeWindows, PoolsLatenciesAndErrors) {
  WindowSamples w1, w2;
  for (int i = 1; i <= 50; ++i) w1.latencies_us.push_back(i);
  for (int i = 51; i <= 100; ++i) w2.latencies_us.push_back(i);
  w2.errors["http_503"] = 4;
  PerfResult r = MergeWindows(LoadMode::kConcurrency, 8, 2, {w1, w2}, {1.0, 1.0});
  EXPECT_EQ(r.completed, 100u);
  EXPECT_EQ(r.errors, 4u);
  EXPECT_DOUBLE_EQ(r.throughput_req_per_s, 50);
  EXPECT_DOUBLE_EQ(r.throughput_infer_per_s, 100);  // batch 2
  EXPECT_EQ(r.latency_p50_us, 50);
  EXPECT_EQ(r.latency_p99_us, 99);
  EXPECT_EQ(r.latency_max_us, 100);
  EXPECT_DOUBLE_EQ(r.latency_avg_us, 50.5);
}

TEST(Endpoint, Parses) {
  auto e = ParseEndpoint("grpc://127.0.0.1:8001/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value().protocol, Endpoint::Protocol::kGrpc);
  EXPECT_EQ(e.value().host, "127.0.0.1");
  EXPECT_EQ(e.value().port, "8001");
  EXPECT_TRUE(ParseEndpoint("http://[::1]:8000").ok());
  for (const char* bad : {"127.0.0.1:8000", "https://h:1", "http://h", "http://h:x", "http://h:1/v2", "http://h:0"})
    EXPECT_FALSE(ParseEndpoint(bad).ok()) << bad;
}

TEST(RequestBuilder, BatchDimAndShapes) {
  ModelInfo m;
  m.name = "m";
  m.max_batch_size = 8;
  m.inputs = {{"a", "INT32", {-1, 16}}, {"b", "FP32", {-1, -1, 3}}};
  InputOptions o;
  o.batch_size = 4;
  auto missing = BuildInferRequest(m, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--shape b:"), std::string::npos) << missing.status().message();
  ASSERT_TRUE(ParseShapeOption("b:5,3", &o.shapes).ok());
  auto r = BuildInferRequest(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ShapeToString(r.value().inputs[0].tensor.shape()), "[4,16]");
  EXPECT_EQ(ShapeToString(r.value().inputs[1].tensor.shape()), "[4,5,3]");
  o.shapes["nosuch"] = {1};
  auto unknown = BuildInferRequest(m, o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("not an input"), std::string::npos);
  o.shapes.erase("nosuch");
  o.batch_size = 9;
  EXPECT_FALSE(BuildInferRequest(m, o).ok());  // above max_batch_size
  std::map<std::string, std::vector<int64_t>> s;
  EXPECT_FALSE(ParseShapeOption("b", &s).ok());
  EXPECT_FALSE(ParseShapeOption("b:1,-2", &s).ok());
}

TEST(RequestBuilder, EncodesBothTransports) {
  ModelInfo m;
  m.name = "m";
  m.inputs = {{"t", "BYTES", {2}}, {"x", "FP32", {3}}};
  auto r = BuildInferRequest(m, InputOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto json = EncodeRequest(r.value(), false);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_FALSE(json.value().rest_has_binary);
  EXPECT_NE(json.value().rest_body.find("\"BYTES\""), std::string::npos);
  EXPECT_FALSE(json.value().grpc_message.empty());
  auto bin = EncodeRequest(r.value(), true);
  ASSERT_TRUE(bin.ok());
  EXPECT_TRUE(bin.value().rest_has_binary);
  EXPECT_LT(bin.value().rest_json_length, bin.value().rest_body.size());
}

}  // namespace
}  // namespace inferloop::perf
