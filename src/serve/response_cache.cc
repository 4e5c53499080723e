#include "serve/response_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "base/status_macros.h"
#include "serve/response_cache_disk.h"

namespace inferloop::serve {
namespace {

int64_t NanosSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

// Feeds the canonical encoding of a request into an XXH3-128 state: fixed-width integers and
// length-prefixed byte strings only, so the stream parses back one way.
class KeyHasher {
 public:
  KeyHasher() : state_(XXH3_createState()) { XXH3_128bits_reset(state_); }
  ~KeyHasher() { XXH3_freeState(state_); }
  KeyHasher(const KeyHasher&) = delete;
  KeyHasher& operator=(const KeyHasher&) = delete;

  void U64(uint64_t v) { XXH3_128bits_update(state_, &v, sizeof v); }
  void Bytes(const void* p, size_t n) {
    U64(n);
    if (n != 0) XXH3_128bits_update(state_, p, n);
  }
  void Str(std::string_view s) { Bytes(s.data(), s.size()); }

  // The parameters not named in `skip`: their count, then name, type and value of each.
  void Parameters(const InferParameters& params, std::initializer_list<std::string_view> skip) {
    auto kept = [&](const std::string& name) { return std::find(skip.begin(), skip.end(), name) == skip.end(); };
    U64(static_cast<uint64_t>(std::count_if(params.begin(), params.end(), [&](const auto& p) { return kept(p.first); })));
    for (const auto& [name, value] : params) {
      if (!kept(name)) continue;
      Str(name);
      U64(value.index());
      std::visit([this](const auto& v) { Value(v); }, value);
    }
  }
  void Tensor(const inferloop::Tensor& t) {
    U64(static_cast<uint64_t>(t.dtype()));
    U64(t.shape().size());
    for (int64_t d : t.shape()) U64(static_cast<uint64_t>(d));
    if (t.dtype() == DataType::kString) {
      for (int64_t i = 0; i < t.size(); ++i) Str(t.strings()[i]);
    } else {
      Bytes(t.raw_data(), t.nbytes());
    }
  }
  ResponseCacheKey Digest() const {
    XXH128_hash_t h = XXH3_128bits_digest(state_);
    return ResponseCacheKey{h.high64, h.low64};
  }

 private:
  void Value(bool v) { U64(v ? 1 : 0); }
  void Value(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Value(uint64_t v) { U64(v); }
  void Value(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    U64(bits);
  }
  void Value(const std::string& v) { Str(v); }

  XXH3_state_t* state_;
};

// Pointers to `items` (inputs, requested outputs) in name order.
template <typename T>
std::vector<const T*> SortedByName(const std::vector<T>& items) {
  std::vector<const T*> sorted;
  for (const T& item : items) sorted.push_back(&item);
  std::sort(sorted.begin(), sorted.end(), [](const T* a, const T* b) { return a->name < b->name; });
  return sorted;
}

int64_t ParametersBytes(const InferParameters& params) {
  int64_t n = 0;
  for (const auto& [name, value] : params) {
    n += static_cast<int64_t>(name.size()) + 16;
    if (const auto* s = std::get_if<std::string>(&value)) n += static_cast<int64_t>(s->size());
  }
  return n;
}

}  // namespace

std::string ToHex(const ResponseCacheKey& k) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(k.hi >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(k.lo >> (4 * i)) & 0xf];
  }
  return out;
}

ResponseCacheKey MakeResponseCacheKey(const std::string& model, int64_t version, const std::string& fingerprint,
                                      const InferRequest& request) {
  KeyHasher h;
  h.Str("inferloop.response_cache.key.v1");
  h.Str(model);
  h.U64(static_cast<uint64_t>(version));
  h.Str(fingerprint);

  const auto inputs = SortedByName(request.inputs);
  h.U64(inputs.size());
  for (const InferInput* in : inputs) {
    h.Str(in->name);
    h.Tensor(in->tensor);
    h.Parameters(in->parameters, {kBinaryDataSizeParam});
  }

  const auto outputs = SortedByName(request.outputs);
  h.U64(outputs.size());
  for (const RequestedOutput* out : outputs) {
    h.Str(out->name);
    h.Parameters(out->parameters, {kBinaryDataParam});
  }

  const auto& ignored = kResponseCacheIgnoredParameters;
  h.Parameters(request.parameters, {ignored[0], ignored[1], ignored[2]});
  return h.Digest();
}

