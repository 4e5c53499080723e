#include "base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

// libgomp's C ABI (stable since GCC 4.9). Declared here rather than taken from <omp.h>, which
// clang does not ship without libomp; il_base links libgomp.
extern "C" {
void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_in_parallel(void);
}

namespace inferloop {

namespace {

thread_local int tls_chunk_depth = 0;  // > 0 while this thread runs a pool chunk

struct ChunkScope {
  ChunkScope() { ++tls_chunk_depth; }
  ~ChunkScope() { --tls_chunk_depth; }
};

// One ParallelFor call, on the caller's stack. Blocks [b*n/blocks, (b+1)*n/blocks).
// Thread t first runs block t (so consecutive calls touch the same data from the same core),
// then takes further blocks from `next`.
struct Job {
  void (*thunk)(void*, int64_t, int64_t);
  void* fn;
  int64_t n;
  int64_t blocks;
  int team;
  std::atomic<int64_t> next;
  std::atomic<int64_t> fallback_next{0};

  void RunBlock(int64_t b) const { thunk(fn, b * n / blocks, (b + 1) * n / blocks); }
};

void WorkerMain(void* data) {
  Job& job = *static_cast<Job*>(data);
  ChunkScope scope;
  const int t = omp_get_thread_num();
  if (omp_get_num_threads() != job.team) {
    // libgomp gave a different team size (thread limit): every thread takes blocks dynamically.
    for (int64_t b = job.fallback_next.fetch_add(1); b < job.blocks; b = job.fallback_next.fetch_add(1)) job.RunBlock(b);
    return;
  }
  if (t < job.blocks) job.RunBlock(t);
  for (int64_t b = job.next.fetch_add(1, std::memory_order_relaxed); b < job.blocks;
       b = job.next.fetch_add(1, std::memory_order_relaxed))
    job.RunBlock(b);
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool ParseInt64(const std::string& s, int64_t* out) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (i == s.size()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str() + i, &end, 10);
  if (errno || end == s.c_str() + i) return false;
  *out = v;
  return true;
}

int CeilRatio(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  int64_t n = (quota + period - 1) / period;
  return static_cast<int>(std::clamp<int64_t>(n, 1, 1 << 20));
}

// The cgroup v2 path of this process ("0::/some/path" in /proc/self/cgroup), or "".
std::string CgroupV2Path() {
  std::istringstream in(ReadSmallFile("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return {};
}

int ComputeDefaultThreadCount() {
  int cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = 1;
  int limit = 0;
  // cgroup v2: the quota of this process's cgroup or any ancestor (the smallest applies).
  std::string path = CgroupV2Path();
  for (;;) {
    std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
    int l = CpuLimitFromCgroupV2(ReadSmallFile(dir + "/cpu.max"));
    if (l > 0) limit = limit > 0 ? std::min(limit, l) : l;
    if (path.empty() || path == "/") break;
    size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  // cgroup v1.
  for (const char* dir : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    std::string d(dir);
    int l = CpuLimitFromCgroupV1(ReadSmallFile(d + "/cpu.cfs_quota_us"), ReadSmallFile(d + "/cpu.cfs_period_us"));
    if (l > 0) {
      limit = limit > 0 ? std::min(limit, l) : l;
      break;
    }
  }
  if (limit > 0) cpus = std::min(cpus, limit);
  return std::max(cpus, 1);
}

}  // namespace

int CpuLimitFromCgroupV2(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota, period;
  if (!(in >> quota)) return 0;
  if (quota == "max") return 0;
  int64_t q = 0, p = 100000;
  if (!ParseInt64(quota, &q)) return 0;
  if (in >> period && !ParseInt64(period, &p)) return 0;
  return CeilRatio(q, p);
}

int CpuLimitFromCgroupV1(const std::string& quota_us, const std::string& period_us) {
  int64_t q = 0, p = 0;
  if (!ParseInt64(quota_us, &q) || !ParseInt64(period_us, &p)) return 0;
  return CeilRatio(q, p);  // quota -1 = unlimited -> 0
}

int DefaultThreadCount() {
  static const int count = ComputeDefaultThreadCount();
  return count;
}

ThreadPool::ThreadPool(int num_threads) : threads_(num_threads <= 0 ? DefaultThreadCount() : num_threads) {}
ThreadPool::~ThreadPool() = default;
int ThreadPool::num_threads() const { return threads_; }

bool ThreadPool::InParallelRegion() { return tls_chunk_depth > 0 || omp_in_parallel(); }

ThreadPool::Reservation::Reservation(ThreadPool* pool, int want) : pool_(pool) {
  if (!pool_ || want <= 1 || pool_->threads_ <= 1 || InParallelRegion()) {
    pool_ = nullptr;
    return;
  }
  want = std::min(want, pool_->threads_);
  int prev = pool_->busy_.fetch_add(want, std::memory_order_acq_rel);
  threads_ = std::min(want, std::max(1, pool_->threads_ - prev));
  if (threads_ < want) pool_->busy_.fetch_sub(want - threads_, std::memory_order_acq_rel);
}

ThreadPool::Reservation::~Reservation() {
  if (pool_) pool_->busy_.fetch_sub(threads_, std::memory_order_acq_rel);
}

void ThreadPool::RunChunks(int64_t n, int64_t grain, Thunk thunk, void* fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t max_blocks = n / grain;  // every block at least `grain` long
  if (threads_ <= 1 || max_blocks < 2 || InParallelRegion()) {
    ChunkScope scope;
    thunk(fn, 0, n);
    return;
  }
  Reservation r(this, static_cast<int>(std::min<int64_t>(threads_, max_blocks)));
  const int team = r.threads();
  if (team <= 1) {
    ChunkScope scope;
    thunk(fn, 0, n);
    return;
  }
  // A few blocks per thread so a thread slowed by other load does not hold everyone up.
  Job job{thunk, fn, n, std::min<int64_t>(max_blocks, int64_t{team} * 4), team, {team}};
  GOMP_parallel(&WorkerMain, &job, static_cast<unsigned>(team), 0);
}

ThreadPool* SharedThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = DefaultThreadCount();
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ThreadPool>> pools;  // lives until exit
  std::lock_guard<std::mutex> lock(mu);
  auto& p = pools[num_threads];
  if (!p) p = std::make_unique<ThreadPool>(num_threads);
  return p.get();
}

}  // namespace inferloop
