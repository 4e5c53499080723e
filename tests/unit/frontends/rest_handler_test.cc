// RestHandler behind a real HttpServer on loopback, against FakeInferenceService: every KServe v2
// route's status and body shape, errors and their HTTP statuses, binary tensor data.
#include "frontends/rest_handler.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstring>
#include <thread>

#include "fake_inference_service.h"
#include "frontends/http_status.h"
#include "http_test_client.h"

namespace inferloop::frontends {
namespace {

using testing::ClientResponse;
using testing::FakeInferenceService;
using testing::MakeHttpRequest;
using testing::TestConnection;
using testing::WaitFor;
namespace rj = rapidjson;

constexpr const char kJsonInfer[] =
    R"({"id":"req-1","inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})";

rj::Document ParseJson(const std::string& text) {
  rj::Document doc;
  doc.Parse(text.data(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

void ExpectJsonError(const ClientResponse& r, int status, const std::string& needle = "") {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  rj::Document doc = ParseJson(r.body);
  ASSERT_TRUE(doc.IsObject()) << r.body;
  ASSERT_TRUE(doc.HasMember("error") && doc["error"].IsString()) << r.body;
  if (!needle.empty()) {
    EXPECT_NE(std::string(doc["error"].GetString()).find(needle), std::string::npos) << r.body;
  }
  if (status == 429 || status == 503) {
    EXPECT_EQ(r.HeaderOr("Retry-After"), "1");
  }
}

class RestTest : public ::testing::Test {
 protected:
  void SetUp() override { Restart(); }
  void Restart() {
    server_.reset();
    handler_ = std::make_unique<RestHandler>(service_);
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto server = HttpServer::Start(options, handler_->AsHttpHandler());
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }
  void TearDown() override { server_.reset(); }

  ClientResponse Get(const std::string& target) { return Call("GET", target); }
  ClientResponse Post(const std::string& target, const std::string& body = "",
                      const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return Call("POST", target, body, headers);
  }
  ClientResponse Call(const std::string& method, const std::string& target, const std::string& body = "",
                      const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return conn().Roundtrip(MakeHttpRequest(method, target, body, headers));
  }
  // One keep-alive connection for the test's requests.
  TestConnection& conn() {
    if (!conn_) conn_ = std::make_unique<TestConnection>(server_->port());
    return *conn_;
  }

  FakeInferenceService service_;
  std::unique_ptr<RestHandler> handler_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<TestConnection> conn_;
};

TEST(HttpStatus, MappingFollowsTheInferenceServiceContract) {
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kOk), 200);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kCancelled), 499);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kInternal), 500);
  EXPECT_TRUE(HttpStatusWantsRetryAfter(429));
  EXPECT_TRUE(HttpStatusWantsRetryAfter(503));
  EXPECT_FALSE(HttpStatusWantsRetryAfter(504));
}

TEST_F(RestTest, HealthLiveAndReady) {
  auto r = Get("/v2/health/live");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(Get("/v2/health/ready").status, 200);
  service_.ready = false;
  r = Get("/v2/health/ready");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.HeaderOr("Retry-After"), "1");
  service_.live = false;
  EXPECT_EQ(Get("/v2/health/live").status, 503);
  EXPECT_EQ(Get("/v2/health/other").status, 404);
  EXPECT_EQ(Post("/v2/health/live").status, 405);
}

TEST_F(RestTest, ServerMetadata) {
  auto r = Get("/v2");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  auto doc = ParseJson(r.body);
  EXPECT_STREQ(doc["name"].GetString(), "inferloop");
  EXPECT_STREQ(doc["version"].GetString(), "0.4.0");
  ASSERT_TRUE(doc["extensions"].IsArray());
  EXPECT_EQ(doc["extensions"].Size(), 3u);
  EXPECT_STREQ(doc["extensions"][1].GetString(), "statistics");
}

