// ApiKeys: authentication of `inferloop serve --api-keys FILE` (bearer API keys with permissions,
// optional per-key rate limits), and where each protocol asks for it: one check per REST request
// (WithApiKeys wraps the port's HttpHandler) and one per gRPC call (AuthorizeGrpc at the top of
// every method).
//
// Key file: one key per line, `KEY PERMISSIONS [rate=N/s]`, fields separated by blanks:
//   KEY          16 to 256 visible ASCII characters (no blank, not starting with '#')
//   PERMISSIONS  comma-separated, each once: infer, control, metrics
//   rate=N/s     optional: at most N requests per second for this key (token bucket, burst N;
//                N a positive integer up to 1000000)
// Blank lines and lines whose first non-blank character is '#' are ignored, and so is the rest of
// a line from a field starting with '#'. A bad line (or a key given twice) is an error naming the
// file and the line number(s) and never the key.
//
// Permissions: infer = inference and the metadata reads (REST /v2, /v2/models/..., /v1/...;
// gRPC ServerMetadata, Model{Ready,Metadata,Config,Infer,StreamInfer}, ModelAdaptiveState);
// control = the repository and adaptive pinning (REST /v2/repository/..., .../adaptive/pin|free;
// gRPC Repository*, ModelPin, ModelFree); metrics = GET /metrics (both ports) and statistics
// (REST .../stats; gRPC ModelStatistics). Health (REST /v2/health/live|ready, gRPC ServerLive,
// ServerReady) needs no key; any other path needs a valid key (of any permission).
//
// Keys arrive as `Authorization: Bearer KEY` (REST) or the gRPC metadata `authorization: Bearer
// KEY`. Keys are never logged nor put in any answer or error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/http_server.h"
#include "inferloop/status.h"

namespace grpc {
class ServerContextBase;
class Status;
}  // namespace grpc

namespace inferloop::frontends {

// What a route needs.
enum class Access : uint8_t { kOpen, kAnyKey, kInfer, kControl, kMetrics };

// The outcome of one check.
enum class AuthResult : uint8_t { kAllowed, kMissing, kInvalid, kForbidden, kRateLimited };

// "allowed", "missing", "invalid", "forbidden", "rate_limited" (metric label values).
std::string_view AuthResultName(AuthResult result);

struct AuthVerdict {
  AuthResult result = AuthResult::kAllowed;
  int retry_after_seconds = 0;  // kRateLimited: when the key has a request again (>= 1)
};

// Permission bits of a key.
inline constexpr uint8_t kPermInfer = 1, kPermControl = 2, kPermMetrics = 4;

class ApiKeys {
 public:
  // Parses a key file's text; `source` names it in errors ("FILE line N: ..."). Errors:
  // InvalidArgument for a bad line or a duplicate key, and for a file with no key.
  static Result<std::unique_ptr<ApiKeys>> Parse(std::string_view text, const std::string& source);
  // Reads and parses the file at `path` (NotFound when it cannot be read).
  static Result<std::unique_ptr<ApiKeys>> Load(const std::string& path);
  // Reads the file Load read again (SIGHUP): on success every later Check uses the new keys (their
  // rate buckets start full; a Check already running finishes with the old ones); on failure,
  // with Load's errors (which never quote a key), the old keys stay. FailedPrecondition for keys
  // made by Parse. Thread-safe.
  Status Reload();

  ~ApiKeys();
  ApiKeys(const ApiKeys&) = delete;
  ApiKeys& operator=(const ApiKeys&) = delete;

  size_t size() const;
  // Called with every refusal (from any thread; must not block). Set before serving.
  void set_on_refused(std::function<void(AuthResult)> on_refused) { on_refused_ = std::move(on_refused); }

  // Decides a request needing `needed`; `authorization` is the Authorization header (or gRPC
  // metadata) value, nullptr when absent. kOpen is allowed without looking at it. A missing or
  // malformed header (not "Bearer <token>") is kMissing, an unknown key kInvalid, a key without
  // the permission kForbidden, a key over its rate kRateLimited (a refused request takes no
  // token). Thread-safe; the time spent does not depend on which stored key matched, nor on
  // how much of a stored key a wrong key shares.
  AuthVerdict Check(const std::string* authorization, Access needed);

  struct Entry;  // defined in api_keys.cc

 private:
  using EntryList = std::vector<std::unique_ptr<Entry>>;
  ApiKeys();
  std::shared_ptr<const EntryList> entries() const;

  std::string path_;  // the file Load read ("" for Parse)
  mutable std::mutex entries_mu_;  // guards the pointer only (copied per Check, swapped by Reload)
  std::shared_ptr<const EntryList> entries_;
  std::function<void(AuthResult)> on_refused_;
};

// What a REST request to `target` (path and query, URL-encoded) needs (see the header comment).
Access RestAccess(std::string_view target);
// What a gRPC call of `method` needs: the method's bare name ("ModelInfer") or its full path
// ("/inference.GRPCInferenceService/ModelInfer"). Unknown names need a valid key.
Access GrpcAccess(std::string_view method);

// `inner` behind the keys: a refused request is answered 401 (with `WWW-Authenticate: Bearer`),
// 403 or 429 (with Retry-After) and never reaches `inner`; the body is OpenAI's error shape on
// /v1 paths, KServe's {"error": "..."} elsewhere. `keys` null: `inner` itself. `keys` must
// outlive the handler.
HttpHandler WithApiKeys(ApiKeys* keys, HttpHandler inner);

// The answer to a refused REST request to `target` (for WithApiKeys; exposed for tests).
HttpResponse AuthRefusalResponse(const AuthVerdict& verdict, std::string_view target);

// For the top of a gRPC method: true when the call may go on (always when `keys` is null);
// otherwise sets `*refusal` (UNAUTHENTICATED, PERMISSION_DENIED, or RESOURCE_EXHAUSTED with the
// trailing metadata "retry-after" added to `ctx`).
bool AuthorizeGrpc(ApiKeys* keys, grpc::ServerContextBase& ctx, std::string_view method, grpc::Status* refusal);

}  // namespace inferloop::frontends
