#include "frontends/grpc_server.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <utility>

#include "base/status_macros.h"
#include "frontends/api_keys.h"
#include "frontends/grpc_adaptive_service.h"
#include "frontends/grpc_status.h"
#include "grpc_service.grpc.pb.h"

namespace inferloop::frontends {
namespace {

using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

// Ends a call answered at once.
ServerUnaryReactor* Answer(CallbackServerContext* ctx, const Status& status) { return AnswerUnary(ctx, status); }

Status RequireModelName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("model name is required");
  return Status::Ok();
}

// A unary call answered later, from the service's callback on any thread, or ended by the client's
// cancellation, whichever comes first; the other is then ignored. gRPC owns the reactor (created
// with new, deleted in OnDone: its callback API's ownership model); the callback holds only the
// shared Claim, never touching the reactor, the context or the response unless it won the claim,
// and gRPC keeps those alive until Finish (which only the winner calls) has completed.
class DeferredReactor : public ServerUnaryReactor {
 public:
  class Claim {
   public:
    Claim(DeferredReactor* reactor, CallbackServerContext* ctx) : reactor_(reactor), ctx_(ctx) {}
    // Finishes the call with fill()'s status (fill may write the response first), unless it has
    // already finished.
    template <typename Fill>
    void Complete(Fill&& fill) {
      if (done_.exchange(true)) return;
      Status status = fill();
      AddRetryAfter(ctx_, status);
      reactor_->Finish(ToGrpcStatus(status));
    }

   private:
    std::atomic<bool> done_{false};
    DeferredReactor* reactor_;
    CallbackServerContext* ctx_;
  };

  // `cancelled` (may be null) is set when the client cancels.
  DeferredReactor(CallbackServerContext* ctx, std::shared_ptr<std::atomic<bool>> cancelled)
      : claim_(std::make_shared<Claim>(this, ctx)), cancelled_(std::move(cancelled)) {}

  const std::shared_ptr<Claim>& claim() const { return claim_; }

