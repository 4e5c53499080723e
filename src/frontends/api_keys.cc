#include "frontends/api_keys.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include "base/status_macros.h"
#include "frontends/openai_handler.h"
#include "frontends/rest_handler.h"

namespace inferloop::frontends {

using Digest = std::array<unsigned char, 32>;

struct ApiKeys::Entry {
  Digest digest{};
  uint8_t permissions = 0;
  int line = 0;
  // Token bucket (rate > 0): `tokens` requests left at `refilled`, refilled at `rate` per second
  // up to `rate` (the burst).
  double rate = 0;
  std::mutex mu;
  double tokens = 0;
  std::chrono::steady_clock::time_point refilled;
};

namespace {

constexpr size_t kMinKeyLength = 16, kMaxKeyLength = 256;
constexpr long kMaxRate = 1'000'000;

// SHA-256 of `data` into `out`; false when OpenSSL fails (never in practice).
bool Sha256(std::string_view data, Digest* out) {
  unsigned int length = 0;
  return EVP_Digest(data.data(), data.size(), out->data(), &length, EVP_sha256(), nullptr) == 1 &&
         length == out->size();
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r')) ++pos;
    if (pos >= line.size()) break;
    size_t end = pos;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r') ++end;
    std::string_view field = line.substr(pos, end - pos);
    if (field[0] == '#') break;  // a comment to the end of the line
    fields.push_back(field);
    pos = end;
  }
  return fields;
}

// The permission bits of "infer,control" (0 with `error` set when bad). Never sees the key.
uint8_t ParsePermissions(std::string_view list, std::string* error) {
  uint8_t bits = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = std::min(list.find(',', pos), list.size());
    std::string_view name = list.substr(pos, comma - pos);
    uint8_t bit = name == "infer" ? kPermInfer : name == "control" ? kPermControl : name == "metrics" ? kPermMetrics : 0;
    if (bit == 0) {
      *error = "unknown permission '" + std::string(name.substr(0, 40)) + "' (expected infer, control, metrics)";
      return 0;
    }
    if (bits & bit) {
      *error = "permission '" + std::string(name) + "' given twice";
      return 0;
    }
    bits |= bit;
    pos = comma + 1;
  }
  return bits;
}

// N of "rate=N/s" (0 with `error` set when bad).
long ParseRate(std::string_view field, std::string* error) {
  constexpr std::string_view kPrefix = "rate=", kSuffix = "/s";
  const bool shaped = field.size() > kPrefix.size() + kSuffix.size() && field.substr(0, kPrefix.size()) == kPrefix &&
                      field.substr(field.size() - kSuffix.size()) == kSuffix;
  std::string_view digits = shaped ? field.substr(kPrefix.size(), field.size() - kPrefix.size() - kSuffix.size()) : "";
  long n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || n > kMaxRate) {
      n = 0;
      break;
    }
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > kMaxRate) {
    *error = "expected rate=N/s with N a whole number from 1 to " + std::to_string(kMaxRate) + " as the third field";
    return 0;
  }
  return n;
}

// Checks one non-comment line's fields into `entry` (an error message without the key when bad).
std::string ParseLine(const std::vector<std::string_view>& fields, ApiKeys::Entry* entry) {
  if (fields.size() < 2 || fields.size() > 3) {
    return "expected 'KEY PERMISSIONS [rate=N/s]' (" + std::to_string(fields.size()) + " fields)";
  }
  std::string_view key = fields[0];
  if (key.size() < kMinKeyLength || key.size() > kMaxKeyLength) {
    return "the key must have " + std::to_string(kMinKeyLength) + " to " + std::to_string(kMaxKeyLength) +
           " characters (it has " + std::to_string(key.size()) + ")";
  }
  for (char c : key) {
    if (c < 0x21 || c > 0x7e) return "the key must be visible ASCII characters";
  }
  std::string error;
  entry->permissions = ParsePermissions(fields[1], &error);
  if (!error.empty()) return error;
  if (fields.size() == 3) {
    long rate = ParseRate(fields[2], &error);
    if (!error.empty()) return error;
    entry->rate = static_cast<double>(rate);
    entry->tokens = entry->rate;
    entry->refilled = std::chrono::steady_clock::now();
  }
  if (!Sha256(key, &entry->digest)) return "OpenSSL cannot compute SHA-256";
  return "";
}

// The token of "Bearer <token>" (scheme case-insensitive, blanks around the token ignored); empty
// when the value is not of that form.
std::string_view BearerToken(std::string_view value) {
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return {};
  }
  if (value[kScheme.size()] != ' ' && value[kScheme.size()] != '\t') return {};
  std::string_view token = value.substr(kScheme.size());
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return token;
}

uint8_t AccessBit(Access a) {
  switch (a) {
    case Access::kInfer: return kPermInfer;
    case Access::kControl: return kPermControl;
    case Access::kMetrics: return kPermMetrics;
    case Access::kOpen:
    case Access::kAnyKey: return 0;
  }
  return 0;
}

