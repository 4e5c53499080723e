// GrpcServer's ModelStreamInfer through a real gRPC client over loopback.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "grpc_test_client.h"

namespace inferloop::frontends {
namespace {

using testing::GrpcServerFixture;
using testing::WaitUntil;

using GrpcStreamTest = GrpcServerFixture;

TEST_F(GrpcStreamTest, AnswersEveryRequestErrorsInline) {
  auto ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  ASSERT_TRUE(stream->Write(EchoRequest("held", "first")));
  ASSERT_TRUE(stream->Write(EchoRequest("echo", "second")));
  inference::ModelInferRequest bad = EchoRequest("echo", "bad");
  bad.mutable_inputs(0)->set_datatype("FP33");
  ASSERT_TRUE(stream->Write(bad));
  ASSERT_TRUE(stream->Write(EchoRequest("nosuch", "unknown")));
  ASSERT_TRUE(stream->WritesDone());

  // Three answers come while "first" is still held: the stream is not in request order.
  std::vector<inference::ModelStreamInferResponse> got;
  for (int i = 0; i < 3; ++i) {
    inference::ModelStreamInferResponse r;
    ASSERT_TRUE(stream->Read(&r));
    got.push_back(r);
  }
  ASSERT_TRUE(WaitUntil([&] { return fake_.pending_count() == 1; }));
  auto pending = fake_.TakePending();
  EXPECT_EQ(pending.request.id, "first");
  std::thread([p = std::move(pending)]() mutable { p.done(testing::FakeGrpcInferenceService::Echo(p.request)); }).join();
  inference::ModelStreamInferResponse last;
  ASSERT_TRUE(stream->Read(&last));
  got.push_back(last);
  inference::ModelStreamInferResponse extra;
  EXPECT_FALSE(stream->Read(&extra));
  grpc::Status st = stream->Finish();
  EXPECT_TRUE(st.ok()) << st.error_message();

  int errors = 0;
  std::map<std::string, int> ok_ids;
  for (const auto& r : got) {
    if (!r.error_message().empty()) {
      ++errors;
      // The failed request is named, without outputs.
      EXPECT_TRUE(r.infer_response().id() == "bad" || r.infer_response().id() == "unknown") << r.infer_response().id();
      EXPECT_EQ(r.infer_response().model_name(), r.infer_response().id() == "bad" ? "echo" : "nosuch");
      EXPECT_EQ(r.infer_response().outputs_size(), 0);
      EXPECT_TRUE(r.error_message().find("FP33") != std::string::npos ||
                  r.error_message().find("unknown model 'nosuch'") != std::string::npos)
          << r.error_message();
    } else {
      ok_ids[r.infer_response().id()]++;
      EXPECT_EQ(r.infer_response().raw_output_contents_size(), 1);
    }
  }
  EXPECT_EQ(errors, 2);
  EXPECT_EQ(ok_ids, (std::map<std::string, int>{{"first", 1}, {"second", 1}}));
  EXPECT_EQ(got.back().infer_response().id(), "first");

  auto contexts = fake_.contexts();
  ASSERT_EQ(contexts.size(), 3u);  // the undecodable one never reached the service
  for (const auto& c : contexts) EXPECT_EQ(c.protocol, "grpc");
  EXPECT_EQ(contexts[1].request_bytes, EchoRequest("echo", "second").ByteSizeLong());
}

TEST_F(GrpcStreamTest, ManyRequestsAllAnswered) {
  auto ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  constexpr int kN = 50;
  std::thread writer([&] {
    for (int i = 0; i < kN; ++i) EXPECT_TRUE(stream->Write(EchoRequest("echo", std::to_string(i))));
    EXPECT_TRUE(stream->WritesDone());
  });
  std::map<std::string, int> ids;
  inference::ModelStreamInferResponse r;
  while (stream->Read(&r)) {
    EXPECT_EQ(r.error_message(), "");
    ids[r.infer_response().id()]++;
  }
  writer.join();
  EXPECT_TRUE(stream->Finish().ok());
  ASSERT_EQ(ids.size(), static_cast<size_t>(kN));
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << id;
}

TEST_F(GrpcStreamTest, EmptyStreamEndsOk) {
  auto ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  ASSERT_TRUE(stream->WritesDone());
  inference::ModelStreamInferResponse r;
  EXPECT_FALSE(stream->Read(&r));
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(GrpcStreamTest, CancelSetsTheFlagOfHeldRequests) {
  auto ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  ASSERT_TRUE(stream->Write(EchoRequest("held", "a")));
  ASSERT_TRUE(WaitUntil([&] { return fake_.pending_count() == 1; }));
  auto pending = fake_.TakePending();
  EXPECT_FALSE(pending.context.cancelled->load());
  ctx->TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitUntil([&] { return pending.context.cancelled->load(); }));
  // A late answer is dropped without harm.
  pending.done(testing::FakeGrpcInferenceService::Echo(pending.request));
  auto ctx2 = Ctx();
  inference::ServerLiveResponse live;
  EXPECT_TRUE(stub_->ServerLive(ctx2.get(), {}, &live).ok());
}

}  // namespace
}  // namespace inferloop::frontends