  void OnCancel() override {
    if (cancelled_) cancelled_->store(true);
    claim_->Complete([] { return Status(StatusCode::kCancelled, "the call was cancelled"); });
  }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<Claim> claim_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

// A ModelInfer call answered later: its request and response messages live as long as the call.
class InferReactor : public DeferredReactor {
 public:
  using DeferredReactor::DeferredReactor;
  inference::ModelInferRequest request;
  inference::ModelInferResponse response;
};

serve::RequestContext MakeContext(size_t request_bytes) {
  serve::RequestContext context;
  context.protocol = "grpc";
  context.request_bytes = request_bytes;
  return context;
}

void FillDuration(const serve::DurationStat& in, inference::StatisticDuration* out) {
  out->set_count(in.count);
  out->set_ns(in.ns);
}

void FillStatistics(const serve::ModelStatistics& in, inference::ModelStatistics* out) {
  out->set_name(in.name);
  out->set_version(in.version);
  out->set_last_inference(in.last_inference_ms);
  out->set_inference_count(in.inference_count);
  out->set_execution_count(in.execution_count);
  auto* stats = out->mutable_inference_stats();
  FillDuration(in.success, stats->mutable_success());
  FillDuration(in.fail, stats->mutable_fail());
  FillDuration(in.queue, stats->mutable_queue());
  FillDuration(in.compute_input, stats->mutable_compute_input());
  FillDuration(in.compute_infer, stats->mutable_compute_infer());
  FillDuration(in.compute_output, stats->mutable_compute_output());
  FillDuration(in.cache_hit, stats->mutable_cache_hit());
  FillDuration(in.cache_miss, stats->mutable_cache_miss());
  for (const serve::BatchStat& b : in.batch_stats) {
    auto* batch = out->add_batch_stats();
    batch->set_batch_size(b.batch_size);
    FillDuration(b.compute_input, batch->mutable_compute_input());
    FillDuration(b.compute_infer, batch->mutable_compute_infer());
    FillDuration(b.compute_output, batch->mutable_compute_output());
  }
  auto* memory = out->add_memory_usage();
  memory->set_type("CPU");
  memory->set_id(0);
  memory->set_byte_size(in.memory_bytes > 0 ? static_cast<uint64_t>(in.memory_bytes) : 0);
}

void FillTensorMetadata(const serve::TensorMetadata& in, inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(in.name);
  out->set_datatype(in.datatype);
  for (int64_t d : in.shape) out->add_shape(d);
}

// Every unary method takes its request's bytes and parses them itself: gRPC's generated handler
// answers a message it cannot parse UNIMPLEMENTED with no details; these answer INVALID_ARGUMENT
// saying so. The parse and the response's serialization are the ones the generated code does.
template <class Request>
Status ParseRequest(const grpc::ByteBuffer* bytes, Request* out) {
  grpc::ByteBuffer shared(*bytes);  // shares the slices (Deserialize consumes its buffer)
  if (grpc::SerializationTraits<Request>::Deserialize(&shared, out).ok()) return Status::Ok();
  return Status::InvalidArgument("the request could not be parsed: its " + std::to_string(bytes->Length()) +
                                 " bytes are not a protobuf " + std::string(Request::descriptor()->full_name()));
}

template <class Response>
Status SerializeResponse(const Response& response, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  grpc::Status st = grpc::SerializationTraits<Response>::Serialize(response, out, &own_buffer);
  if (!st.ok()) return Status::Internal("the response could not be serialized: " + st.error_message());
  return Status::Ok();
}

// ModelStreamInfer: reads requests one after another, runs each through the service, and writes
// one ModelStreamInferResponse per request as each completes (in completion order; responses
// carry the request id). A message that is not a ModelInferRequest, or one that does not decode,
// gets a response with error_message (and whatever identity it had) and the stream goes on. The
// stream ends OK once the client half-closed and every answer is written; a cancelled stream ends
// at once, sets every request's cancelled flag, and drops late answers.
//
// Messages travel as raw bytes (parsed and serialized here, as the unary methods do): gRPC's
// generated handler would end the stream without an answer on a message it cannot parse.
//
// The state the service's callbacks touch lives in a shared Stream (they may run after the
// reactor is gone). Every change goes through Update, which decides under the lock whether to
// start the next write or to finish, and calls into gRPC only after releasing it (gRPC may run
// a reaction inline). While a write is in progress or reads have not ended the stream cannot
// finish, so the reactor outlives any call into it that Update decided.
class StreamReactor : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamReactor(serve::InferenceService& service, const GrpcDecodeOptions& decode)
      : service_(service), decode_(decode), stream_(std::make_shared<Stream>()) {
    stream_->reactor = this;
    StartRead(&request_bytes_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed, or the call is over
      Update(stream_, [](Stream& s) { s.reads_done = true; });
      return;
    }
    if (stream_->cancelled_flag->load()) {
      Update(stream_, [](Stream& s) { s.reads_done = true; });
      return;
    }
    serve::RequestContext context = MakeContext(request_bytes_.Length());
    context.cancelled = stream_->cancelled_flag;
    inference::ModelInferRequest request;
    Status parsed = ParseRequest(&request_bytes_, &request);
    request_bytes_.Clear();
    Result<InferRequest> decoded = parsed.ok() ? DecodeGrpcInferRequest(request, decode_) : Result<InferRequest>(parsed);
    if (!decoded.ok()) {
      grpc::ByteBuffer response = Serialized(ErrorResponse(decoded.status(), request));
      Update(stream_, [&](Stream& s) { s.Enqueue(std::move(response)); });
    } else {
      Update(stream_, [](Stream& s) { ++s.outstanding; });
      std::shared_ptr<Stream> stream = stream_;
      service_.Infer(std::move(decoded).value(), std::move(context),
                     [stream, request = Identity(request)](Result<InferResponse> result) {
        inference::ModelStreamInferResponse response;
        if (result.ok()) {
          Status encoded = EncodeGrpcInferResponse(result.value(), response.mutable_infer_response());
          if (!encoded.ok()) response = ErrorResponse(encoded, request);
        } else {
          response = ErrorResponse(result.status(), request);
        }
        grpc::ByteBuffer bytes = Serialized(response);
        Update(stream, [&](Stream& s) {
          --s.outstanding;
          s.Enqueue(std::move(bytes));
        });
      });
    }
    StartRead(&request_bytes_);
  }

