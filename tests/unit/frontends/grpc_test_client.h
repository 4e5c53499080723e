// A GrpcServer over FakeGrpcInferenceService on a loopback ephemeral port, and a real gRPC client
// stub to it, for the gRPC frontend tests.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "fake_inference_service_grpc.h"
#include "frontends/grpc_server.h"
#include "grpc_service.grpc.pb.h"

namespace inferloop::frontends::testing {

class GrpcServerFixture : public ::testing::Test {
 public:
  void SetUp() override { StartServer(GrpcServerOptions{}); }

  void StartServer(GrpcServerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<GrpcServer>(fake_, options);
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_GT(server_->port(), 0);
    stub_ = NewStub();
  }

  std::unique_ptr<inference::GRPCInferenceService::Stub> NewStub() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                             grpc::InsecureChannelCredentials(), args);
    return inference::GRPCInferenceService::NewStub(channel);
  }

  // A client context with a generous deadline, so that a broken server fails a test, not hangs it.
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return ctx;
  }

  // An FP32 [2,4] request for `model`, raw contents.
  static inference::ModelInferRequest EchoRequest(const std::string& model, const std::string& id = "req-1") {
    InferRequest request;
    request.model_name = model;
    request.id = id;
    Tensor t = Tensor::Create(DataType::kFloat, Shape{2, 4}).value();
    for (int i = 0; i < 8; ++i) t.data<float>()[i] = 0.5f * static_cast<float>(i);
    request.inputs.push_back({"INPUT0", std::move(t), {}});
    inference::ModelInferRequest message;
    EXPECT_TRUE(EncodeGrpcInferRequest(request, /*raw=*/true, &message).ok());
    return message;
  }

  // The trailing "retry-after" value, or "" when absent.
  static std::string RetryAfter(const grpc::ClientContext& ctx) {
    const auto& trailers = ctx.GetServerTrailingMetadata();
    auto it = trailers.find("retry-after");
    return it == trailers.end() ? "" : std::string(it->second.data(), it->second.size());
  }

  // Declared before server_: the service outlives the server.
  FakeGrpcInferenceService fake_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

}  // namespace inferloop::frontends::testing