TEST_F(RestTest, ModelMetadataWithAndWithoutVersion) {
  auto r = Get("/v2/models/simple");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = ParseJson(r.body);
  EXPECT_STREQ(doc["name"].GetString(), "simple");
  ASSERT_EQ(doc["versions"].Size(), 2u);
  EXPECT_STREQ(doc["versions"][0].GetString(), "1");
  EXPECT_STREQ(doc["platform"].GetString(), "onnxruntime_onnx");
  EXPECT_EQ(doc["memory_bytes"].GetInt64(), 12345);
  ASSERT_EQ(doc["inputs"].Size(), 1u);
  EXPECT_STREQ(doc["inputs"][0]["name"].GetString(), "INPUT0");
  EXPECT_STREQ(doc["inputs"][0]["datatype"].GetString(), "FP32");
  ASSERT_EQ(doc["inputs"][0]["shape"].Size(), 2u);
  EXPECT_EQ(doc["inputs"][0]["shape"][0].GetInt64(), -1);
  EXPECT_EQ(doc["inputs"][0]["shape"][1].GetInt64(), 4);
  EXPECT_STREQ(doc["outputs"][0]["name"].GetString(), "OUTPUT0");

  r = Get("/v2/models/simple/versions/2");
  ASSERT_EQ(r.status, 200);
  doc = ParseJson(r.body);
  ASSERT_EQ(doc["versions"].Size(), 1u);
  EXPECT_STREQ(doc["versions"][0].GetString(), "2");
  auto calls = service_.calls().metadata;
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], std::make_pair(std::string("simple"), std::string("")));
  EXPECT_EQ(calls[1], std::make_pair(std::string("simple"), std::string("2")));

  ExpectJsonError(Get("/v2/models/nope"), 404, "unknown model 'nope'");
  ExpectJsonError(Get("/v2/models/simple/versions/9"), 404, "no version 9");
  EXPECT_EQ(Post("/v2/models/simple").status, 405);
}

TEST_F(RestTest, PathSegmentsAreUrlDecoded) {
  service_.models["my model/x"] = service_.models["simple"];
  service_.models["my model/x"].name = "my model/x";
  Restart();
  auto r = Get("/v2/models/my%20model%2Fx/ready");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(service_.calls().ready.back().first, "my model/x");
  ExpectJsonError(Get("/v2/models/bad%zzname"), 400, "percent-encoding");
  ExpectJsonError(Get("/v2/models/bad%2"), 400, "percent-encoding");
  // The query string is ignored.
  EXPECT_EQ(Get("/v2/models/simple/ready?verbose=1").status, 200);
}

TEST_F(RestTest, ModelReady) {
  EXPECT_EQ(Get("/v2/models/simple/ready").status, 200);
  EXPECT_EQ(Get("/v2/models/simple/versions/1/ready").status, 200);
  service_.model_not_ready["simple"] = true;
  auto r = Get("/v2/models/simple/ready");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.HeaderOr("Retry-After"), "1");
  ExpectJsonError(Get("/v2/models/nope/ready"), 404);
}

TEST_F(RestTest, ModelConfig) {
  auto r = Get("/v2/models/simple/config");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  EXPECT_EQ(r.body, "{\"name\":\"simple\",\"max_batch_size\":8}");
  EXPECT_EQ(service_.calls().config.back().first, "simple");
  ExpectJsonError(Get("/v2/models/nope/config"), 404);
}

