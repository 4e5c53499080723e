#include "frontends/grpc_adaptive_service.h"

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>

#include "adaptive_service.grpc.pb.h"
#include "frontends/api_keys.h"
#include "frontends/grpc_status.h"

namespace inferloop::frontends {
namespace {

namespace pb = inferloop::adaptive;
using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

void FillVariant(const serve::VariantReport& in, pb::Variant* out) {
  out->set_name(in.name);
  out->set_usable(in.usable);
  if (!in.usable) out->set_skipped_reason(in.skipped_reason);
  out->set_source(in.source);
  if (in.accuracy_measured) out->set_accuracy_drop(in.accuracy_drop);
  out->set_metric(in.metric);
  out->set_memory_bytes(in.memory_bytes);
  for (const auto& [batch_size, ms] : in.latency_ms) {
    pb::BatchLatency* latency = out->add_latency_ms();
    latency->set_batch_size(batch_size);
    latency->set_ms(ms);
  }
}

void FillState(const serve::AdaptiveState& in, pb::AdaptiveState* out) {
  out->set_model(in.model);
  out->set_version(std::to_string(in.version));
  pb::Objectives* objectives = out->mutable_objectives();
  if (in.controller) {
    objectives->mutable_latency_slo()->set_percentile(in.slo_percentile);
    objectives->mutable_latency_slo()->set_milliseconds(in.slo_ms);
  }
  objectives->set_max_accuracy_drop(in.max_accuracy_drop);
  objectives->set_cpu_share(in.cpu_share);
  out->set_controller(in.controller);
  out->set_variant(in.variant);
  out->set_pinned(in.pinned);
  out->set_reason(in.reason);
  out->set_slo_unreachable(in.slo_unreachable);
  pb::Knobs* knobs = out->mutable_knobs();
  knobs->set_preferred_batch_size(in.preferred_batch_size);
  knobs->set_max_queue_delay_us(in.max_queue_delay_us);
  knobs->set_instances(in.instances);
  pb::Observed* observed = out->mutable_observed();
  observed->set_arrival_rate(in.arrival_rate);
  if (in.observed_latency_ms >= 0) observed->set_latency_ms(in.observed_latency_ms);
  for (const serve::VariantReport& v : in.variants) FillVariant(v, out->add_variants());
}

Status RequireModelName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("model name is required");
  return Status::Ok();
}

// Writes the version's state into `out`.
Status StateInto(serve::InferenceService& core, const std::string& model, const std::string& version,
                 pb::AdaptiveState* out) {
  Result<serve::AdaptiveState> state = core.GetAdaptiveState(model, version);
  if (!state.ok()) return state.status();
  FillState(state.value(), out);
  return Status::Ok();
}

class Service final : public pb::AdaptiveService::CallbackService {
 public:
  Service(serve::InferenceService& core, ApiKeys* api_keys) : core_(core), api_keys_(api_keys) {}

  ServerUnaryReactor* ModelAdaptiveState(CallbackServerContext* ctx, const pb::ModelAdaptiveStateRequest* request,
                                         pb::ModelAdaptiveStateResponse* response) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelAdaptiveState")) return refused;
    if (Status st = RequireModelName(request->name()); !st.ok()) return AnswerUnary(ctx, st);
    return AnswerUnary(ctx, StateInto(core_, request->name(), request->version(), response->mutable_state()));
  }

  ServerUnaryReactor* ModelPin(CallbackServerContext* ctx, const pb::ModelPinRequest* request,
                               pb::ModelPinResponse* response) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelPin")) return refused;
    if (Status st = RequireModelName(request->name()); !st.ok()) return AnswerUnary(ctx, st);
    if (request->variant().empty()) {
      return AnswerUnary(ctx, Status::InvalidArgument("variant is required (ModelFree lets the controller choose again)"));
    }
    Status pinned = core_.PinVariant(request->name(), request->version(), request->variant());
    if (!pinned.ok()) return AnswerUnary(ctx, pinned);
    return AnswerUnary(ctx, StateInto(core_, request->name(), request->version(), response->mutable_state()));
  }

  ServerUnaryReactor* ModelFree(CallbackServerContext* ctx, const pb::ModelFreeRequest* request,
                                pb::ModelFreeResponse* response) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelFree")) return refused;
    if (Status st = RequireModelName(request->name()); !st.ok()) return AnswerUnary(ctx, st);
    Status freed = core_.PinVariant(request->name(), request->version(), "");
    if (!freed.ok()) return AnswerUnary(ctx, freed);
    return AnswerUnary(ctx, StateInto(core_, request->name(), request->version(), response->mutable_state()));
  }

 private:
  // nullptr when the call may go on (api_keys.h); otherwise the reactor answering its refusal.
  ServerUnaryReactor* Refused(CallbackServerContext* ctx, std::string_view method) {
    grpc::Status refusal;
    if (AuthorizeGrpc(api_keys_, *ctx, method, &refusal)) return nullptr;
    ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(refusal);
    return reactor;
  }

  serve::InferenceService& core_;
  ApiKeys* api_keys_;
};

}  // namespace

std::unique_ptr<grpc::Service> MakeGrpcAdaptiveService(serve::InferenceService& core, ApiKeys* api_keys) {
  return std::make_unique<Service>(core, api_keys);
}

}  // namespace inferloop::frontends
