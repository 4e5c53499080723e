// GrpcServer's unary calls through a real gRPC client over loopback.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <thread>

#include "frontends/grpc_status.h"
#include "grpc_test_client.h"

namespace inferloop::frontends {
namespace {

using testing::GrpcServerFixture;
using testing::WaitUntil;

using GrpcServerTest = GrpcServerFixture;

TEST_F(GrpcServerTest, ServerLiveReadyMetadata) {
  auto ctx = Ctx();
  inference::ServerLiveResponse live;
  ASSERT_TRUE(stub_->ServerLive(ctx.get(), {}, &live).ok());
  EXPECT_TRUE(live.live());
  fake_.ready = false;
  ctx = Ctx();
  inference::ServerReadyResponse ready;
  ASSERT_TRUE(stub_->ServerReady(ctx.get(), {}, &ready).ok());
  EXPECT_FALSE(ready.ready());
  ctx = Ctx();
  inference::ServerMetadataResponse meta;
  ASSERT_TRUE(stub_->ServerMetadata(ctx.get(), {}, &meta).ok());
  EXPECT_EQ(meta.name(), "inferloop");
  EXPECT_EQ(meta.version(), "0.1.0");
  ASSERT_EQ(meta.extensions_size(), 2);
  EXPECT_EQ(meta.extensions(1), "statistics");
}

TEST_F(GrpcServerTest, ModelReadyAndMetadata) {
  inference::ModelReadyRequest req;
  req.set_name("echo");
  inference::ModelReadyResponse ready;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ModelReady(ctx.get(), req, &ready).ok());
  EXPECT_TRUE(ready.ready());
  req.set_name("held");
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelReady(ctx.get(), req, &ready).ok());
  EXPECT_FALSE(ready.ready());
  req.set_name("nosuch");
  ctx = Ctx();
  grpc::Status st = stub_->ModelReady(ctx.get(), req, &ready);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(st.error_message().find("unknown model 'nosuch'"), std::string::npos) << st.error_message();
  req.set_name("");
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelReady(ctx.get(), req, &ready).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  inference::ModelMetadataRequest mreq;
  mreq.set_name("echo");
  mreq.set_version("1");
  inference::ModelMetadataResponse meta;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelMetadata(ctx.get(), mreq, &meta).ok());
  EXPECT_EQ(meta.name(), "echo");
  ASSERT_EQ(meta.versions_size(), 1);
  EXPECT_EQ(meta.versions(0), "1");
  EXPECT_EQ(meta.platform(), "onnxruntime_onnx");
  ASSERT_EQ(meta.inputs_size(), 1);
  EXPECT_EQ(meta.inputs(0).name(), "INPUT0");
  EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
  ASSERT_EQ(meta.inputs(0).shape_size(), 2);
  EXPECT_EQ(meta.inputs(0).shape(0), -1);
  EXPECT_EQ(meta.inputs(0).shape(1), 4);
  ASSERT_EQ(meta.outputs_size(), 1);
  EXPECT_EQ(meta.outputs(0).name(), "OUTPUT0");
  mreq.set_version("7");
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelMetadata(ctx.get(), mreq, &meta).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcServerTest, ModelConfigParsesTheJsonIgnoringUnknownFields) {
  inference::ModelConfigRequest req;
  req.set_name("echo");
  inference::ModelConfigResponse resp;
  auto ctx = Ctx();
  grpc::Status st = stub_->ModelConfig(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const auto& c = resp.config();
  EXPECT_EQ(c.name(), "echo");
  EXPECT_EQ(c.platform(), "onnxruntime_onnx");
  EXPECT_EQ(c.max_batch_size(), 8);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).name(), "INPUT0");
  EXPECT_EQ(c.input(0).data_type(), inferloop::serve::configpb::TYPE_FP32);
  ASSERT_EQ(c.input(0).dims_size(), 1);
  EXPECT_EQ(c.input(0).dims(0), 4);
  ASSERT_EQ(c.output_size(), 1);
  EXPECT_EQ(c.output(0).dims(0), 4);
  ASSERT_TRUE(c.has_dynamic_batching());
  ASSERT_EQ(c.dynamic_batching().preferred_batch_size_size(), 2);
  EXPECT_EQ(c.dynamic_batching().preferred_batch_size(1), 8);
  EXPECT_EQ(c.dynamic_batching().max_queue_delay_microseconds(), 100u);

  req.set_name("nosuch");
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelConfig(ctx.get(), req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcServerTest, ModelConfigThatIsNotJsonIsInternal) {
  fake_.config_json = "{not json";
  inference::ModelConfigRequest req;
  req.set_name("echo");
  inference::ModelConfigResponse resp;
  auto ctx = Ctx();
  grpc::Status st = stub_->ModelConfig(ctx.get(), req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(st.error_message().find("not valid ModelConfig JSON"), std::string::npos) << st.error_message();
}

TEST_F(GrpcServerTest, ModelInferRoundTripFillsTheRequestContext) {
  inference::ModelInferRequest req = EchoRequest("echo", "abc");
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  grpc::Status st = stub_->ModelInfer(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.model_name(), "echo");
  EXPECT_EQ(resp.model_version(), "1");
  EXPECT_EQ(resp.id(), "abc");
  ASSERT_EQ(resp.outputs_size(), 1);
  EXPECT_EQ(resp.outputs(0).name(), "OUTPUT0");
  EXPECT_EQ(resp.outputs(0).datatype(), "FP32");
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  EXPECT_EQ(resp.raw_output_contents(0), req.raw_input_contents(0));

  auto contexts = fake_.contexts();
  ASSERT_EQ(contexts.size(), 1u);
  EXPECT_EQ(contexts[0].protocol, "grpc");
  EXPECT_EQ(contexts[0].request_bytes, req.ByteSizeLong());
  EXPECT_FALSE(contexts[0].cancelled->load());
}

TEST_F(GrpcServerTest, UndecodableRequestIsInvalidArgumentBeforeTheService) {
  inference::ModelInferRequest req = EchoRequest("echo");
  req.mutable_inputs(0)->set_datatype("FP33");
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  grpc::Status st = stub_->ModelInfer(ctx.get(), req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("FP33"), std::string::npos) << st.error_message();
  EXPECT_TRUE(fake_.contexts().empty());
}

// Every Status code reaches the client as the gRPC code of inference_service.h's table, with
// "retry-after" exactly for the retry-later codes.
TEST_F(GrpcServerTest, ErrorsMapToCodesWithRetryAfter) {
  struct Case {
    Status status;
    grpc::StatusCode code;
    bool retry;
  };
  const std::vector<Case> cases = {
      {Status::InvalidArgument("bad shape"), grpc::StatusCode::INVALID_ARGUMENT, false},
      {Status::NotFound("gone"), grpc::StatusCode::NOT_FOUND, false},
      {Status::ResourceExhausted("too many in flight"), grpc::StatusCode::RESOURCE_EXHAUSTED, true},
      {Status::Unavailable("queue full"), grpc::StatusCode::UNAVAILABLE, true},
      {Status(StatusCode::kDeadlineExceeded, "timed out in queue"), grpc::StatusCode::DEADLINE_EXCEEDED, false},
      {Status(StatusCode::kCancelled, "client gone"), grpc::StatusCode::CANCELLED, false},
      {Status::Unimplemented("no such op"), grpc::StatusCode::UNIMPLEMENTED, false},
      {Status::FailedPrecondition("control mode"), grpc::StatusCode::FAILED_PRECONDITION, false},
      {Status::Internal("bug"), grpc::StatusCode::INTERNAL, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    fake_.errors["m" + std::to_string(i)] = cases[i].status;
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].status.ToString());
    const std::string model = "m" + std::to_string(i);
    EXPECT_EQ(ToGrpcCode(cases[i].status.code()), cases[i].code);
    // Through Infer (answered by the callback) ...
    inference::ModelInferResponse resp;
    auto ctx = Ctx();
    grpc::Status st = stub_->ModelInfer(ctx.get(), EchoRequest(model), &resp);
    EXPECT_EQ(st.error_code(), cases[i].code);
    EXPECT_EQ(st.error_message(), cases[i].status.message());
    EXPECT_EQ(RetryAfter(*ctx), cases[i].retry ? "1" : "");
    // ... and through a call answered at once.
    inference::ModelMetadataRequest mreq;
    mreq.set_name(model);
    inference::ModelMetadataResponse meta;
    ctx = Ctx();
    st = stub_->ModelMetadata(ctx.get(), mreq, &meta);
    EXPECT_EQ(st.error_code(), cases[i].code);
    EXPECT_EQ(RetryAfter(*ctx), cases[i].retry ? "1" : "");
  }
  EXPECT_EQ(ToGrpcCode(StatusCode::kOk), grpc::StatusCode::OK);
}