TEST_F(RestTest, InferJson) {
  auto r = Post("/v2/models/simple/versions/1/infer", kJsonInfer, {{"Content-Type", "application/json"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  EXPECT_EQ(r.Header("Inference-Header-Content-Length"), nullptr);
  auto doc = ParseJson(r.body);
  EXPECT_STREQ(doc["model_name"].GetString(), "simple");
  EXPECT_STREQ(doc["model_version"].GetString(), "1");
  EXPECT_STREQ(doc["id"].GetString(), "req-1");
  ASSERT_EQ(doc["outputs"].Size(), 1u);
  const auto& out = doc["outputs"][0];
  EXPECT_STREQ(out["name"].GetString(), "INPUT0_out");
  EXPECT_STREQ(out["datatype"].GetString(), "FP32");
  ASSERT_EQ(out["data"].Size(), 4u);
  EXPECT_EQ(out["data"][3].GetDouble(), 4.0);

  auto calls = service_.calls();
  ASSERT_EQ(calls.infers.size(), 1u);
  EXPECT_EQ(calls.infers[0].model_name, "simple");
  EXPECT_EQ(calls.infers[0].model_version, "1");
  EXPECT_EQ(calls.infers[0].id, "req-1");
  EXPECT_EQ(calls.contexts[0].protocol, "http");
  EXPECT_EQ(calls.contexts[0].request_bytes, std::strlen(kJsonInfer));
  EXPECT_FALSE(calls.contexts[0].cancelled->load());
}

TEST_F(RestTest, InferBinaryRequestAndResponse) {
  InferRequest request;
  request.id = "bin";
  InferInput input;
  input.name = "INPUT0";
  input.tensor = Tensor::FromVector(DataType::kFloat, Shape{1, 4}, std::vector<float>{1.5f, -2.f, 3.f, 8.f});
  request.inputs.push_back(std::move(input));
  request.parameters[kBinaryDataOutputParam] = true;
  auto encoded = EncodeJsonInferRequest(request, /*binary_inputs=*/true);
  ASSERT_TRUE(encoded.ok());
  ASSERT_TRUE(encoded->has_binary);
  auto r = Post("/v2/models/simple/infer", encoded->body,
                {{"Inference-Header-Content-Length", std::to_string(encoded->json_length)}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/octet-stream");
  size_t json_length = std::stoul(r.HeaderOr("Inference-Header-Content-Length", "0"));
  ASSERT_GT(json_length, 0u);
  ASSERT_EQ(r.body.size(), json_length + 16);
  auto doc = ParseJson(r.body.substr(0, json_length));
  EXPECT_STREQ(doc["id"].GetString(), "bin");
  const auto& out = doc["outputs"][0];
  EXPECT_EQ(out["parameters"]["binary_data_size"].GetInt64(), 16);
  EXPECT_FALSE(out.HasMember("data"));
  float values[4];
  std::memcpy(values, r.body.data() + json_length, 16);
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[3], 8.f);
}

TEST_F(RestTest, InferBadRequests) {
  ExpectJsonError(Post("/v2/models/simple/infer", "{\"inputs\": [ broken"), 400);
  ExpectJsonError(Post("/v2/models/simple/infer", kJsonInfer, {{"Inference-Header-Content-Length", "abc"}}), 400,
                  "Inference-Header-Content-Length");
  ExpectJsonError(Post("/v2/models/simple/infer", kJsonInfer, {{"Inference-Header-Content-Length", "-3"}}), 400,
                  "Inference-Header-Content-Length");
  ExpectJsonError(Post("/v2/models/simple/infer", kJsonInfer, {{"Inference-Header-Content-Length", "99999"}}), 400,
                  "Inference-Header-Content-Length");
  ExpectJsonError(Post("/v2/models/simple/infer", ""), 400);
  ExpectJsonError(Post("/v2/models/nope/infer", kJsonInfer), 404, "unknown model 'nope'");
  EXPECT_EQ(Get("/v2/models/simple/infer").status, 405);
  EXPECT_EQ(Get("/v2/models/simple/infer").HeaderOr("Allow"), "POST");
  // Nothing undecodable reached the service.
  EXPECT_EQ(service_.calls().infers.size(), 1u);  // only the unknown model
}

TEST_F(RestTest, InferErrorsMapToHttpStatusesWithRetryAfter) {
  struct Case {
    Status status;
    int http;
  };
  std::vector<Case> cases = {{Status::ResourceExhausted("too many in flight"), 429},
                             {Status::Unavailable("queue full"), 503},
                             {Status(StatusCode::kDeadlineExceeded, "timed out"), 504},
                             {Status(StatusCode::kCancelled, "client went away"), 499},
                             {Status::Internal("bug"), 500},
                             {Status::Unimplemented("no"), 501},
                             {Status::FailedPrecondition("nope"), 400}};
  for (const auto& c : cases) {
    service_.on_infer = [s = c.status](serve::InferRequest, serve::RequestContext, serve::InferCallback done) {
      done(s);
    };
    auto r = Post("/v2/models/simple/infer", kJsonInfer);
    ExpectJsonError(r, c.http, c.status.message());
    if (c.http != 429 && c.http != 503) {
      EXPECT_EQ(r.Header("Retry-After"), nullptr);
    }
  }
}

TEST_F(RestTest, InferAnsweredLaterFromAnotherThread) {
  std::mutex mu;
  serve::InferCallback pending;
  serve::InferRequest seen;
  service_.on_infer = [&](serve::InferRequest req, serve::RequestContext, serve::InferCallback done) {
    std::lock_guard<std::mutex> lock(mu);
    seen = std::move(req);
    pending = std::move(done);
  };
  ASSERT_TRUE(conn().Send(MakeHttpRequest("POST", "/v2/models/simple/infer", kJsonInfer)));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return static_cast<bool>(pending);
  }));
  std::thread worker([&] {
    std::lock_guard<std::mutex> lock(mu);
    serve::InferResponse response;
    response.model_name = "simple";
    response.model_version = "2";
    response.id = seen.id;
    response.outputs.push_back({"OUTPUT0", seen.inputs[0].tensor, {}});
    pending(std::move(response));
  });
  worker.join();
  auto r = conn().Read();
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = ParseJson(r.body);
  EXPECT_STREQ(doc["outputs"][0]["name"].GetString(), "OUTPUT0");
  EXPECT_STREQ(doc["id"].GetString(), "req-1");
}

TEST_F(RestTest, ClientClosingMidInferSetsTheCancelledFlag) {
  std::mutex mu;
  serve::InferCallback pending;
  std::shared_ptr<std::atomic<bool>> cancelled;
  service_.on_infer = [&](serve::InferRequest, serve::RequestContext ctx, serve::InferCallback done) {
    std::lock_guard<std::mutex> lock(mu);
    cancelled = ctx.cancelled;
    pending = std::move(done);
  };
  {
    TestConnection c(server_->port());
    ASSERT_TRUE(c.Send(MakeHttpRequest("POST", "/v2/models/simple/infer", kJsonInfer)));
    ASSERT_TRUE(WaitFor([&] {
      std::lock_guard<std::mutex> lock(mu);
      return static_cast<bool>(pending);
    }));
    EXPECT_FALSE(cancelled->load());
  }
  EXPECT_TRUE(WaitFor([&] { return cancelled->load(); }));
  std::lock_guard<std::mutex> lock(mu);
  pending(Status(StatusCode::kCancelled, "client went away"));  // dropped safely
}

TEST_F(RestTest, RepositoryIndex) {
  auto r = Post("/v2/repository/index");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = ParseJson(r.body);
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), 2u);
  EXPECT_STREQ(doc[0]["name"].GetString(), "simple");
  EXPECT_STREQ(doc[0]["version"].GetString(), "2");
  EXPECT_STREQ(doc[0]["state"].GetString(), "READY");
  EXPECT_FALSE(doc[0].HasMember("reason"));
  EXPECT_FALSE(doc[1].HasMember("version"));
  EXPECT_STREQ(doc[1]["state"].GetString(), "UNAVAILABLE");
  EXPECT_STREQ(doc[1]["reason"].GetString(), "bad config");

  EXPECT_EQ(Post("/v2/repository/index", R"({"ready": true})").status, 200);
  EXPECT_EQ(Post("/v2/repository/index", "{}").status, 200);
  auto calls = service_.calls().index_ready_only;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_FALSE(calls[0]);
  EXPECT_TRUE(calls[1]);
  EXPECT_FALSE(calls[2]);

  ExpectJsonError(Post("/v2/repository/index", "{\"ready\": tru"), 400, "malformed JSON");
  ExpectJsonError(Post("/v2/repository/index", R"({"ready": 3})"), 400, "boolean");
  ExpectJsonError(Post("/v2/repository/index", "[1]"), 400, "JSON object");
  ExpectJsonError(Post("/v2/repository/index", std::string(100, '[') + std::string(100, ']')), 400, "nested");
  EXPECT_EQ(Get("/v2/repository/index").status, 405);
  EXPECT_EQ(service_.calls().index_ready_only.size(), 3u);
}

