#include "llm/kv_disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/status_macros.h"
#include "llm/kv_tier_cost.h"

namespace inferloop::llm {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kFailuresBeforePause = 3;
constexpr auto kWritePause = std::chrono::seconds(10);
constexpr size_t kProbeBytes = size_t{8} << 20;

// The whole file, or an empty vector when it cannot be read.
std::vector<uint8_t> ReadWhole(const std::string& path, size_t limit) {
  std::vector<uint8_t> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && static_cast<size_t>(st.st_size) <= limit) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  }
  ::close(fd);
  return out;
}

bool WriteWhole(const std::string& path, std::span<const uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = ::close(fd) == 0 && done == bytes.size();
  if (!ok) ::unlink(path.c_str());
  return ok;
}

// "<16 hex digits>.ilkv" -> the chain hash.
bool ParseName(const std::string& name, uint64_t* chain) {
  if (name.size() != 16 + std::strlen(kKvBlockFileExtension) || !name.ends_with(kKvBlockFileExtension)) return false;
  uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    const char c = name[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *chain = v;
  return true;
}

}  // namespace

KvDiskTier::KvDiskTier(const KvDiskTierOptions& o, const KvModelIdentity& id, int block_tokens, size_t kv_bytes)
    : options_(o), id_(id), block_tokens_(block_tokens), kv_bytes_(kv_bytes),
      file_bytes_(KvBlockFileBytes(block_tokens, kv_bytes)), folder_((fs::path(o.dir) / ToHex(id)).string()) {}

Result<std::unique_ptr<KvDiskTier>> KvDiskTier::Open(const KvDiskTierOptions& options, const KvModelIdentity& id,
                                                     int block_tokens, size_t kv_bytes) {
  if (options.dir.empty()) return Status::InvalidArgument("the prefix cache's disk tier needs a folder");
  if (options.budget_bytes <= 0)
    return Status::InvalidArgument("the prefix cache's disk budget must be positive, got " +
                                   std::to_string(options.budget_bytes));
  if (block_tokens <= 0 || kv_bytes == 0) return Status::InvalidArgument("the prefix cache's disk tier: empty blocks");
  std::unique_ptr<KvDiskTier> t(new KvDiskTier(options, id, block_tokens, kv_bytes));
  IL_RETURN_IF_ERROR(t->Index());
  t->ProbeReadSpeed();
  t->writer_ = std::thread([raw = t.get()] { raw->WriterLoop(); });
  return t;
}

Status KvDiskTier::Index() {
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec || !fs::is_directory(folder_))
    return Status::InvalidArgument("cannot use '" + folder_ + "' for the prefix cache's disk tier: " + ec.message());
  const std::string probe = folder_ + "/.probe-" + std::to_string(::getpid()) + ".tmp";
  const uint8_t one = 1;
  if (!WriteWhole(probe, std::span<const uint8_t>(&one, 1)))
    return Status::InvalidArgument("cannot write to '" + folder_ + "' (the prefix cache's disk tier): " +
                                   std::strerror(errno));
  ::unlink(probe.c_str());
  std::vector<std::pair<fs::file_time_type, uint64_t>> found;
  for (const fs::directory_entry& e : fs::directory_iterator(folder_, ec)) {
    const std::string name = e.path().filename().string();
    uint64_t chain = 0;
    if (name.ends_with(".tmp")) {  // a write cut short (kill -9)
      fs::remove(e.path(), ec);
      continue;
    }
    if (!ParseName(name, &chain) || !e.is_regular_file(ec)) continue;
    if (e.file_size(ec) != file_bytes_) {
      const std::vector<uint8_t> head = ReadWhole(e.path().string(), size_t{1} << 30);
      if (DecodeKvBlockFile(head, id_, block_tokens_, kv_bytes_).problem == KvBlockFileProblem::kDamaged) {
        fs::remove(e.path(), ec);
        ++stats_.corrupt;
      }
      continue;
    }
    found.emplace_back(e.last_write_time(ec), chain);
  }
  std::sort(found.begin(), found.end());
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& f : found) AddFileLocked(f.second);
  return Status::Ok();
}

