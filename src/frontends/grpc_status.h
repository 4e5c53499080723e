// inferloop Status -> gRPC status, per the table in serve/inference_service.h, and the answer of
// a unary call answered at once (with its "retry-after").
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>
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

// Adds the trailing metadata "retry-after" when `status` asks the client to retry later.
void AddRetryAfter(grpc::CallbackServerContext* ctx, const Status& status);

// Ends a unary call answered at once with `status` (its response already written).
grpc::ServerUnaryReactor* AnswerUnary(grpc::CallbackServerContext* ctx, const Status& status);

}  // namespace inferloop::frontends