TEST_F(GrpcServerTest, InferAnsweredLaterFromAnotherThread) {
  auto ctx = Ctx();
  inference::ModelInferResponse resp;
  auto call = std::async(std::launch::async, [&] { return stub_->ModelInfer(ctx.get(), EchoRequest("held", "late"), &resp); });
  ASSERT_TRUE(WaitUntil([&] { return fake_.pending_count() == 1; }));
  auto pending = fake_.TakePending();
  EXPECT_EQ(pending.request.id, "late");
  std::thread answerer([p = std::move(pending)]() mutable { p.done(testing::FakeGrpcInferenceService::Echo(p.request)); });
  answerer.join();
  grpc::Status st = call.get();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.id(), "late");
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  EXPECT_EQ(resp.raw_output_contents(0).size(), 8 * sizeof(float));
}

TEST_F(GrpcServerTest, CancellationSetsTheFlagAndTheLateAnswerIsDropped) {
  auto ctx = Ctx();
  inference::ModelInferResponse resp;
  auto call = std::async(std::launch::async, [&] { return stub_->ModelInfer(ctx.get(), EchoRequest("held"), &resp); });
  ASSERT_TRUE(WaitUntil([&] { return fake_.pending_count() == 1; }));
  auto pending = fake_.TakePending();
  EXPECT_FALSE(pending.context.cancelled->load());
  ctx->TryCancel();
  EXPECT_EQ(call.get().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitUntil([&] { return pending.context.cancelled->load(); }));
  // The service answers after all (as a request already computing would): ignored, no crash.
  pending.done(testing::FakeGrpcInferenceService::Echo(pending.request));
  // The server still serves.
  auto ctx2 = Ctx();
  inference::ServerLiveResponse live;
  EXPECT_TRUE(stub_->ServerLive(ctx2.get(), {}, &live).ok());
}

