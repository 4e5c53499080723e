#include "serve/cached_model_version.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>

#include "base/file_bytes.h"
#include "base/status_macros.h"
#include "serve/version_statistics.h"

namespace inferloop::serve {
namespace fs = std::filesystem;
using std::chrono::nanoseconds;

namespace {

// Feeds one length-prefixed field, so that no two different file lists hash alike.
void HashField(XXH3_state_t* state, const void* data, size_t n) {
  const uint64_t len = n;
  XXH3_128bits_update(state, &len, sizeof(len));
  XXH3_128bits_update(state, data, n);
}

void HashInt(XXH3_state_t* state, int64_t v) { HashField(state, &v, sizeof(v)); }

}  // namespace

Result<std::string> VersionFingerprint(const std::string& config_path, const std::string& version_dir) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (state == nullptr) return Status::Internal("out of memory for the version fingerprint");
  XXH3_128bits_reset(state.get());
  std::string config;
  std::error_code ec;
  if (!config_path.empty() && fs::is_regular_file(config_path, ec)) {
    IL_ASSIGN_OR_RETURN(config, ReadFileBytes(config_path));
  }
  HashField(state.get(), config.data(), config.size());
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator it(version_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), version_dir, ec).generic_string());
  }
  if (ec) return Status::NotFound("version folder '" + version_dir + "' cannot be listed: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    struct stat st {};
    if (::stat((version_dir + "/" + f).c_str(), &st) != 0) continue;  // gone since listed
    HashField(state.get(), f.data(), f.size());
    HashInt(state.get(), static_cast<int64_t>(st.st_size));
    HashInt(state.get(), static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state.get());
  return ToHex(ResponseCacheKey{h.high64, h.low64});
}

struct CachedModelVersion::Waiter {
  InferRequest request;
  RequestContext context;
  InferCallback done;
  AdmissionTicket ticket;
  nanoseconds lookup{0};
};

// One request being computed, and the identical ones waiting for it.
struct CachedModelVersion::Flight {
  InferCallback done;  // the computing request's own
  nanoseconds lookup{0};
  std::vector<Waiter> waiters;
};

CachedModelVersion::CachedModelVersion(std::shared_ptr<ModelVersion> inner, std::shared_ptr<ResponseCache> cache,
                                       std::string fingerprint, std::shared_ptr<VersionMetricsSink> metrics)
    : inner_(std::move(inner)), cache_(std::move(cache)), fingerprint_(std::move(fingerprint)),
      metrics_(std::move(metrics)) {}

CachedModelVersion::~CachedModelVersion() = default;

bool CachedModelVersion::Admit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return false;
  ++outstanding_;
  return true;
}

void CachedModelVersion::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--outstanding_ == 0) idle_cv_.notify_all();
}

bool CachedModelVersion::Infer(InferRequest&& request, RequestContext&& context, InferCallback&& done,
                               AdmissionTicket&& server_ticket) {
  if (!Admit()) return false;
  const auto t0 = Clock::now();
  const ResponseCacheKey key = MakeResponseCacheKey(name(), version(), fingerprint_, request);
  std::shared_ptr<const CachedResponse> hit = cache_->Lookup(key);
  const nanoseconds lookup = Clock::now() - t0;
  if (hit != nullptr) {
    server_ticket.Release();  // before the answer, as a computed request's (ModelVersion::Infer)
    AnswerFromCache(request, context, hit->outputs, lookup, done);
    Release();
    return true;
  }
  auto flight = std::make_shared<Flight>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    if (it != flights_.end()) {  // an identical request is computing: wait for its answer
      it->second->waiters.push_back(
          Waiter{std::move(request), std::move(context), std::move(done), std::move(server_ticket), lookup});
      return true;
    }
    flight->done = std::move(done);
    flight->lookup = lookup;
    flights_.emplace(key, flight);
  }
  auto self = std::static_pointer_cast<CachedModelVersion>(shared_from_this());
  InferCallback land = [self, key, flight](Result<InferResponse> r) { self->Land(key, flight, std::move(r)); };
  if (inner_->Infer(std::move(request), std::move(context), std::move(land), std::move(server_ticket))) return true;
  // The wrapped version is draining (a reload raced with this request): nothing was consumed;
  // hand the request back, and answer whoever joined it in the meantime.
  std::vector<Waiter> joined;
  {
    std::lock_guard<std::mutex> lock(mu_);
    flights_.erase(key);
    joined = std::move(flight->waiters);
    done = std::move(flight->done);
  }
  for (auto& w : joined) {
    w.done(Status::Unavailable("model '" + name() + "' version " + std::to_string(version()) +
                               " is being replaced or unloaded; retry"));
    Release();
  }
  Release();
  return false;
}

