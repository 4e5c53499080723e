// inferloop Status -> gRPC status, per the table in serve/inference_service.h.
#pragma once

#include <grpcpp/support/status.h>

#include "inferloop/status.h"

namespace inferloop::frontends {

// The gRPC code for a Status code (kOk -> OK).
grpc::StatusCode ToGrpcCode(StatusCode code);

// The gRPC status for `status`, its message carried unchanged.
grpc::Status ToGrpcStatus(const Status& status);

// Whether a client should retry later (RESOURCE_EXHAUSTED, UNAVAILABLE): those answers carry the
// trailing metadata "retry-after" (seconds, serve::RetryAfterSeconds()).
bool IsRetryLater(StatusCode code);

}  // namespace inferloop::frontends