// Takes one token from `e`'s bucket; false (with the seconds until one is there) when empty.
bool TakeToken(ApiKeys::Entry& e, int* retry_after_seconds) {
  if (e.rate <= 0) return true;
  std::lock_guard<std::mutex> lock(e.mu);
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - e.refilled).count();
  e.tokens = std::min(e.rate, e.tokens + elapsed * e.rate);
  e.refilled = now;
  if (e.tokens >= 1.0) {
    e.tokens -= 1.0;
    return true;
  }
  *retry_after_seconds = std::max(1, static_cast<int>(std::ceil((1.0 - e.tokens) / e.rate)));
  return false;
}

}  // namespace

std::string_view AuthResultName(AuthResult result) {
  switch (result) {
    case AuthResult::kAllowed: return "allowed";
    case AuthResult::kMissing: return "missing";
    case AuthResult::kInvalid: return "invalid";
    case AuthResult::kForbidden: return "forbidden";
    case AuthResult::kRateLimited: return "rate_limited";
  }
  return "unknown";
}

ApiKeys::ApiKeys() = default;
ApiKeys::~ApiKeys() = default;

std::shared_ptr<const ApiKeys::EntryList> ApiKeys::entries() const {
  std::lock_guard<std::mutex> lock(entries_mu_);
  return entries_;
}

size_t ApiKeys::size() const { return entries()->size(); }

Result<std::unique_ptr<ApiKeys>> ApiKeys::Parse(std::string_view text, const std::string& source) {
  std::unique_ptr<ApiKeys> keys(new ApiKeys());
  auto list = std::make_shared<EntryList>();
  int line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    auto entry = std::make_unique<Entry>();
    entry->line = line_number;
    std::string error = ParseLine(fields, entry.get());
    if (!error.empty()) return Status::InvalidArgument(source + " line " + std::to_string(line_number) + ": " + error);
    for (const auto& other : *list) {
      if (other->digest == entry->digest) {
        return Status::InvalidArgument(source + " line " + std::to_string(line_number) + ": the key of line " +
                                       std::to_string(other->line) + " again (each key once)");
      }
    }
    list->push_back(std::move(entry));
  }
  if (list->empty()) return Status::InvalidArgument(source + ": no key (lines 'KEY PERMISSIONS [rate=N/s]')");
  keys->entries_ = std::move(list);
  return keys;
}

Result<std::unique_ptr<ApiKeys>> ApiKeys::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read the API key file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  IL_ASSIGN_OR_RETURN(std::unique_ptr<ApiKeys> keys, Parse(text.str(), path));
  keys->path_ = path;
  return keys;
}

Status ApiKeys::Reload() {
  if (path_.empty()) return Status::FailedPrecondition("these API keys were not read from a file");
  IL_ASSIGN_OR_RETURN(std::unique_ptr<ApiKeys> fresh, Load(path_));
  std::shared_ptr<const EntryList> list = fresh->entries();
  std::lock_guard<std::mutex> lock(entries_mu_);
  entries_ = std::move(list);
  return Status::Ok();
}

AuthVerdict ApiKeys::Check(const std::string* authorization, Access needed) {
  if (needed == Access::kOpen) return {};
  AuthVerdict verdict;
  std::string_view token = authorization != nullptr ? BearerToken(*authorization) : std::string_view();
  if (token.empty()) {
    verdict.result = AuthResult::kMissing;
  } else {
    // Every presented key is hashed and its digest compared with every stored digest by
    // CRYPTO_memcmp, without stopping at a match: the time depends on neither which key matched
    // nor how many leading bytes a wrong key shares with a stored one (comparing digests rather
    // than keys also makes the work independent of the keys' lengths). A digest-keyed map would
    // leak only digest prefixes, useless to an attacker, but with a handful of keys the scan is
    // as fast and simpler to reason about.
    // The match is selected with a mask rather than a branch (at most one digest is equal: the
    // parser refuses duplicate keys).
    Digest presented{};
    const bool hashed = Sha256(token, &presented);
    uintptr_t found = 0;
    const std::shared_ptr<const EntryList> list = entries();  // keeps `match` alive across a Reload
    for (const auto& e : *list) {
      const uintptr_t equal = CRYPTO_memcmp(e->digest.data(), presented.data(), presented.size()) == 0;
      found |= (uintptr_t{0} - equal) & reinterpret_cast<uintptr_t>(e.get());
    }
    Entry* match = hashed ? reinterpret_cast<Entry*>(found) : nullptr;
    if (match == nullptr) {
      verdict.result = AuthResult::kInvalid;
    } else if ((match->permissions & AccessBit(needed)) != AccessBit(needed)) {
      verdict.result = AuthResult::kForbidden;
    } else if (!TakeToken(*match, &verdict.retry_after_seconds)) {
      verdict.result = AuthResult::kRateLimited;
    }
  }
  if (verdict.result != AuthResult::kAllowed && on_refused_) on_refused_(verdict.result);
  return verdict;
}