void CachedModelVersion::AnswerFromCache(const InferRequest& request, const RequestContext& context,
                                         const std::vector<InferOutput>& outputs, nanoseconds lookup,
                                         const InferCallback& done) {
  const auto t0 = Clock::now();
  InferResponse response;
  response.model_name = name();
  response.model_version = std::to_string(version());
  response.id = request.id;
  response.outputs = outputs;  // tensors share the stored buffers, which nobody writes
  const auto now = Clock::now();
  const nanoseconds hit_time = lookup + (now - t0);
  const nanoseconds total = now - context.received;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddDuration(cache_hit_, hit_time);
    AddDuration(hit_success_, total);
    last_hit_ms_ = NowEpochMs();
  }
  if (metrics_) metrics_->OnCacheHit(hit_time, total);
  done(std::move(response));
}

nanoseconds CachedModelVersion::InsertTimed(const ResponseCacheKey& key, const InferResponse& response) {
  const auto t0 = Clock::now();
  cache_->Insert(key, response.outputs);
  return Clock::now() - t0;
}

void CachedModelVersion::RecordMiss(nanoseconds lookup_and_insert) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddDuration(cache_miss_, lookup_and_insert);
  }
  if (metrics_) metrics_->OnCacheMiss(lookup_and_insert);
}

void CachedModelVersion::Land(const ResponseCacheKey& key, const std::shared_ptr<Flight>& flight,
                              Result<InferResponse> result) {
  // Inserted before the flight ends, so a request arriving in between finds one or the other.
  const nanoseconds insert = result.ok() ? InsertTimed(key, result.value()) : nanoseconds{0};
  RecordMiss(flight->lookup + insert);
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    if (it != flights_.end() && it->second == flight) flights_.erase(it);
    waiters = std::move(flight->waiters);
  }
  const bool ok = result.ok();
  if (ok) {
    for (auto& w : waiters) {
      w.ticket.Release();
      AnswerFromCache(w.request, w.context, result.value().outputs, w.lookup, w.done);
      Release();
    }
  }
  InferCallback done = std::move(flight->done);
  done(std::move(result));
  Release();
  if (!ok) {
    for (auto& w : waiters) ComputeAlone(key, std::move(w));
  }
}

void CachedModelVersion::ComputeAlone(const ResponseCacheKey& key, Waiter w) {
  auto self = std::static_pointer_cast<CachedModelVersion>(shared_from_this());
  auto done = std::make_shared<InferCallback>(std::move(w.done));
  const nanoseconds lookup = w.lookup;
  InferCallback answer = [self, key, done, lookup](Result<InferResponse> r) {
    const nanoseconds insert = r.ok() ? self->InsertTimed(key, r.value()) : nanoseconds{0};
    self->RecordMiss(lookup + insert);
    (*done)(std::move(r));
    self->Release();
  };
  if (inner_->Infer(std::move(w.request), std::move(w.context), std::move(answer), std::move(w.ticket))) return;
  (*done)(Status::Unavailable("model '" + name() + "' version " + std::to_string(version()) +
                              " is being replaced or unloaded; retry"));
  Release();
}

void CachedModelVersion::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  inner_->Drain();
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return outstanding_ == 0; });
}

ModelStatistics CachedModelVersion::Statistics() const {
  ModelStatistics s = inner_->Statistics();
  std::lock_guard<std::mutex> lock(mu_);
  s.success.count += hit_success_.count;
  s.success.ns += hit_success_.ns;
  s.cache_hit = cache_hit_;
  s.cache_miss = cache_miss_;
  s.last_inference_ms = std::max(s.last_inference_ms, last_hit_ms_);
  return s;
}

std::vector<std::pair<std::string, std::string>> CachedModelVersion::LoadDetails() const {
  auto details = inner_->LoadDetails();
  details.emplace_back("response_cache", "on");
  return details;
}

}  // namespace inferloop::serve
