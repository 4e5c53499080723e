// The adaptive routes of RestHandler (GET .../adaptive, POST .../adaptive/pin|free) behind a real
// HttpServer on loopback, against FakeInferenceService and its FakeAdaptiveControl: the JSON
// shape (adaptive_state_json.h), pins reaching the control, and every error's status.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "fake_inference_service.h"
#include "frontends/adaptive_state_json.h"
#include "frontends/rest_handler.h"
#include "http_test_client.h"

namespace inferloop::frontends {
namespace {

using testing::ClientResponse;
using testing::FakeAdaptiveControl;
using testing::FakeInferenceService;
using testing::MakeHttpRequest;
using testing::TestConnection;
namespace rj = rapidjson;

rj::Document ParseJson(const std::string& text) {
  rj::Document doc;
  doc.Parse(text.data(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

// The response is `status` with {"error": "..."} containing `needle`.
void ExpectJsonError(const ClientResponse& r, int status, const std::string& needle) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  rj::Document doc = ParseJson(r.body);
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("error") && doc["error"].IsString()) << r.body;
  EXPECT_NE(std::string(doc["error"].GetString()).find(needle), std::string::npos) << r.body;
}

class RestAdaptiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    serve::ModelMetadata plain;
    plain.name = "plain";
    plain.versions = {"1"};
    service_.models["plain"] = plain;
    control_ = service_.adaptive.controls.at("simple");
    handler_ = std::make_unique<RestHandler>(service_);
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto server = HttpServer::Start(options, handler_->AsHttpHandler());
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }
  void TearDown() override { server_.reset(); }

  ClientResponse Call(const std::string& method, const std::string& target, const std::string& body = "") {
    if (!conn_) conn_ = std::make_unique<TestConnection>(server_->port());
    return conn_->Roundtrip(MakeHttpRequest(method, target, body));
  }
  ClientResponse Get(const std::string& target) { return Call("GET", target); }
  ClientResponse Post(const std::string& target, const std::string& body = "") { return Call("POST", target, body); }

  FakeInferenceService service_;
  std::shared_ptr<FakeAdaptiveControl> control_;
  std::unique_ptr<RestHandler> handler_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<TestConnection> conn_;
};

TEST_F(RestAdaptiveTest, StateJsonShape) {
  auto r = Get("/v2/models/simple/adaptive");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.HeaderOr("Content-Type"), "application/json");
  auto doc = ParseJson(r.body);
  EXPECT_STREQ(doc["model"].GetString(), "simple");
  EXPECT_STREQ(doc["version"].GetString(), "2");
  const auto& objectives = doc["objectives"];
  EXPECT_EQ(objectives["latency_slo"]["percentile"].GetDouble(), 99);
  EXPECT_EQ(objectives["latency_slo"]["milliseconds"].GetDouble(), 50);
  EXPECT_EQ(objectives["max_accuracy_drop"].GetDouble(), 1);
  EXPECT_EQ(objectives["cpu_share"].GetDouble(), 2);
  EXPECT_TRUE(doc["controller"].GetBool());
  EXPECT_STREQ(doc["variant"].GetString(), "fp32");
  EXPECT_STREQ(doc["pinned"].GetString(), "");
  EXPECT_STREQ(doc["reason"].GetString(), "p99 41.2 ms within the SLO of 50 ms");
  EXPECT_FALSE(doc["slo_unreachable"].GetBool());
  EXPECT_EQ(doc["knobs"]["preferred_batch_size"].GetInt(), 8);
  EXPECT_EQ(doc["knobs"]["max_queue_delay_us"].GetInt64(), 500);
  EXPECT_EQ(doc["knobs"]["instances"].GetInt(), 2);
  EXPECT_EQ(doc["observed"]["arrival_rate"].GetDouble(), 120.5);
  EXPECT_EQ(doc["observed"]["latency_ms"].GetDouble(), 41.25);