  void OnWriteDone(bool ok) override {
    Update(stream_, [ok](Stream& s) {
      s.writing = false;
      if (!ok) s.Cancel();
    });
  }

  void OnCancel() override {
    Update(stream_, [](Stream& s) { s.Cancel(); });
  }

  void OnDone() override { delete this; }

 private:
  struct Stream {
    std::mutex mu;
    StreamReactor* reactor = nullptr;  // used only for actions Update decided
    std::shared_ptr<std::atomic<bool>> cancelled_flag = std::make_shared<std::atomic<bool>>(false);
    std::deque<grpc::ByteBuffer> queue;  // serialized ModelStreamInferResponses
    grpc::ByteBuffer in_write;           // the message being written
    int outstanding = 0;  // requests the service has not answered yet
    bool writing = false;
    bool reads_done = false;
    bool cancelled = false;
    bool finished = false;

    void Enqueue(grpc::ByteBuffer response) {
      if (!cancelled) queue.push_back(std::move(response));
    }
    void Cancel() {
      cancelled = true;
      cancelled_flag->store(true);
      queue.clear();
    }
  };

  // The message's bytes; a response that cannot be serialized (larger than protobuf's 2 GiB
  // limit) is replaced by an error response naming the request.
  static grpc::ByteBuffer Serialized(const inference::ModelStreamInferResponse& response) {
    grpc::ByteBuffer bytes;
    Status st = SerializeResponse(response, &bytes);
    if (!st.ok()) {
      inference::ModelStreamInferResponse error;
      error.set_error_message(st.message());
      *error.mutable_infer_response()->mutable_model_name() = response.infer_response().model_name();
      *error.mutable_infer_response()->mutable_id() = response.infer_response().id();
      bytes.Clear();
      (void)SerializeResponse(error, &bytes);
    }
    return bytes;
  }

  // The request's model, version and id (no inputs), echoed in its error answer.
  static inference::ModelInferRequest Identity(const inference::ModelInferRequest& request) {
    inference::ModelInferRequest identity;
    identity.set_model_name(request.model_name());
    identity.set_model_version(request.model_version());
    identity.set_id(request.id());
    return identity;
  }

  // error_message, and the request's model, version and id in infer_response so that a client
  // can tell which request failed.
  static inference::ModelStreamInferResponse ErrorResponse(const Status& status,
                                                           const inference::ModelInferRequest& request) {
    inference::ModelStreamInferResponse response;
    response.set_error_message(status.message().empty() ? StatusCodeName(status.code()) : status.message());
    response.mutable_infer_response()->set_model_name(request.model_name());
    response.mutable_infer_response()->set_model_version(request.model_version());
    response.mutable_infer_response()->set_id(request.id());
    return response;
  }

  template <typename Change>
  static void Update(const std::shared_ptr<Stream>& stream, Change&& change) {
    enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
    bool cancelled = false;
    StreamReactor* reactor = nullptr;
    {
      std::lock_guard<std::mutex> lock(stream->mu);
      Stream& s = *stream;
      change(s);
      if (s.finished || s.writing) return;
      reactor = s.reactor;
      if (!s.cancelled && !s.queue.empty()) {
        s.writing = true;
        s.in_write = std::move(s.queue.front());
        s.queue.pop_front();
        action = Action::kWrite;
      } else if (s.reads_done && (s.cancelled || s.outstanding == 0)) {
        s.finished = true;
        cancelled = s.cancelled;
        action = Action::kFinish;
      }
    }
    if (action == Action::kWrite) {
      reactor->StartWrite(&stream->in_write);
    } else if (action == Action::kFinish) {
      reactor->Finish(cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "the stream was cancelled")
                                : grpc::Status::OK);
    }
  }

  serve::InferenceService& service_;
  const GrpcDecodeOptions& decode_;
  std::shared_ptr<Stream> stream_;
  grpc::ByteBuffer request_bytes_;
};

