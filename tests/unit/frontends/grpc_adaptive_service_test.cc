// inferloop.adaptive.AdaptiveService (grpc_adaptive_service.h) through a real gRPC client over
// loopback, on the same port as GRPCInferenceService, against FakeGrpcInferenceService ("echo"
// has a FakeAdaptiveControl, "held" has no variants).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "adaptive_service.grpc.pb.h"
#include "grpc_test_client.h"

namespace inferloop::frontends {
namespace {

namespace pb = inferloop::adaptive;
using testing::GrpcServerFixture;

class GrpcAdaptiveTest : public GrpcServerFixture {
 protected:
  void SetUp() override {
    GrpcServerFixture::SetUp();
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials());
    adaptive_ = pb::AdaptiveService::NewStub(channel);
  }
  std::vector<std::string> Pins() { return fake_.adaptive.controls.at("echo")->pins(); }

  grpc::Status State(const std::string& model, const std::string& version, pb::ModelAdaptiveStateResponse* out) {
    pb::ModelAdaptiveStateRequest req;
    req.set_name(model);
    req.set_version(version);
    auto ctx = Ctx();
    return adaptive_->ModelAdaptiveState(ctx.get(), req, out);
  }
  grpc::Status Pin(const std::string& model, const std::string& variant, pb::ModelPinResponse* out) {
    pb::ModelPinRequest req;
    req.set_name(model);
    req.set_variant(variant);
    auto ctx = Ctx();
    return adaptive_->ModelPin(ctx.get(), req, out);
  }
  grpc::Status Free(const std::string& model, pb::ModelFreeResponse* out) {
    pb::ModelFreeRequest req;
    req.set_name(model);
    auto ctx = Ctx();
    return adaptive_->ModelFree(ctx.get(), req, out);
  }

  std::unique_ptr<pb::AdaptiveService::Stub> adaptive_;
};

TEST_F(GrpcAdaptiveTest, StateMirrorsTheJson) {
  pb::ModelAdaptiveStateResponse response;
  grpc::Status st = State("echo", "1", &response);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const pb::AdaptiveState& s = response.state();
  EXPECT_EQ(s.model(), "echo");
  EXPECT_EQ(s.version(), "1");
  ASSERT_TRUE(s.objectives().has_latency_slo());
  EXPECT_EQ(s.objectives().latency_slo().percentile(), 99);
  EXPECT_EQ(s.objectives().latency_slo().milliseconds(), 50);
  EXPECT_EQ(s.objectives().max_accuracy_drop(), 1);
  EXPECT_EQ(s.objectives().cpu_share(), 2);
  EXPECT_TRUE(s.controller());
  EXPECT_EQ(s.variant(), "fp32");
  EXPECT_EQ(s.pinned(), "");
  EXPECT_EQ(s.reason(), "p99 41.2 ms within the SLO of 50 ms");
  EXPECT_EQ(s.knobs().preferred_batch_size(), 8);
  EXPECT_EQ(s.knobs().max_queue_delay_us(), 500);
  EXPECT_EQ(s.knobs().instances(), 2);
  EXPECT_EQ(s.observed().arrival_rate(), 120.5);
  ASSERT_TRUE(s.observed().has_latency_ms());
  EXPECT_EQ(s.observed().latency_ms(), 41.25);
  ASSERT_EQ(s.variants_size(), 3);
  EXPECT_EQ(s.variants(0).name(), "fp32");
  EXPECT_TRUE(s.variants(0).has_accuracy_drop());
  EXPECT_EQ(s.variants(0).memory_bytes(), 104857600);
  EXPECT_FALSE(s.variants(1).usable());
  EXPECT_EQ(s.variants(1).skipped_reason(), "this CPU has no BF16 instructions");
  EXPECT_FALSE(s.variants(1).has_accuracy_drop());
  EXPECT_EQ(s.variants(2).accuracy_drop(), 0.375);
  EXPECT_EQ(s.variants(2).source(), "calibration/");
  ASSERT_EQ(s.variants(2).latency_ms_size(), 2);
  EXPECT_EQ(s.variants(2).latency_ms(0).batch_size(), 1);
  EXPECT_EQ(s.variants(2).latency_ms(0).ms(), 1.5);
  // Version "" is the server's choice.
  EXPECT_TRUE(State("echo", "", &response).ok());
}

TEST_F(GrpcAdaptiveTest, PinAndFree) {
  pb::ModelPinResponse pinned;
  grpc::Status st = Pin("echo", "int8", &pinned);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(pinned.state().pinned(), "int8");
  EXPECT_EQ(pinned.state().variant(), "int8");
  pb::ModelFreeResponse freed;
  st = Free("echo", &freed);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(freed.state().pinned(), "");
  EXPECT_EQ(freed.state().reason(), "freed");
  EXPECT_EQ(Pins(), (std::vector<std::string>{"int8", ""}));
}

TEST_F(GrpcAdaptiveTest, ErrorsMapToGrpcCodes) {
  pb::ModelAdaptiveStateResponse state;
  pb::ModelPinResponse pinned;
  pb::ModelFreeResponse freed;
  grpc::Status st = State("nosuch", "", &state);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(st.error_message().find("unknown model 'nosuch'"), std::string::npos) << st.error_message();
  EXPECT_EQ(State("echo", "7", &state).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(State("", "", &state).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Pin("nosuch", "int8", &pinned).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Free("nosuch", &freed).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Free("", &freed).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  st = State("held", "", &state);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("has no adaptive variants"), std::string::npos) << st.error_message();
  EXPECT_EQ(Pin("held", "int8", &pinned).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Free("held", &freed).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  st = Pin("echo", "fp8", &pinned);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("'fp8' is not a variant"), std::string::npos) << st.error_message();
  st = Pin("echo", "bf16", &pinned);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("no BF16"), std::string::npos) << st.error_message();
  st = Pin("echo", "", &pinned);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("variant is required"), std::string::npos) << st.error_message();
  EXPECT_TRUE(Pins().empty());

  fake_.errors["echo"] = Status::Unavailable("draining");
  grpc::ClientContext ctx;
  pb::ModelAdaptiveStateRequest req;
  req.set_name("echo");
  st = adaptive_->ModelAdaptiveState(&ctx, req, &state);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(RetryAfter(ctx), "1");
}

TEST_F(GrpcAdaptiveTest, KServeServiceStillServedOnTheSamePort) {
  inference::ServerLiveResponse live;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ServerLive(ctx.get(), {}, &live).ok());
  EXPECT_TRUE(live.live());
}

}  // namespace
}  // namespace inferloop::frontends
