// Endpoint: where the server is, parsed from --url.
#pragma once

#include <string>

#include "inferloop/status.h"

namespace inferloop::perf {

struct Endpoint {
  enum class Protocol { kRest, kGrpc };
  Protocol protocol = Protocol::kRest;
  std::string host;
  std::string port;
  // "http://host:port" or "grpc://host:port".
  std::string ToString() const {
    return (protocol == Protocol::kRest ? "http://" : "grpc://") + host + ":" + port;
  }
};

// "http://HOST:PORT" (REST), "grpc://HOST:PORT" (gRPC); a trailing '/' is allowed. HOST may be a
// bracketed IPv6 address. InvalidArgument otherwise (https is not supported).
Result<Endpoint> ParseEndpoint(const std::string& url);

}  // namespace inferloop::perf