// Insecure without options.tls; else TLS from the files, which gRPC re-reads every
// tls_refresh_seconds (a changed pair applies to new connections).
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const GrpcServerOptions& options) {
  if (!options.tls) return grpc::InsecureServerCredentials();
  const TlsFiles& f = options.tls->files();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      f.key_file, f.cert_file, f.client_ca_file, std::max(1u, options.tls_refresh_seconds));
  grpc::experimental::TlsServerCredentialsOptions o(provider);
  o.watch_identity_key_cert_pairs();
  if (options.tls->mutual()) {
    o.watch_root_certs();
    o.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    o.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(o);
}

}  // namespace

// A ModelStreamInfer call refused by the API keys: ends at once with the refusal.
class RefusedStream : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& refusal) { Finish(refusal); }
  void OnDone() override { delete this; }
};

// A unary call answered at once: `body(request, &response)`'s status, with the response sent when OK.
template <class Request, class Response, class Body>
ServerUnaryReactor* ParsedUnary(CallbackServerContext* ctx, const grpc::ByteBuffer* in, grpc::ByteBuffer* out,
                                Body&& body) {
  Request request;
  if (Status st = ParseRequest(in, &request); !st.ok()) return Answer(ctx, st);
  Response response;
  Status st = body(request, &response);
  if (st.ok()) st = SerializeResponse(response, out);
  return Answer(ctx, st);
}

namespace raw {
using S = inference::GRPCInferenceService;
using Base = S::WithRawCallbackMethod_ServerLive<S::WithRawCallbackMethod_ServerReady<
    S::WithRawCallbackMethod_ServerMetadata<S::WithRawCallbackMethod_ModelReady<S::WithRawCallbackMethod_ModelMetadata<
        S::WithRawCallbackMethod_ModelConfig<S::WithRawCallbackMethod_ModelInfer<S::WithRawCallbackMethod_ModelStatistics<
            S::WithRawCallbackMethod_RepositoryIndex<S::WithRawCallbackMethod_RepositoryModelLoad<
                S::WithRawCallbackMethod_RepositoryModelUnload<S::WithRawCallbackMethod_ModelStreamInfer<
                    S::Service>>>>>>>>>>>>;  // every method of the service is raw
}  // namespace raw

class GrpcServer::Service : public raw::Base {
 public:
  Service(serve::InferenceService& core, const GrpcServerOptions& options) : core_(core), options_(options) {}

  ServerUnaryReactor* ServerLive(CallbackServerContext* ctx, const grpc::ByteBuffer* in, grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ServerLive")) return refused;
    return ParsedUnary<inference::ServerLiveRequest, inference::ServerLiveResponse>(
        ctx, in, out, [&](const auto&, auto* response) {
          response->set_live(core_.Live());
          return Status::Ok();
        });
  }

  ServerUnaryReactor* ServerReady(CallbackServerContext* ctx, const grpc::ByteBuffer* in, grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ServerReady")) return refused;
    return ParsedUnary<inference::ServerReadyRequest, inference::ServerReadyResponse>(
        ctx, in, out, [&](const auto&, auto* response) {
          response->set_ready(core_.Ready());
          return Status::Ok();
        });
  }

  ServerUnaryReactor* ServerMetadata(CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                     grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ServerMetadata")) return refused;
    return ParsedUnary<inference::ServerMetadataRequest, inference::ServerMetadataResponse>(
        ctx, in, out, [&](const auto&, auto* response) {
          serve::ServerMetadata metadata = core_.GetServerMetadata();
          response->set_name(metadata.name);
          response->set_version(metadata.version);
          for (const std::string& e : metadata.extensions) response->add_extensions(e);
          return Status::Ok();
        });
  }

  ServerUnaryReactor* ModelReady(CallbackServerContext* ctx, const grpc::ByteBuffer* in, grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelReady")) return refused;
    return ParsedUnary<inference::ModelReadyRequest, inference::ModelReadyResponse>(
        ctx, in, out, [&](const auto& request, auto* response) -> Status {
          IL_RETURN_IF_ERROR(RequireModelName(request.name()));
          IL_ASSIGN_OR_RETURN(bool ready, core_.ModelReady(request.name(), request.version()));
          response->set_ready(ready);
          return Status::Ok();
        });
  }