int64_t CachedResponseBytes(const std::vector<InferOutput>& outputs) {
  int64_t n = 64;
  for (const auto& out : outputs) {
    n += 64 + static_cast<int64_t>(out.name.size()) + ParametersBytes(out.parameters);
    const Tensor& t = out.tensor;
    if (t.dtype() == DataType::kString) {
      for (int64_t i = 0; i < t.size(); ++i) n += 32 + static_cast<int64_t>(t.strings()[i].size());
    } else {
      n += static_cast<int64_t>(t.nbytes());
    }
  }
  return n;
}

ResponseCache::ResponseCache(ResponseCacheOptions options) : options_(std::move(options)) {
  stats_.memory.budget_bytes = options_.memory_bytes;
}

ResponseCache::~ResponseCache() = default;  // disk_'s destructor drains its queue

Result<std::unique_ptr<ResponseCache>> ResponseCache::Create(ResponseCacheOptions options) {
  if (options.memory_bytes < 0)
    return Status::InvalidArgument("response cache: memory size must not be negative, got " +
                                   std::to_string(options.memory_bytes));
  if (options.disk_bytes < 0)
    return Status::InvalidArgument("response cache: disk size must not be negative, got " +
                                   std::to_string(options.disk_bytes));
  if (!options.disk_dir.empty() && options.disk_bytes == 0)
    return Status::InvalidArgument("response cache: directory '" + options.disk_dir +
                                   "' given with a disk size of 0 (give a size, or no directory)");
  std::unique_ptr<ResponseCache> cache(new ResponseCache(options));
  if (!options.disk_dir.empty()) {
    IL_ASSIGN_OR_RETURN(cache->disk_, ResponseCacheDisk::Create(ResponseCacheDisk::Options{
                                          options.disk_dir, options.disk_bytes, options.log}));
  }
  return cache;
}

void ResponseCache::InsertMemory(const ResponseCacheKey& key, std::shared_ptr<const CachedResponse> entry,
                                 bool count_insert) {
  if (options_.memory_bytes <= 0) return;
  std::vector<MemoryTier::Evicted> evicted;  // released after the lock: the last reference frees
  std::lock_guard<std::mutex> lock(mu_);
  if (entry->bytes > options_.memory_bytes) {
    if (count_insert) ++stats_.too_large;
    return;
  }
  const int64_t bytes = entry->bytes;
  memory_.Put(key, std::move(entry), bytes);
  if (count_insert) ++stats_.memory.inserts;
  evicted = memory_.EvictTo(options_.memory_bytes);
  stats_.memory.evictions += static_cast<int64_t>(evicted.size());
}

std::shared_ptr<const CachedResponse> ResponseCache::Lookup(const ResponseCacheKey& key) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.lookups;
    if (auto* hit = memory_.Touch(key)) {
      ++stats_.hits;
      ++stats_.memory.hits;
      stats_.lookup_ns += NanosSince(t0);
      return *hit;
    }
  }
  std::shared_ptr<const CachedResponse> found;
  if (disk_) {
    if (auto outputs = disk_->Read(key)) {
      auto entry = std::make_shared<CachedResponse>();
      entry->bytes = CachedResponseBytes(*outputs);
      entry->outputs = std::move(*outputs);
      found = std::move(entry);
      InsertMemory(key, found, /*count_insert=*/false);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++(found ? stats_.hits : stats_.misses);
  stats_.lookup_ns += NanosSince(t0);
  return found;
}

void ResponseCache::Insert(const ResponseCacheKey& key, std::vector<InferOutput> outputs) {
  const auto t0 = std::chrono::steady_clock::now();
  auto entry = std::make_shared<CachedResponse>();
  entry->bytes = CachedResponseBytes(outputs);
  entry->outputs = std::move(outputs);
  std::shared_ptr<const CachedResponse> shared = std::move(entry);
  InsertMemory(key, shared, /*count_insert=*/true);
  if (disk_) disk_->Enqueue(key, std::move(shared));
  std::lock_guard<std::mutex> lock(mu_);
  stats_.insert_ns += NanosSince(t0);
}

ResponseCacheStats ResponseCache::Stats() const {
  ResponseCacheStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = stats_;
    s.memory.bytes = memory_.bytes();
    s.memory.entries = memory_.entries();
  }
  if (disk_) disk_->AddStats(&s);
  return s;
}

void ResponseCache::FlushForTesting() {
  if (disk_) disk_->Flush();
}

}  // namespace inferloop::serve
