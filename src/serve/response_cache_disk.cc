#include "serve/response_cache_disk.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <thread>

#include "base/file_bytes.h"
#include "base/status_macros.h"
#include "serve/event_log.h"

namespace inferloop::serve {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kMagic[4] = {'I', 'L', 'R', 'C'};
constexpr uint32_t kMaxRank = 64;
constexpr int kFailuresBeforeBackoff = 3;
constexpr std::chrono::seconds kFirstBackoff{10}, kMaxBackoff{300};

// Appends little-endian integers and length-prefixed bytes.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
  }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>* out_;
};

// Reads what Writer wrote; every read checks the bytes are there (false: not).
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  size_t left() const { return in_.size() - pos_; }
  bool U8(uint8_t* v) {
    uint64_t x;
    if (!Le(&x, 1)) return false;
    *v = static_cast<uint8_t>(x);
    return true;
  }
  bool U32(uint32_t* v) {
    uint64_t x;
    if (!Le(&x, 4)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool U64(uint64_t* v) { return Le(v, 8); }
  const uint8_t* Take(size_t n) {
    if (n > left()) return nullptr;
    const uint8_t* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  bool Str(std::string* s) {
    uint32_t n;
    if (!U32(&n)) return false;
    const uint8_t* p = Take(n);
    if (p == nullptr) return false;
    s->assign(reinterpret_cast<const char*>(p), n);
    return true;
  }

 private:
  bool Le(uint64_t* v, int n) {
    const uint8_t* p = Take(static_cast<size_t>(n));
    if (p == nullptr) return false;
    *v = 0;
    for (int i = 0; i < n; ++i) *v |= uint64_t{p[i]} << (8 * i);
    return true;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

void EncodeParameters(const InferParameters& params, Writer* w) {
  w->U32(static_cast<uint32_t>(params.size()));
  for (const auto& [name, value] : params) {
    w->Str(name);
    w->U8(static_cast<uint8_t>(value.index()));
    if (const bool* b = std::get_if<bool>(&value)) w->U8(*b ? 1 : 0);
    if (const int64_t* i = std::get_if<int64_t>(&value)) w->U64(static_cast<uint64_t>(*i));
    if (const uint64_t* u = std::get_if<uint64_t>(&value)) w->U64(*u);
    if (const double* d = std::get_if<double>(&value)) {
      uint64_t bits;
      std::memcpy(&bits, d, sizeof bits);
      w->U64(bits);
    }
    if (const std::string* s = std::get_if<std::string>(&value)) w->Str(*s);
  }
}

Status Bad(const std::string& what) { return Status::InvalidArgument("response cache entry: " + what); }

Result<InferParameters> DecodeParameters(Reader* r) {
  uint32_t count;
  if (!r->U32(&count)) return Bad("truncated parameter count");
  InferParameters params;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name;
    uint8_t tag;
    if (!r->Str(&name) || !r->U8(&tag)) return Bad("truncated parameter");
    uint64_t x = 0;
    InferParameter value;
    switch (tag) {
      case 0: {
        uint8_t b;
        if (!r->U8(&b) || b > 1) return Bad("bad bool parameter '" + name + "'");
        value = b == 1;
        break;
      }
      case 1: case 2: case 3:
        if (!r->U64(&x)) return Bad("truncated parameter '" + name + "'");
        if (tag == 1) value = static_cast<int64_t>(x);
        if (tag == 2) value = x;
        if (tag == 3) {
          double d;
          std::memcpy(&d, &x, sizeof d);
          value = d;
        }
        break;
      case 4: {
        std::string s;
        if (!r->Str(&s)) return Bad("truncated parameter '" + name + "'");
        value = std::move(s);
        break;
      }
      default:
        return Bad("parameter '" + name + "' has unknown type " + std::to_string(tag));
    }
    // In name order, each once (as written from an InferParameters map): one encoding per content.
    if (!params.empty() && !(params.rbegin()->first < name)) return Bad("parameters out of order");
    params.emplace_hint(params.end(), std::move(name), std::move(value));
  }
  return params;
}

Status DecodeShape(Reader* r, const std::string& name, DataType* dtype, Shape* shape) {
  uint32_t dtype_bits, rank;
  if (!r->U32(&dtype_bits) || !r->U32(&rank)) return Bad("truncated output '" + name + "'");
  const auto dtype_num = static_cast<int32_t>(dtype_bits);
  if (!IsKnownDataType(dtype_num) || dtype_num == 0) return Bad("unknown dtype " + std::to_string(dtype_num));
  *dtype = static_cast<DataType>(dtype_num);
  if (rank > kMaxRank) return Bad("rank " + std::to_string(rank) + " over " + std::to_string(kMaxRank));
  for (uint32_t i = 0; i < rank; ++i) {
    uint64_t d;
    if (!r->U64(&d)) return Bad("truncated shape of '" + name + "'");
    if (static_cast<int64_t>(d) < 0) return Bad("negative dimension in '" + name + "'");
    shape->push_back(static_cast<int64_t>(d));
  }
  if (ShapeElementCount(*shape) < 0) return Bad("element count of " + ShapeToString(*shape) + " overflows");
  return Status::Ok();
}

Result<Tensor> DecodeData(Reader* r, const std::string& name, DataType dtype, Shape shape) {
  const auto count = static_cast<uint64_t>(ShapeElementCount(shape));
  if (dtype == DataType::kString) {
    if (count > r->left() / 4) return Bad("truncated strings of '" + name + "'");
    std::vector<std::string> values(static_cast<size_t>(count));
    for (auto& v : values)
      if (!r->Str(&v)) return Bad("truncated strings of '" + name + "'");
    return Tensor::FromStrings(std::move(shape), std::move(values));
  }
  uint64_t nbytes;
  if (!r->U64(&nbytes)) return Bad("truncated data of '" + name + "'");
  const uint64_t elem = DataTypeSize(dtype);
  if (elem == 0) return Bad("dtype " + std::string(DataTypeName(dtype)) + " has no fixed size");
  if (count > r->left() / elem || nbytes != count * elem)
    return Bad("data of '" + name + "' does not match " + ShapeToString(shape));
  const uint8_t* data = r->Take(nbytes);
  if (data == nullptr) return Bad("truncated data of '" + name + "'");
  return Tensor::FromBytes(dtype, std::move(shape), data, nbytes);
}

struct Header {
  ResponseCacheKey key;
  uint64_t payload_bytes = 0, checksum = 0;
};

// The header's fields, checked for magic and version only.
Result<Header> DecodeHeader(std::span<const uint8_t> file) {
  if (file.size() < kResponseCacheHeaderBytes) return Bad("shorter than its header");
  if (std::memcmp(file.data(), kMagic, 4) != 0) return Bad("bad magic (not an .ilrc file)");
  Reader r(file.subspan(4, kResponseCacheHeaderBytes - 4));
  uint32_t version;
  Header h;
  (void)(r.U32(&version) && r.U64(&h.key.hi) && r.U64(&h.key.lo) && r.U64(&h.payload_bytes) && r.U64(&h.checksum));
  if (version != kResponseCacheFormatVersion)
    return Bad("format version " + std::to_string(version) + " (this build reads " +
               std::to_string(kResponseCacheFormatVersion) + ")");
  return h;
}

// 32 lower-case hex digits -> key; nullopt for anything else.
std::optional<ResponseCacheKey> KeyFromHex(const std::string& hex) {
  if (hex.size() != 32) return std::nullopt;
  ResponseCacheKey k;
  for (size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return std::nullopt;
    uint64_t& half = i < 16 ? k.hi : k.lo;
    half = (half << 4) | static_cast<uint64_t>(v);
  }
  return k;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes `bytes` to a new file at `path`; errno's message on failure (the file may be left).
std::optional<std::string> WriteWholeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::string(std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return std::string(std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return std::string(std::strerror(errno));
  return std::nullopt;
}

}  // namespace

std::vector<uint8_t> EncodeCachedResponse(const ResponseCacheKey& key, const std::vector<InferOutput>& outputs) {
  std::vector<uint8_t> file(kResponseCacheHeaderBytes);
  Writer w(&file);
  w.U32(static_cast<uint32_t>(outputs.size()));
  for (const auto& out : outputs) {
    const Tensor& t = out.tensor;
    w.Str(out.name);
    w.U32(static_cast<uint32_t>(t.dtype()));
    w.U32(static_cast<uint32_t>(t.rank()));
    for (int64_t d : t.shape()) w.U64(static_cast<uint64_t>(d));
    EncodeParameters(out.parameters, &w);
    if (t.dtype() == DataType::kString) {
      for (int64_t i = 0; i < t.size(); ++i) w.Str(t.strings()[i]);
    } else {
      w.U64(t.nbytes());
      w.Raw(t.raw_data(), t.nbytes());
    }
  }
  const size_t payload = file.size() - kResponseCacheHeaderBytes;
  std::vector<uint8_t> header;
  Writer h(&header);
  h.Raw(kMagic, 4);
  h.U32(kResponseCacheFormatVersion);
  h.U64(key.hi);
  h.U64(key.lo);
  h.U64(payload);
  h.U64(XXH3_64bits(file.data() + kResponseCacheHeaderBytes, payload));
  std::copy(header.begin(), header.end(), file.begin());
  return file;
}

Result<std::vector<InferOutput>> DecodeCachedResponse(std::span<const uint8_t> file, const ResponseCacheKey& key) {
  IL_ASSIGN_OR_RETURN(Header h, DecodeHeader(file));
  if (!(h.key == key)) return Bad("stored under key " + ToHex(h.key) + ", not " + ToHex(key));
  const auto payload = file.subspan(kResponseCacheHeaderBytes);
  if (h.payload_bytes != payload.size())
    return Bad("payload of " + std::to_string(payload.size()) + " bytes, header says " +
               std::to_string(h.payload_bytes));
  if (XXH3_64bits(payload.data(), payload.size()) != h.checksum) return Bad("checksum mismatch");
  Reader r(payload);
  uint32_t count;
  if (!r.U32(&count)) return Bad("truncated output count");
  std::vector<InferOutput> outputs;
  for (uint32_t i = 0; i < count; ++i) {
    InferOutput out;
    DataType dtype = DataType::kUndefined;
    Shape shape;
    if (!r.Str(&out.name)) return Bad("truncated output name");
    IL_RETURN_IF_ERROR(DecodeShape(&r, out.name, &dtype, &shape));
    IL_ASSIGN_OR_RETURN(out.parameters, DecodeParameters(&r));
    IL_ASSIGN_OR_RETURN(out.tensor, DecodeData(&r, out.name, dtype, std::move(shape)));
    outputs.push_back(std::move(out));
  }
  if (r.left() != 0) return Bad(std::to_string(r.left()) + " bytes after the last output");
  return outputs;
}

// --- the disk tier ---

struct Empty {};

struct ResponseCacheDisk::State {
  EventLog stderr_log{stderr};
  EventLog* log = nullptr;

  std::mutex mu;  // guards everything below; held for index changes and renames, never a read
  ByteLru<ResponseCacheKey, Empty, ResponseCacheKeyHash> index;
  std::deque<std::pair<ResponseCacheKey, std::shared_ptr<const CachedResponse>>> queue;
  int64_t queued_bytes = 0;
  bool writing = false, stopping = false;
  std::condition_variable work, idle;

  int consecutive_failures = 0;
  std::chrono::seconds next_backoff = kFirstBackoff;
  Clock::time_point backoff_until{};
  bool failure_logged = false;

  int64_t hits = 0, inserts = 0, evictions = 0, corrupt = 0, write_failures = 0, skipped = 0, too_large = 0;
  std::thread writer;
};

ResponseCacheDisk::ResponseCacheDisk(Options options) : options_(std::move(options)), state_(std::make_unique<State>()) {
  state_->log = options_.log != nullptr ? options_.log : &state_->stderr_log;
}

ResponseCacheDisk::~ResponseCacheDisk() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->work.notify_all();
  if (state_->writer.joinable()) state_->writer.join();
}

std::string ResponseCacheDisk::PathOf(const ResponseCacheKey& key, const char* suffix) const {
  return options_.dir + "/" + ToHex(key) + suffix;
}

namespace {

// Checks `dir` exists (creating it) and takes a file.
Status PrepareDirectory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::InvalidArgument("response cache: cannot create directory '" + dir + "': " + ec.message());
  if (!fs::is_directory(dir, ec))
    return Status::InvalidArgument("response cache: '" + dir + "' is not a directory");
  const std::string probe = dir + "/.ilrc-probe-" + std::to_string(::getpid());
  if (auto err = WriteWholeFile(probe, std::vector<uint8_t>(1, 0))) {
    ::unlink(probe.c_str());
    return Status::InvalidArgument("response cache: directory '" + dir + "' is not writable: " + *err);
  }
  ::unlink(probe.c_str());
  return Status::Ok();
}

struct ScannedEntry {
  ResponseCacheKey key;
  int64_t bytes;
  fs::file_time_type mtime;
};

// Whether the file at `path` starts with a valid header for `key` and has the length it says.
bool HeaderMatches(const std::string& path, const ResponseCacheKey& key, uint64_t file_size) {
  std::vector<uint8_t> head(kResponseCacheHeaderBytes);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(head.size())) return false;
  auto h = DecodeHeader(head);
  return h.ok() && h->key == key && h->payload_bytes + kResponseCacheHeaderBytes == file_size;
}

}  // namespace

Result<std::unique_ptr<ResponseCacheDisk>> ResponseCacheDisk::Create(Options options) {
  if (options.budget_bytes <= 0)
    return Status::InvalidArgument("response cache: disk size must be positive, got " +
                                   std::to_string(options.budget_bytes));
  IL_RETURN_IF_ERROR(PrepareDirectory(options.dir));
  std::unique_ptr<ResponseCacheDisk> disk(new ResponseCacheDisk(std::move(options)));
  State& st = *disk->state_;
  const std::string& dir = disk->options_.dir;

  // Index what is there: ours (<32 hex>.ilrc) with a good header; ours but damaged or left
  // half-written (.ilrc.tmp) deleted; anything else left alone.
  std::vector<ScannedEntry> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    const bool temp = EndsWith(name, kResponseCacheTempSuffix);
    const std::string suffix = temp ? kResponseCacheTempSuffix : kResponseCacheFileSuffix;
    if (!EndsWith(name, suffix)) continue;
    const auto key = KeyFromHex(name.substr(0, name.size() - suffix.size()));
    if (!key) continue;
    const uint64_t size = it->file_size(fec);
    if (!temp && !fec && HeaderMatches(it->path().string(), *key, size)) {
      found.push_back(ScannedEntry{*key, static_cast<int64_t>(size), it->last_write_time(fec)});
      continue;
    }
    if (!temp) ++st.corrupt;
    fs::remove(it->path(), fec);
  }
  if (ec) return Status::InvalidArgument("response cache: cannot list directory '" + dir + "': " + ec.message());
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.mtime < b.mtime; });
  for (const auto& e : found) st.index.Put(e.key, Empty{}, e.bytes);  // the newest ends up first
  for (const auto& e : st.index.EvictTo(disk->options_.budget_bytes)) {
    ::unlink(disk->PathOf(e.key, kResponseCacheFileSuffix).c_str());
    ++st.evictions;
  }
  disk->state_->writer = std::thread([d = disk.get()] { d->WriterLoop(); });
  return disk;
}