  ServerUnaryReactor* ModelMetadata(CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                    grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelMetadata")) return refused;
    return ParsedUnary<inference::ModelMetadataRequest, inference::ModelMetadataResponse>(
        ctx, in, out, [&](const auto& request, auto* response) -> Status {
          IL_RETURN_IF_ERROR(RequireModelName(request.name()));
          IL_ASSIGN_OR_RETURN(serve::ModelMetadata metadata, core_.GetModelMetadata(request.name(), request.version()));
          response->set_name(metadata.name);
          for (const std::string& v : metadata.versions) response->add_versions(v);
          response->set_platform(metadata.platform);
          for (const serve::TensorMetadata& t : metadata.inputs) FillTensorMetadata(t, response->add_inputs());
          for (const serve::TensorMetadata& t : metadata.outputs) FillTensorMetadata(t, response->add_outputs());
          return Status::Ok();
        });
  }

  ServerUnaryReactor* ModelConfig(CallbackServerContext* ctx, const grpc::ByteBuffer* in, grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelConfig")) return refused;
    return ParsedUnary<inference::ModelConfigRequest, inference::ModelConfigResponse>(
        ctx, in, out, [&](const auto& request, auto* response) -> Status {
          IL_RETURN_IF_ERROR(RequireModelName(request.name()));
          IL_ASSIGN_OR_RETURN(std::string json, core_.GetModelConfigJson(request.name(), request.version()));
          google::protobuf::util::JsonParseOptions parse_options;
          parse_options.ignore_unknown_fields = true;  // fields of Triton's config this proto lacks
          auto parsed = google::protobuf::util::JsonStringToMessage(json, response->mutable_config(), parse_options);
          if (!parsed.ok()) {
            return Status::Internal("model configuration of '" + request.name() +
                                    "' is not valid ModelConfig JSON: " + std::string(parsed.message()));
          }
          return Status::Ok();
        });
  }

  ServerUnaryReactor* ModelInfer(CallbackServerContext* ctx, const grpc::ByteBuffer* request_bytes,
                                 grpc::ByteBuffer* response_bytes) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelInfer")) return refused;
    serve::RequestContext context = MakeContext(request_bytes->Length());
    auto reactor = std::make_unique<InferReactor>(ctx, context.cancelled);
    if (Status st = ParseRequest(request_bytes, &reactor->request); !st.ok()) return Answer(ctx, st);
    Result<InferRequest> decoded = DecodeGrpcInferRequest(reactor->request, options_.decode);
    if (!decoded.ok()) return Answer(ctx, decoded.status());
    InferReactor* r = reactor.release();  // gRPC owns it from here (deleted in OnDone)
    std::shared_ptr<DeferredReactor::Claim> claim = r->claim();
    core_.Infer(std::move(decoded).value(), std::move(context), [claim, r, response_bytes](Result<InferResponse> result) {
      claim->Complete([&]() -> Status {  // only the winner runs this, while the call is alive
        if (!result.ok()) return result.status();
        IL_RETURN_IF_ERROR(EncodeGrpcInferResponse(result.value(), &r->response));
        return SerializeResponse(r->response, response_bytes);
      });
    });
    return r;
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ModelStreamInfer(
      CallbackServerContext* ctx) override {
    grpc::Status refusal;
    if (!AuthorizeGrpc(options_.api_keys, *ctx, "ModelStreamInfer", &refusal)) return new RefusedStream(refusal);
    return new StreamReactor(core_, options_.decode);
  }