Access RestAccess(std::string_view target) {
  if (OpenAiHandler::Owns(target)) return Access::kInfer;
  auto parsed = PathSegments(target);
  if (!parsed.ok()) return Access::kAnyKey;  // answered 400 by the handler, to a known client only
  const std::vector<std::string>& seg = *parsed;
  const size_t n = seg.size();
  if (n == 1 && seg[0] == "metrics") return Access::kMetrics;
  if (n == 0 || seg[0] != "v2") return Access::kAnyKey;
  if (n == 3 && seg[1] == "health" && (seg[2] == "live" || seg[2] == "ready")) return Access::kOpen;
  if (n >= 2 && seg[1] == "repository") return Access::kControl;
  if (n >= 3 && seg[1] == "models" && seg[n - 1] == "stats") return Access::kMetrics;
  if (n >= 5 && seg[1] == "models" && seg[n - 2] == "adaptive" && (seg[n - 1] == "pin" || seg[n - 1] == "free")) {
    return Access::kControl;
  }
  return Access::kInfer;
}

Access GrpcAccess(std::string_view method) {
  if (size_t slash = method.rfind('/'); slash != std::string_view::npos) method.remove_prefix(slash + 1);
  struct Row {
    std::string_view method;
    Access access;
  };
  static constexpr Row kTable[] = {
      {"ServerLive", Access::kOpen},           {"ServerReady", Access::kOpen},
      {"ServerMetadata", Access::kInfer},      {"ModelReady", Access::kInfer},
      {"ModelMetadata", Access::kInfer},       {"ModelConfig", Access::kInfer},
      {"ModelInfer", Access::kInfer},          {"ModelStreamInfer", Access::kInfer},
      {"ModelAdaptiveState", Access::kInfer},  {"ModelStatistics", Access::kMetrics},
      {"RepositoryIndex", Access::kControl},   {"RepositoryModelLoad", Access::kControl},
      {"RepositoryModelUnload", Access::kControl}, {"ModelPin", Access::kControl},
      {"ModelFree", Access::kControl},
  };
  for (const Row& r : kTable) {
    if (r.method == method) return r.access;
  }
  return Access::kAnyKey;
}

HttpResponse AuthRefusalResponse(const AuthVerdict& verdict, std::string_view target) {
  HttpResponse r;
  std::string message, code;
  switch (verdict.result) {
    case AuthResult::kMissing:
      r.status = 401;
      message = "an API key is required: send 'Authorization: Bearer <key>'";
      code = "invalid_api_key";
      break;
    case AuthResult::kInvalid:
      r.status = 401;
      message = "the API key is not valid";
      code = "invalid_api_key";
      break;
    case AuthResult::kForbidden:
      r.status = 403;
      message = "the API key does not have the permission this request needs";
      code = "insufficient_permissions";
      break;
    case AuthResult::kRateLimited:
      r.status = 429;
      message = "the API key's rate limit is reached; retry after " + std::to_string(verdict.retry_after_seconds) + " s";
      code = "rate_limit_exceeded";
      r.headers.emplace_back("Retry-After", std::to_string(verdict.retry_after_seconds));
      break;
    case AuthResult::kAllowed: r.status = 500; message = "not refused"; code = "internal";
  }
  if (r.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  r.headers.emplace_back("Content-Type", "application/json");
  if (OpenAiHandler::Owns(target)) {
    const char* type = r.status == 429 ? "requests" : "invalid_request_error";
    r.body = std::string("{\"error\":{\"message\":\"") + message + "\",\"type\":\"" + type + "\",\"param\":null,\"code\":\"" +
             code + "\"}}";
  } else {
    r.body = "{\"error\":\"" + message + "\"}";
  }
  return r;
}

HttpHandler WithApiKeys(ApiKeys* keys, HttpHandler inner) {
  if (keys == nullptr) return inner;
  return [keys, inner = std::move(inner)](HttpRequest request, HttpResponder respond) {
    AuthVerdict v = keys->Check(FindHttpHeader(request.headers, "authorization"), RestAccess(request.target));
    if (v.result != AuthResult::kAllowed) return respond(AuthRefusalResponse(v, request.target));
    inner(std::move(request), std::move(respond));
  };
}

bool AuthorizeGrpc(ApiKeys* keys, grpc::ServerContextBase& ctx, std::string_view method, grpc::Status* refusal) {
  if (keys == nullptr) return true;
  const Access needed = GrpcAccess(method);
  if (needed == Access::kOpen) return true;
  std::string value;
  const std::string* authorization = nullptr;
  const auto& metadata = ctx.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    value.assign(it->second.data(), it->second.size());
    authorization = &value;
  }
  AuthVerdict v = keys->Check(authorization, needed);
  switch (v.result) {
    case AuthResult::kAllowed: return true;
    case AuthResult::kMissing:
      *refusal = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "an API key is required: send the metadata 'authorization: Bearer <key>'");
      break;
    case AuthResult::kInvalid: *refusal = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the API key is not valid"); break;
    case AuthResult::kForbidden:
      *refusal = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "the API key does not have the permission this call needs");
      break;
    case AuthResult::kRateLimited:
      ctx.AddTrailingMetadata("retry-after", std::to_string(v.retry_after_seconds));
      *refusal = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "the API key's rate limit is reached");
      break;
  }
  return false;
}

}  // namespace inferloop::frontends