TEST_F(GrpcServerTest, OversizedMessageIsResourceExhaustedByGrpc) {
  server_.reset();
  GrpcServerOptions options;
  options.max_receive_message_bytes = 1 << 20;
  StartServer(options);
  InferRequest big;
  big.model_name = "echo";
  Tensor t = Tensor::Create(DataType::kFloat, Shape{1, 2 << 18}).value();  // 2 MiB
  std::memset(t.raw_data(), 0, t.nbytes());
  big.inputs.push_back({"INPUT0", std::move(t), {}});
  inference::ModelInferRequest message;
  ASSERT_TRUE(EncodeGrpcInferRequest(big, true, &message).ok());
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  EXPECT_EQ(stub_->ModelInfer(ctx.get(), message, &resp).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(fake_.contexts().empty());
  // Under the limit it goes through.
  ctx = Ctx();
  EXPECT_TRUE(stub_->ModelInfer(ctx.get(), EchoRequest("echo"), &resp).ok());
}

TEST_F(GrpcServerTest, Statistics) {
  inference::ModelStatisticsRequest req;
  inference::ModelStatisticsResponse resp;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ModelStatistics(ctx.get(), req, &resp).ok());
  ASSERT_EQ(resp.model_stats_size(), 1);
  const auto& s = resp.model_stats(0);
  EXPECT_EQ(s.name(), "echo");
  EXPECT_EQ(s.version(), "1");
  EXPECT_EQ(s.last_inference(), 1700000000123u);
  EXPECT_EQ(s.inference_count(), 12u);
  EXPECT_EQ(s.execution_count(), 5u);
  EXPECT_EQ(s.inference_stats().success().count(), 5u);
  EXPECT_EQ(s.inference_stats().success().ns(), 5000u);
  EXPECT_EQ(s.inference_stats().queue().ns(), 700u);
  EXPECT_EQ(s.inference_stats().compute_infer().ns(), 3000u);
  EXPECT_EQ(s.inference_stats().fail().count(), 0u);
  EXPECT_EQ(s.inference_stats().cache_hit().count(), 2u);
  EXPECT_EQ(s.inference_stats().cache_hit().ns(), 40u);
  EXPECT_EQ(s.inference_stats().cache_miss().count(), 3u);
  EXPECT_EQ(s.inference_stats().cache_miss().ns(), 90u);
  ASSERT_EQ(s.batch_stats_size(), 2);
  EXPECT_EQ(s.batch_stats(1).batch_size(), 4u);
  EXPECT_EQ(s.batch_stats(1).compute_infer().count(), 3u);
  EXPECT_EQ(s.batch_stats(1).compute_infer().ns(), 2100u);
  ASSERT_EQ(s.memory_usage_size(), 1);
  EXPECT_EQ(s.memory_usage(0).type(), "CPU");
  EXPECT_EQ(s.memory_usage(0).byte_size(), 4096u);

  req.set_name("nosuch");
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelStatistics(ctx.get(), req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcServerTest, RepositoryIndexLoadUnload) {
  inference::RepositoryIndexRequest req;
  inference::RepositoryIndexResponse resp;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->RepositoryIndex(ctx.get(), req, &resp).ok());
  ASSERT_EQ(resp.models_size(), 2);
  EXPECT_EQ(resp.models(1).name(), "broken");
  EXPECT_EQ(resp.models(1).state(), "UNAVAILABLE");
  EXPECT_EQ(resp.models(1).reason(), "no model.onnx");
  req.set_ready(true);
  ctx = Ctx();
  ASSERT_TRUE(stub_->RepositoryIndex(ctx.get(), req, &resp).ok());
  ASSERT_EQ(resp.models_size(), 1);
  EXPECT_EQ(resp.models(0).name(), "echo");
  EXPECT_EQ(resp.models(0).version(), "1");
  EXPECT_EQ(resp.models(0).state(), "READY");

  fake_.errors["locked"] = Status::FailedPrecondition("model control mode is NONE");
  inference::RepositoryModelLoadRequest load;
  inference::RepositoryModelLoadResponse load_resp;
  load.set_model_name("echo");
  ctx = Ctx();
  EXPECT_TRUE(stub_->RepositoryModelLoad(ctx.get(), load, &load_resp).ok());
  load.set_model_name("locked");
  ctx = Ctx();
  grpc::Status st = stub_->RepositoryModelLoad(ctx.get(), load, &load_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(st.error_message(), "model control mode is NONE");
  (*load.mutable_parameters())["config"].set_string_param("{}");
  ctx = Ctx();
  EXPECT_EQ(stub_->RepositoryModelLoad(ctx.get(), load, &load_resp).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(fake_.loads(), (std::vector<std::string>{"echo", "locked"}));

  inference::RepositoryModelUnloadRequest unload;
  inference::RepositoryModelUnloadResponse unload_resp;
  unload.set_model_name("echo");
  ctx = Ctx();
  EXPECT_TRUE(stub_->RepositoryModelUnload(ctx.get(), unload, &unload_resp).ok());
  unload.set_model_name("nosuch");
  ctx = Ctx();
  EXPECT_EQ(stub_->RepositoryModelUnload(ctx.get(), unload, &unload_resp).error_code(), grpc::StatusCode::NOT_FOUND);
  unload.set_model_name("");
  ctx = Ctx();
  EXPECT_EQ(stub_->RepositoryModelUnload(ctx.get(), unload, &unload_resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fake_.unloads(), (std::vector<std::string>{"echo", "nosuch"}));
}

}  // namespace
}  // namespace inferloop::frontends
