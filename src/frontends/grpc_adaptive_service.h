// GrpcAdaptiveService: inferloop.adaptive.AdaptiveService (proto/adaptive_service.proto) over a
// serve::InferenceService: ModelAdaptiveState, ModelPin, ModelFree. GrpcServer registers it next
// to KServe's GRPCInferenceService, on the same port. Errors map per serve/inference_service.h
// (grpc_status.h): NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION. Every call is answered at
// once (the service's adaptive calls do not block on inference).
#pragma once

#include <memory>

#include "serve/inference_service.h"

namespace grpc {
class Service;
}

namespace inferloop::frontends {

class ApiKeys;

// The service to register with a grpc::ServerBuilder; `core` (and `api_keys` when set: every call
// is checked against them first, api_keys.h) must outlive it.
std::unique_ptr<grpc::Service> MakeGrpcAdaptiveService(serve::InferenceService& core, ApiKeys* api_keys = nullptr);

}  // namespace inferloop::frontends