  const auto& variants = doc["variants"];
  ASSERT_EQ(variants.Size(), 3u);
  EXPECT_STREQ(variants[0]["name"].GetString(), "fp32");
  EXPECT_TRUE(variants[0]["usable"].GetBool());
  EXPECT_STREQ(variants[0]["skipped_reason"].GetString(), "");
  EXPECT_STREQ(variants[0]["source"].GetString(), "model.onnx");
  EXPECT_EQ(variants[0]["accuracy_drop"].GetDouble(), 0);
  EXPECT_EQ(variants[0]["memory_bytes"].GetInt64(), 104857600);
  // The skipped variant carries its reason and no measurements.
  EXPECT_STREQ(variants[1]["name"].GetString(), "bf16");
  EXPECT_FALSE(variants[1]["usable"].GetBool());
  EXPECT_STREQ(variants[1]["skipped_reason"].GetString(), "this CPU has no BF16 instructions");
  EXPECT_TRUE(variants[1]["accuracy_drop"].IsNull());
  EXPECT_EQ(variants[1]["latency_ms"].Size(), 0u);
  const auto& int8 = variants[2];
  EXPECT_EQ(int8["accuracy_drop"].GetDouble(), 0.375);
  EXPECT_STREQ(int8["metric"].GetString(), "top-1 accuracy");
  ASSERT_EQ(int8["latency_ms"].Size(), 2u);
  ASSERT_EQ(int8["latency_ms"][1].Size(), 2u);
  EXPECT_EQ(int8["latency_ms"][1][0].GetInt(), 8);
  EXPECT_EQ(int8["latency_ms"][1][1].GetDouble(), 7.75);

  EXPECT_EQ(Get("/v2/models/simple/versions/2/adaptive").status, 200);
  auto calls = service_.calls().adaptive_state;
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], std::make_pair(std::string("simple"), std::string("")));
  EXPECT_EQ(calls[1], std::make_pair(std::string("simple"), std::string("2")));
}

TEST_F(RestAdaptiveTest, PinAndFreeReachTheControlAndAnswerTheNewState) {
  auto r = Post("/v2/models/simple/adaptive/pin", R"({"variant": "int8"})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = ParseJson(r.body);
  EXPECT_STREQ(doc["pinned"].GetString(), "int8");
  EXPECT_STREQ(doc["variant"].GetString(), "int8");
  EXPECT_STREQ(doc["reason"].GetString(), "pinned to int8");
  EXPECT_STREQ(ParseJson(Get("/v2/models/simple/adaptive").body)["pinned"].GetString(), "int8");

  r = Post("/v2/models/simple/versions/2/adaptive/free");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_STREQ(ParseJson(r.body)["pinned"].GetString(), "");
  EXPECT_EQ(Post("/v2/models/simple/adaptive/free", "{}").status, 200);
  EXPECT_EQ(control_->pins(), (std::vector<std::string>{"int8", "", ""}));
  auto calls = service_.calls().adaptive_pin;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1], std::make_pair(std::string("simple"), std::string("2")));
}

TEST_F(RestAdaptiveTest, UnknownModelOrVersionIs404) {
  ExpectJsonError(Get("/v2/models/nope/adaptive"), 404, "unknown model 'nope'");
  ExpectJsonError(Get("/v2/models/simple/versions/9/adaptive"), 404, "no version 9");
  ExpectJsonError(Post("/v2/models/nope/adaptive/pin", R"({"variant": "int8"})"), 404, "unknown model");
  ExpectJsonError(Post("/v2/models/nope/adaptive/free"), 404, "unknown model");
  EXPECT_TRUE(control_->pins().empty());
}

TEST_F(RestAdaptiveTest, ModelWithoutVariantsIs400) {
  ExpectJsonError(Get("/v2/models/plain/adaptive"), 400, "has no adaptive variants");
  ExpectJsonError(Post("/v2/models/plain/adaptive/pin", R"({"variant": "int8"})"), 400, "has no adaptive variants");
  ExpectJsonError(Post("/v2/models/plain/adaptive/free"), 400, "has no adaptive variants");
}

TEST_F(RestAdaptiveTest, UnknownOrUnusableVariantIs400WithTheControlsReason) {
  ExpectJsonError(Post("/v2/models/simple/adaptive/pin", R"({"variant": "fp8"})"), 400,
                  "'fp8' is not a variant of model 'simple'");
  ExpectJsonError(Post("/v2/models/simple/adaptive/pin", R"({"variant": "bf16"})"), 400,
                  "this CPU has no BF16 instructions");
  EXPECT_TRUE(control_->pins().empty());
  EXPECT_STREQ(ParseJson(Get("/v2/models/simple/adaptive").body)["pinned"].GetString(), "");
}