  ServerUnaryReactor* ModelStatistics(CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                      grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "ModelStatistics")) return refused;
    return ParsedUnary<inference::ModelStatisticsRequest, inference::ModelStatisticsResponse>(
        ctx, in, out, [&](const auto& request, auto* response) -> Status {
          IL_ASSIGN_OR_RETURN(auto stats, core_.GetStatistics(request.name(), request.version()));
          for (const serve::ModelStatistics& s : stats) FillStatistics(s, response->add_model_stats());
          return Status::Ok();
        });
  }

  ServerUnaryReactor* RepositoryIndex(CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                      grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "RepositoryIndex")) return refused;
    return ParsedUnary<inference::RepositoryIndexRequest, inference::RepositoryIndexResponse>(
        ctx, in, out, [&](const auto& request, auto* response) {
          for (const serve::ModelIndexEntry& e : core_.RepositoryIndex(request.ready())) {
            auto* model = response->add_models();
            model->set_name(e.name);
            model->set_version(e.version);
            model->set_state(e.state);
            model->set_reason(e.reason);
          }
          return Status::Ok();
        });
  }

  ServerUnaryReactor* RepositoryModelLoad(CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                          grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "RepositoryModelLoad")) return refused;
    inference::RepositoryModelLoadRequest request;
    if (Status st = ParseRequest(in, &request); !st.ok()) return Answer(ctx, st);
    if (Status st = RequireModelName(request.model_name()); !st.ok()) return Answer(ctx, st);
    if (!request.parameters().empty()) {
      return Answer(ctx, Status::Unimplemented("load parameters (config or file overrides) are not supported; "
                                               "the model is loaded from the repository"));
    }
    auto* reactor = new DeferredReactor(ctx, nullptr);
    std::shared_ptr<DeferredReactor::Claim> claim = reactor->claim();
    core_.LoadModel(request.model_name(), [claim, out](Status status) {
      claim->Complete([&] { return status.ok() ? SerializeResponse(inference::RepositoryModelLoadResponse(), out) : status; });
    });
    return reactor;
  }

  ServerUnaryReactor* RepositoryModelUnload(CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                            grpc::ByteBuffer* out) override {
    if (ServerUnaryReactor* refused = Refused(ctx, "RepositoryModelUnload")) return refused;
    inference::RepositoryModelUnloadRequest request;
    if (Status st = ParseRequest(in, &request); !st.ok()) return Answer(ctx, st);
    if (Status st = RequireModelName(request.model_name()); !st.ok()) return Answer(ctx, st);
    auto* reactor = new DeferredReactor(ctx, nullptr);
    std::shared_ptr<DeferredReactor::Claim> claim = reactor->claim();
    core_.UnloadModel(request.model_name(), [claim, out](Status status) {
      claim->Complete([&] { return status.ok() ? SerializeResponse(inference::RepositoryModelUnloadResponse(), out) : status; });
    });
    return reactor;
  }

 private:
  // nullptr when the call may go on (api_keys.h); otherwise the reactor answering its refusal.
  ServerUnaryReactor* Refused(CallbackServerContext* ctx, std::string_view method) {
    grpc::Status refusal;
    if (AuthorizeGrpc(options_.api_keys, *ctx, method, &refusal)) return nullptr;
    ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(refusal);
    return reactor;
  }

  serve::InferenceService& core_;
  const GrpcServerOptions& options_;
};

GrpcServer::GrpcServer(serve::InferenceService& service, GrpcServerOptions options)
    : core_(service), options_(std::move(options)) {}

GrpcServer::~GrpcServer() {
  if (server_ && !shut_down_) Shutdown(std::chrono::system_clock::now());
}

Status GrpcServer::Start() {
  if (server_ || shut_down_) return Status::FailedPrecondition("the gRPC server was already started");
  if (options_.port < 0 || options_.port > 65535) {
    return Status::InvalidArgument("gRPC port " + std::to_string(options_.port) + " is out of range 0..65535");
  }
  if (options_.max_receive_message_bytes <= 0) {
    return Status::InvalidArgument("gRPC max receive message size must be positive");
  }
  std::string host = options_.host;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  const std::string address = host + ":" + std::to_string(options_.port);

  service_ = std::make_unique<Service>(core_, options_);
  adaptive_service_ = MakeGrpcAdaptiveService(core_, options_.api_keys);
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(address, ServerCredentials(options_), &bound_port);
  builder.SetMaxReceiveMessageSize(options_.max_receive_message_bytes);
  // A second server on a busy port must fail, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  builder.RegisterService(adaptive_service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || bound_port == 0) {
    server_.reset();
    service_.reset();
    adaptive_service_.reset();
    return Status::Unavailable("gRPC server cannot listen on " + address + " (address in use or invalid)");
  }
  port_ = bound_port;
  return Status::Ok();
}

void GrpcServer::Shutdown(std::chrono::system_clock::time_point deadline) {
  if (!server_ || shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(deadline);
  server_->Wait();
}

}  // namespace inferloop::frontends