void KvDiskTier::ProbeReadSpeed() {
  std::vector<uint64_t> recent;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = lru_.rbegin(); it != lru_.rend() && recent.size() * file_bytes_ < kProbeBytes; ++it)
      recent.push_back(*it);
  }
  std::string probe;
  if (recent.empty()) {  // nothing to read yet: a probe file of the same size as the others
    probe = folder_ + "/.probe-read-" + std::to_string(::getpid()) + ".tmp";
    if (!WriteWhole(probe, std::vector<uint8_t>(std::max(file_bytes_, size_t{1} << 20), 7))) return;
  }
  size_t bytes = 0;
  const auto t0 = Clock::now();
  if (recent.empty()) {
    bytes = ReadWhole(probe, size_t{1} << 30).size();
    ::unlink(probe.c_str());
  } else {
    for (uint64_t c : recent) bytes += ReadWhole(PathOf(c), file_bytes_).size();
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::lock_guard<std::mutex> l(mu_);
  if (bytes > 0 && s > 0) stats_.read_bytes_per_second = bytes / s;
}

KvDiskTier::~KvDiskTier() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string KvDiskTier::PathOf(uint64_t chain) const {
  return folder_ + "/" + ChainHashHex(chain) + kKvBlockFileExtension;
}

bool KvDiskTier::Contains(uint64_t chain) const {
  std::lock_guard<std::mutex> l(mu_);
  return files_.count(chain) > 0 || pending_.count(chain) > 0;
}

void KvDiskTier::Write(uint64_t chain, uint64_t parent, std::span<const int32_t> tokens, std::span<const uint8_t> kv,
                       bool wait) {
  if (static_cast<int>(tokens.size()) != block_tokens_ || kv.size() != kv_bytes_) return;
  std::unique_lock<std::mutex> l(mu_);
  if (files_.count(chain) > 0 || pending_.count(chain) > 0) return;
  const int64_t need = static_cast<int64_t>(kv_bytes_);
  const bool too_big = static_cast<int64_t>(file_bytes_) > options_.budget_bytes;
  if (wait) {
    room_cv_.wait(l, [&] { return stop_ || pending_bytes_ + need <= options_.max_pending_bytes || queue_.empty(); });
  }
  const bool full = pending_bytes_ + need > options_.max_pending_bytes && !queue_.empty();
  if (stop_ || too_big || full || Clock::now() < paused_until_) {
    ++stats_.skipped_writes;
    return;
  }
  auto p = std::make_shared<Pending>();
  p->parent = parent;
  p->tokens.assign(tokens.begin(), tokens.end());
  p->kv.assign(kv.begin(), kv.end());
  pending_.emplace(chain, std::move(p));
  queue_.push_back(chain);
  pending_bytes_ += need;
  l.unlock();
  cv_.notify_one();
}

void KvDiskTier::WriterLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping with nothing left
    const uint64_t chain = queue_.front();
    queue_.pop_front();
    std::shared_ptr<const Pending> p = pending_[chain];
    writing_ = true;
    l.unlock();
    const bool ok = WriteFile(chain, *p);
    l.lock();
    writing_ = false;
    if (ok) {
      failures_in_row_ = 0;
      ++stats_.blocks_written;
      stats_.bytes_written += static_cast<int64_t>(file_bytes_);
      AddFileLocked(chain);
    } else {
      ++stats_.write_failures;
      if (++failures_in_row_ >= kFailuresBeforePause) paused_until_ = Clock::now() + kWritePause;
    }
    pending_.erase(chain);
    pending_bytes_ -= static_cast<int64_t>(kv_bytes_);
    room_cv_.notify_all();
  }
}