std::optional<std::vector<InferOutput>> ResponseCacheDisk::Read(const ResponseCacheKey& key) {
  State& st = *state_;
  const std::string path = PathOf(key, kResponseCacheFileSuffix);
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.index.Touch(key) == nullptr) return std::nullopt;
  }
  auto bytes = ReadFileBytes(path);
  if (!bytes.ok()) {
    // Evicted (or removed by hand) since the index was looked at: forget it unless the writer
    // has put a new file there meanwhile.
    std::lock_guard<std::mutex> lock(st.mu);
    std::error_code ec;
    if (!fs::exists(path, ec)) st.index.Erase(key);
    return std::nullopt;
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes->data());
  auto outputs = DecodeCachedResponse(std::span<const uint8_t>(data, bytes->size()), key);
  std::lock_guard<std::mutex> lock(st.mu);
  if (!outputs.ok()) {
    ++st.corrupt;
    st.index.Erase(key);
    ::unlink(path.c_str());
    st.log->Warn("response_cache_entry_dropped", {{"file", path}, {"error", outputs.status().message()}});
    return std::nullopt;
  }
  ++st.hits;
  return std::move(outputs).value();
}

void ResponseCacheDisk::Enqueue(const ResponseCacheKey& key, std::shared_ptr<const CachedResponse> entry) {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.index.Contains(key)) return;
    if (Clock::now() < st.backoff_until || st.queue.size() >= options_.max_queue_entries ||
        st.queued_bytes + entry->bytes > options_.max_queue_bytes) {
      ++st.skipped;
      return;
    }
    st.queued_bytes += entry->bytes;
    st.queue.emplace_back(key, std::move(entry));
  }
  st.work.notify_one();
}