TEST_F(RestTest, LoadAndUnload) {
  auto r = Post("/v2/repository/models/simple/load");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(Post("/v2/repository/models/simple/unload", "{}").status, 200);
  auto calls = service_.calls();
  EXPECT_EQ(calls.loaded, std::vector<std::string>{"simple"});
  EXPECT_EQ(calls.unloaded, std::vector<std::string>{"simple"});

  service_.load_status = Status::FailedPrecondition("model control mode is NONE");
  ExpectJsonError(Post("/v2/repository/models/simple/load"), 400, "model control mode");
  service_.load_status = Status::NotFound("no model 'x' in the repository");
  ExpectJsonError(Post("/v2/repository/models/x/load"), 404);
  ExpectJsonError(Post("/v2/repository/models/simple/load", "{oops"), 400);
  ExpectJsonError(Post("/v2/repository/models/simple/load", R"({"parameters":{"config":"{}"}})"), 501, "config");
  ExpectJsonError(Post("/v2/repository/models/simple/load", R"({"parameters":{"file:1/model.onnx":"AA=="}})"), 501);
  ExpectJsonError(Post("/v2/repository/models/simple/load", R"({"parameters":3})"), 400);
  // What tritonclient's unload_model sends.
  service_.load_status = Status::Ok();
  EXPECT_EQ(Post("/v2/repository/models/simple/unload", R"({"parameters":{"unload_dependents":false}})").status, 200);
  EXPECT_EQ(Get("/v2/repository/models/simple/load").status, 405);
  EXPECT_EQ(Post("/v2/repository/models/simple/reload").status, 404);
}