bool KvDiskTier::WriteFile(uint64_t chain, const Pending& p) {
  const std::vector<uint8_t> bytes = EncodeKvBlockFile(id_, p.tokens, chain, p.parent, p.kv);
  const std::string path = PathOf(chain);
  const std::string tmp = folder_ + "/." + ChainHashHex(chain) + "-" + std::to_string(::getpid()) + ".tmp";
  if (!WriteWhole(tmp, bytes)) return false;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

void KvDiskTier::AddFileLocked(uint64_t chain) {
  if (files_.count(chain) > 0) return;
  lru_.push_back(chain);
  files_.emplace(chain, std::prev(lru_.end()));
  stats_.bytes += static_cast<int64_t>(file_bytes_);
  ++stats_.files;
  while (stats_.bytes > options_.budget_bytes && lru_.size() > 1) {
    const uint64_t victim = lru_.front();
    ::unlink(PathOf(victim).c_str());
    DropFileLocked(victim);
    ++stats_.evictions;
  }
}

void KvDiskTier::DropFileLocked(uint64_t chain) {
  auto it = files_.find(chain);
  if (it == files_.end()) return;
  lru_.erase(it->second);
  files_.erase(it);
  stats_.bytes -= static_cast<int64_t>(file_bytes_);
  --stats_.files;
}

bool KvDiskTier::Read(uint64_t chain, uint64_t parent, std::span<const int32_t> tokens, std::span<uint8_t> out) {
  if (out.size() != kv_bytes_) return false;
  std::shared_ptr<const Pending> p;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pending_.find(chain);
    if (it != pending_.end()) {
      p = it->second;
    } else if (files_.count(chain) == 0) {
      return false;
    }
  }
  if (!p) return ReadFile(chain, parent, tokens, out);
  if (p->parent != parent || !std::equal(tokens.begin(), tokens.end(), p->tokens.begin(), p->tokens.end())) return false;
  std::copy(p->kv.begin(), p->kv.end(), out.begin());
  std::lock_guard<std::mutex> l(mu_);
  ++stats_.blocks_read;
  return true;
}

bool KvDiskTier::ReadFile(uint64_t chain, uint64_t parent, std::span<const int32_t> tokens, std::span<uint8_t> out) {
  const std::string path = PathOf(chain);
  const auto t0 = Clock::now();
  const std::vector<uint8_t> bytes = ReadWhole(path, file_bytes_ * 2);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (bytes.empty()) {  // deleted meanwhile (budget) or unreadable
    std::lock_guard<std::mutex> l(mu_);
    DropFileLocked(chain);
    return false;
  }
  const KvBlockDecode d = DecodeKvBlockFile(bytes, id_, block_tokens_, kv_bytes_);
  std::lock_guard<std::mutex> l(mu_);
  if (d.problem != KvBlockFileProblem::kNone || d.record.chain != chain) {
    if (d.problem != KvBlockFileProblem::kForeign) {
      ::unlink(path.c_str());
      ++stats_.corrupt;
    }
    DropFileLocked(chain);
    return false;
  }
  if (d.record.parent != parent || d.record.tokens.size() != tokens.size() ||
      !std::equal(tokens.begin(), tokens.end(), d.record.tokens.begin()))
    return false;  // another prefix with the same hash: not ours to serve
  std::copy(d.record.kv.begin(), d.record.kv.end(), out.begin());
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for the LRU order after a restart
  auto it = files_.find(chain);
  if (it != files_.end()) lru_.splice(lru_.end(), lru_, it->second);
  ++stats_.blocks_read;
  stats_.bytes_read += static_cast<int64_t>(bytes.size());
  stats_.read_bytes_per_second = SmoothSpeed(stats_.read_bytes_per_second, seconds > 0 ? bytes.size() / seconds : 0);
  return true;
}

void KvDiskTier::Flush() {
  std::unique_lock<std::mutex> l(mu_);
  room_cv_.wait(l, [&] { return queue_.empty() && !writing_; });
}

double KvDiskTier::read_bytes_per_second() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_.read_bytes_per_second;
}

KvDiskTierStats KvDiskTier::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

}  // namespace inferloop::llm