TEST_F(RestAdaptiveTest, BadPinBodiesAre400) {
  const std::string pin = "/v2/models/simple/adaptive/pin";
  ExpectJsonError(Post(pin), 400, "must be a JSON object");
  ExpectJsonError(Post(pin, "int8"), 400, "malformed JSON");
  ExpectJsonError(Post(pin, R"({"variant": "int8")"), 400, "malformed JSON");
  ExpectJsonError(Post(pin, R"(["int8"])"), 400, "must be a JSON object");
  ExpectJsonError(Post(pin, "{}"), 400, "needs \"variant\"");
  ExpectJsonError(Post(pin, R"({"varient": "int8"})"), 400, "needs \"variant\"");
  ExpectJsonError(Post(pin, R"({"variant": 8})"), 400, "\"variant\" must be a string");
  ExpectJsonError(Post(pin, R"({"variant": null})"), 400, "\"variant\" must be a string");
  ExpectJsonError(Post(pin, R"({"variant": ""})"), 400, "must not be empty");
  ExpectJsonError(Post(pin, "{\"variant\": \"" + std::string(70000, 'x') + "\"}"), 400, "too large");
  ExpectJsonError(Post(pin, std::string(40, '[') + std::string(40, ']')), 400, "nested too deeply");
  ExpectJsonError(Post("/v2/models/simple/adaptive/free", "not json"), 400, "malformed JSON");
  EXPECT_TRUE(control_->pins().empty());
}

TEST_F(RestAdaptiveTest, WrongMethodsAre405AndOtherPathsAre404) {
  auto r = Post("/v2/models/simple/adaptive");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.HeaderOr("Allow"), "GET");
  r = Get("/v2/models/simple/adaptive/pin");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.HeaderOr("Allow"), "POST");
  for (const char* path : {"/v2/models/simple/adaptive/unpin", "/v2/models/simple/pin", "/v2/models/adaptive/pin",
                           "/v2/models/simple/adaptive/pin/x", "/v2/models/simple/versions/adaptive/pin"}) {
    ExpectJsonError(Post(path, R"({"variant": "int8"})"), 404, "unknown path");
  }
  // A model may be named "adaptive".
  ExpectJsonError(Get("/v2/models/adaptive/adaptive"), 404, "unknown model 'adaptive'");
  EXPECT_TRUE(control_->pins().empty());
}

TEST(AdaptiveStateJson, UnknownAndNonFiniteNumbersAreNullStringsStayStrings) {
  serve::AdaptiveState s;
  s.model = "m";
  s.version = 3;
  s.controller = false;  // no SLO
  s.arrival_rate = std::numeric_limits<double>::quiet_NaN();
  s.observed_latency_ms = -1;
  serve::VariantReport v;
  v.name = "int8";
  v.usable = false;  // no reason given
  v.accuracy_measured = true;
  v.accuracy_drop = std::numeric_limits<double>::infinity();
  v.latency_ms = {{4, std::nan("")}};
  s.variants = {v};
  auto doc = ParseJson(AdaptiveStateJson(s));
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["version"].GetString(), "3");
  EXPECT_TRUE(doc["objectives"]["latency_slo"].IsNull());
  EXPECT_STREQ(doc["pinned"].GetString(), "");
  EXPECT_TRUE(doc["observed"]["arrival_rate"].IsNull());
  EXPECT_TRUE(doc["observed"]["latency_ms"].IsNull());
  EXPECT_STREQ(doc["variants"][0]["skipped_reason"].GetString(), "");
  EXPECT_TRUE(doc["variants"][0]["accuracy_drop"].IsNull());
  EXPECT_TRUE(doc["variants"][0]["latency_ms"][0][1].IsNull());
  EXPECT_EQ(doc["variants"][0]["latency_ms"][0][0].GetInt(), 4);
}

TEST(AdaptiveStateJson, NamesAreEscaped) {
  serve::AdaptiveState s;
  s.model = "a\"b\\c\n";
  s.reason = "p99 \"high\"";
  auto doc = ParseJson(AdaptiveStateJson(s));
  EXPECT_STREQ(doc["model"].GetString(), "a\"b\\c\n");
  EXPECT_STREQ(doc["reason"].GetString(), "p99 \"high\"");
}

}  // namespace
}  // namespace inferloop::frontends