void ResponseCacheDisk::WriterLoop() {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  while (true) {
    st.work.wait(lock, [&] { return st.stopping || !st.queue.empty(); });
    if (st.queue.empty()) return;  // stopping, and every queued write done
    auto [key, entry] = std::move(st.queue.front());
    st.queue.pop_front();
    st.queued_bytes -= entry->bytes;
    st.writing = true;
    lock.unlock();
    WriteOne(key, *entry);
    entry.reset();
    lock.lock();
    st.writing = false;
    if (st.queue.empty()) st.idle.notify_all();
  }
}

void ResponseCacheDisk::WriteOne(const ResponseCacheKey& key, const CachedResponse& entry) {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.index.Contains(key)) return;
    if (Clock::now() < st.backoff_until) {
      ++st.skipped;
      return;
    }
  }
  const std::vector<uint8_t> file = EncodeCachedResponse(key, entry.outputs);
  const auto size = static_cast<int64_t>(file.size());
  if (size > options_.budget_bytes) {
    std::lock_guard<std::mutex> lock(st.mu);
    ++st.too_large;
    return;
  }
  const std::string temp = PathOf(key, kResponseCacheTempSuffix), final_path = PathOf(key, kResponseCacheFileSuffix);
  std::optional<std::string> error = WriteWholeFile(temp, file);
  std::vector<decltype(st.index)::Evicted> evicted;
  std::unique_lock<std::mutex> lock(st.mu);
  if (!error && ::rename(temp.c_str(), final_path.c_str()) != 0) error = std::strerror(errno);
  if (error) {
    ::unlink(temp.c_str());
    ++st.write_failures;
    if (!st.failure_logged) {
      st.failure_logged = true;
      st.log->Warn("response_cache_write_failed", {{"file", final_path}, {"error", *error}});
    }
    if (++st.consecutive_failures >= kFailuresBeforeBackoff) {
      st.backoff_until = Clock::now() + st.next_backoff;
      st.log->Warn("response_cache_disk_backoff", {{"dir", options_.dir},
                                                   {"seconds", std::to_string(st.next_backoff.count())},
                                                   {"error", *error}});
      st.next_backoff = std::min(st.next_backoff * 2, kMaxBackoff);
    }
    return;
  }
  st.consecutive_failures = 0;
  st.next_backoff = kFirstBackoff;
  st.index.Put(key, Empty{}, size);
  ++st.inserts;
  evicted = st.index.EvictTo(options_.budget_bytes);
  st.evictions += static_cast<int64_t>(evicted.size());
  lock.unlock();
  // Only this thread writes files, so an evicted key cannot be rewritten before its unlink.
  for (const auto& e : evicted) ::unlink(PathOf(e.key, kResponseCacheFileSuffix).c_str());
}

void ResponseCacheDisk::Flush() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->idle.wait(lock, [&] { return state_->queue.empty() && !state_->writing; });
}

void ResponseCacheDisk::AddStats(ResponseCacheStats* s) const {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mu);
  s->disk.hits = st.hits;
  s->disk.inserts = st.inserts;
  s->disk.evictions = st.evictions;
  s->disk.bytes = st.index.bytes();
  s->disk.entries = st.index.entries();
  s->disk.budget_bytes = options_.budget_bytes;
  s->disk_corrupt_dropped = st.corrupt;
  s->disk_write_failures = st.write_failures;
  s->disk_skipped_writes = st.skipped;
  s->too_large += st.too_large;
}

}  // namespace inferloop::serve