TEST_F(RestTest, Statistics) {
  serve::ModelStatistics s;
  s.name = "simple";
  s.version = "2";
  s.last_inference_ms = 1700000000000;
  s.inference_count = 10;
  s.execution_count = 4;
  s.success = {10, 5000};
  s.fail = {1, 100};
  s.queue = {10, 700};
  s.compute_input = {4, 40};
  s.compute_infer = {4, 400};
  s.compute_output = {4, 4};
  s.cache_hit = {6, 60};
  s.cache_miss = {4, 80};
  s.batch_stats.push_back({1, {1, 10}, {1, 100}, {1, 1}});
  s.batch_stats.push_back({3, {3, 30}, {3, 300}, {3, 3}});
  s.memory_bytes = 999;
  service_.stats = {s};

  auto r = Get("/v2/models/stats");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = ParseJson(r.body);
  ASSERT_TRUE(doc["model_stats"].IsArray());
  ASSERT_EQ(doc["model_stats"].Size(), 1u);
  const auto& m = doc["model_stats"][0];
  EXPECT_STREQ(m["name"].GetString(), "simple");
  EXPECT_STREQ(m["version"].GetString(), "2");
  EXPECT_EQ(m["last_inference"].GetUint64(), 1700000000000u);
  EXPECT_EQ(m["inference_count"].GetUint64(), 10u);
  EXPECT_EQ(m["execution_count"].GetUint64(), 4u);
  const auto& is = m["inference_stats"];
  for (const char* k :
       {"success", "fail", "queue", "compute_input", "compute_infer", "compute_output", "cache_hit", "cache_miss"}) {
    ASSERT_TRUE(is.HasMember(k)) << k;
    EXPECT_TRUE(is[k]["count"].IsUint64() && is[k]["ns"].IsUint64()) << k;
  }
  EXPECT_EQ(is["success"]["count"].GetUint64(), 10u);
  EXPECT_EQ(is["success"]["ns"].GetUint64(), 5000u);
  EXPECT_EQ(is["fail"]["count"].GetUint64(), 1u);
  EXPECT_EQ(is["queue"]["ns"].GetUint64(), 700u);
  EXPECT_EQ(is["compute_infer"]["ns"].GetUint64(), 400u);
  EXPECT_EQ(is["cache_hit"]["count"].GetUint64(), 6u);
  EXPECT_EQ(is["cache_hit"]["ns"].GetUint64(), 60u);
  EXPECT_EQ(is["cache_miss"]["count"].GetUint64(), 4u);
  EXPECT_EQ(is["cache_miss"]["ns"].GetUint64(), 80u);
  ASSERT_EQ(m["batch_stats"].Size(), 2u);
  EXPECT_EQ(m["batch_stats"][1]["batch_size"].GetUint64(), 3u);
  EXPECT_EQ(m["batch_stats"][1]["compute_infer"]["count"].GetUint64(), 3u);
  EXPECT_EQ(m["batch_stats"][1]["compute_infer"]["ns"].GetUint64(), 300u);
  EXPECT_EQ(m["memory_bytes"].GetInt64(), 999);

  EXPECT_EQ(Get("/v2/models/simple/versions/2/stats").status, 200);
  EXPECT_EQ(Get("/v2/models/simple/stats").status, 200);
  auto calls = service_.calls().statistics;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], std::make_pair(std::string(""), std::string("")));
  EXPECT_EQ(calls[1], std::make_pair(std::string("simple"), std::string("2")));
  EXPECT_EQ(calls[2], std::make_pair(std::string("simple"), std::string("")));
  ExpectJsonError(Get("/v2/models/nope/stats"), 404);
  service_.stats.clear();
  doc = ParseJson(Get("/v2/models/stats").body);
  EXPECT_EQ(doc["model_stats"].Size(), 0u);
}

