// GrpcServer: the KServe v2 gRPC frontend (inference.GRPCInferenceService, proto/grpc_service.proto)
// over a serve::InferenceService. Built on gRPC's callback API: no thread blocks per call; an
// inference is answered from the service's callback, on whatever thread calls it.
//
// Calls: ServerLive/Ready/Metadata, ModelReady/Metadata, ModelConfig (Triton's), ModelInfer,
// ModelStreamInfer (bidirectional: one ModelStreamInferResponse per request, sent as each
// completes; a failed request's answer carries error_message, with only the request's model,
// version and id in infer_response, and the stream goes on),
// ModelStatistics, RepositoryIndex, RepositoryModelLoad/Unload. On the same port, inferloop's own
// inferloop.adaptive.AdaptiveService (grpc_adaptive_service.h): ModelAdaptiveState, ModelPin,
// ModelFree.
// Errors map per serve/inference_service.h (grpc_status.h); RESOURCE_EXHAUSTED and UNAVAILABLE
// answers carry the trailing metadata "retry-after". A call the client cancels sets its
// RequestContext's cancelled flag, and the call ends at once (the service's late answer is dropped).
//
// Thread-safety: Start and Shutdown from one thread; port() from any thread after Start.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "frontends/v2_grpc_codec.h"
#include "frontends/tls.h"
#include "inferloop/status.h"
#include "serve/inference_service.h"

namespace grpc {
class Server;
class Service;
}

namespace inferloop::frontends {

class ApiKeys;

struct GrpcServerOptions {
  std::string host = "0.0.0.0";  // an IPv6 address may be given bare ("::")
  int port = 8001;               // 0: an ephemeral port (GrpcServer::port() says which)
  // Largest request message; gRPC itself answers larger ones with RESOURCE_EXHAUSTED.
  int max_receive_message_bytes = 64 << 20;
  GrpcDecodeOptions decode;
  // When set (must outlive the server), every call is checked against these API keys first
  // (api_keys.h: UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED); null: no keys needed.
  ApiKeys* api_keys = nullptr;
  // When set, the port speaks TLS only, with tls's files (mutual TLS when it has a client CA:
  // GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY). gRPC watches the files itself and
  // applies changed certificates to new connections within tls_refresh_seconds (no SIGHUP needed).
  std::shared_ptr<TlsCredentials> tls;
  unsigned tls_refresh_seconds = 5;
};

class GrpcServer {
 public:
  // `service` must outlive the server.
  GrpcServer(serve::InferenceService& service, GrpcServerOptions options);
  // Shuts down at once (in-flight calls cancelled) if still running.
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds and starts serving. Unavailable when the address cannot be bound (in use, bad host);
  // FailedPrecondition when already started.
  Status Start();
  // The bound port (the ephemeral one when options.port was 0); 0 before Start.
  int port() const { return port_; }
  // Graceful shutdown: stops accepting calls, lets in-flight calls finish until `deadline`, then
  // cancels the rest; returns when every call has ended. Idempotent.
  void Shutdown(std::chrono::system_clock::time_point deadline);
  void Shutdown(std::chrono::milliseconds grace) { Shutdown(std::chrono::system_clock::now() + grace); }

 private:
  class Service;
  serve::InferenceService& core_;
  GrpcServerOptions options_;
  std::unique_ptr<Service> service_;  // declared before server_: outlives it
  std::unique_ptr<grpc::Service> adaptive_service_;  // AdaptiveService; outlives server_ too
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace inferloop::frontends
