// The gRPC channel `inferloop perf` uses (insecure, no message size limits).
#pragma once

#include <grpcpp/channel.h>

#include <memory>

#include "perf/endpoint.h"

namespace inferloop::perf {

std::shared_ptr<grpc::Channel> MakeGrpcChannel(const Endpoint& endpoint);

}  // namespace inferloop::perf
