// ModelVersion::Infer's contract for a computed request (ServedModelVersion): its admission
// tickets (the server's and the version's own) are released before `done` runs. A frontend may
// write the answer to its client inside `done` (an HTTP answer given on the connection's own io
// thread is sent at once), and a client that has its answer must not find its request still
// counted in flight (inferloop_inflight_requests, the admission limits, the drain on SIGTERM,
// tests/e2e/test_serve.py's SIGTERM case).
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "serve/admission_control.h"
#include "serve/model_config.h"
#include "serve/served_model_version.h"

namespace inferloop::serve {
namespace {

const std::string kModelDir = std::string(INFERLOOP_SOURCE_DIR) + "/examples/model_repository/tiny_cnn";

Result<std::shared_ptr<ServedModelVersion>> LoadTinyCnn(std::shared_ptr<std::atomic<int>> inline_slots) {
  std::ifstream in(kModelDir + "/config.pbtxt");
  std::stringstream ss;
  ss << in.rdbuf();
  IL_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(ss.str(), "tiny_cnn"));
  VersionLoadOptions options;
  options.session.intra_op_threads = 1;
  options.limits.max_inflight_requests = 1;  // the version's own gate: each request must have left it
  options.inline_slots = std::move(inline_slots);
  return ServedModelVersion::Load("tiny_cnn", 1, kModelDir + "/1/model.onnx", kModelDir, config, options);
}

InferRequest Image() {
  InferRequest r;
  r.model_name = "tiny_cnn";
  r.inputs.push_back({"image", Tensor::FromVector<float>(DataType::kFloat, {1, 1, 28, 28}, std::vector<float>(28 * 28, 0.5f)), {}});
  return r;
}

// Sends `rounds` requests one after the other; for each, what the server's gate counted while its
// answer was being handed over.
void ExpectNotCountedWhenAnswered(ServedModelVersion& v, int rounds) {
  auto gate = AdmissionGate::Create("server", AdmissionLimits{});
  for (int i = 0; i < rounds; ++i) {
    auto ticket = gate->TryAdmit(100);
    ASSERT_TRUE(ticket.ok());
    std::promise<std::pair<bool, int64_t>> answered;
    ASSERT_TRUE(v.Infer(Image(), RequestContext{},
                        [&answered, gate](Result<InferResponse> r) {
                          answered.set_value({r.ok(), gate->inflight_requests()});
                        },
                        std::move(ticket).value()));
    auto [ok, inflight] = answered.get_future().get();
    EXPECT_TRUE(ok) << i;
    EXPECT_EQ(inflight, 0) << "request " << i << " was still counted in flight while its answer was handed over";
  }
  EXPECT_EQ(gate->inflight_requests(), 0);
}

TEST(ServedModelInflight, AComputedRequestNoLongerCountsInFlightWhenItsAnswerIsHandedOver) {
  auto v = LoadTinyCnn(nullptr);  // answered from the batcher's worker thread
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ExpectNotCountedWhenAnswered(**v, 6);
}

TEST(ServedModelInflight, SoDoesOneRunOnTheCallersThread) {
  // With an inline slot, a fast model's request runs on the caller's thread when nothing is
  // queued (tiny_cnn's warmup decides whether it counts as fast on this machine).
  auto v = LoadTinyCnn(std::make_shared<std::atomic<int>>(1));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ExpectNotCountedWhenAnswered(**v, 6);
}

}  // namespace
}  // namespace inferloop::serve