TEST_F(RestTest, Metrics) {
  auto r = Get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.HeaderOr("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u) << r.HeaderOr("Content-Type");
  EXPECT_EQ(r.body, service_.metrics);
  EXPECT_EQ(Post("/metrics").status, 405);
}

TEST_F(RestTest, UnknownPathsAre404AndWrongMethods405) {
  for (const char* path : {"/", "/v3", "/v2/", "/v2/models", "/v2/models/simple/versions", "/v2/models/simple/bogus",
                           "/v2/models/simple/versions/1/infer/extra", "/v2/repository", "/v2/repository/models/simple",
                           "/metrics/x", "/v2/models//ready"}) {
    ExpectJsonError(Get(path), 404, "unknown path");
  }
  auto r = Call("DELETE", "/v2/models/simple");
  ExpectJsonError(r, 405, "DELETE");
  EXPECT_EQ(r.HeaderOr("Allow"), "GET");
  ExpectJsonError(Call("PUT", "/v2/models/simple/infer", kJsonInfer), 405);
}

TEST_F(RestTest, KeepAliveAndPipelinedRestRequestsAnsweredInOrder) {
  std::string batch = MakeHttpRequest("GET", "/v2/health/live") + MakeHttpRequest("GET", "/v2/models/nope") +
                      MakeHttpRequest("POST", "/v2/models/simple/infer", kJsonInfer) + MakeHttpRequest("GET", "/v2");
  ASSERT_TRUE(conn().Send(batch));
  EXPECT_EQ(conn().Read().status, 200);
  EXPECT_EQ(conn().Read().status, 404);
  auto infer = conn().Read();
  EXPECT_EQ(infer.status, 200);
  EXPECT_NE(infer.body.find("INPUT0_out"), std::string::npos);
  auto md = conn().Read();
  EXPECT_EQ(md.status, 200);
  EXPECT_NE(md.body.find("extensions"), std::string::npos);
}

}  // namespace
}  // namespace inferloop::frontends
