#include "base/thread_pool.h"

#include "base/cgroup_cpu.h"

#include <sched.h>

#include <algorithm>
#include <map>
#include <mutex>

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

int ComputeDefaultThreadCount() {
  int cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = 1;
  const int limit = CgroupCpuLimit();  // 0 = no quota
  if (limit > 0) cpus = std::min(cpus, limit);
  return std::max(cpus, 1);
}

}  // namespace

int DefaultThreadCount() {
  static const int count = ComputeDefaultThreadCount();
  return count;
}

ThreadPool::ThreadPool(int num_threads) : threads_(num_threads <= 0 ? DefaultThreadCount() : num_threads) {}
ThreadPool::~ThreadPool() = default;
int ThreadPool::num_threads() const { return threads_; }

void ThreadPool::NoteStall(std::chrono::steady_clock::time_point now) {
  const int64_t until = std::chrono::duration_cast<std::chrono::nanoseconds>((now + kContendedFor).time_since_epoch()).count();
  int64_t seen = contended_until_ns_.load(std::memory_order_relaxed);
  while (seen < until && !contended_until_ns_.compare_exchange_weak(seen, until, std::memory_order_relaxed)) {
  }
}

bool ThreadPool::Contended(std::chrono::steady_clock::time_point now) const {
  const int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  return t < contended_until_ns_.load(std::memory_order_relaxed);
}

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
  RunChunksOnTeam(r.threads(), n, grain, thunk, fn);
}

void ThreadPool::RunChunksOnTeam(int team, int64_t n, int64_t grain, Thunk thunk, void* fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t max_blocks = n / grain;
  team = static_cast<int>(std::min<int64_t>(team, max_blocks));
  if (team <= 1 || InParallelRegion()) {
    ChunkScope scope;
    thunk(fn, 0, n);
    return;
  }
  // Blocks are claimed one at a time, several per thread, so a thread slowed by other load does
  // not hold everyone up. 16 per thread rather than 4: the last block's wait is shorter, and 16
  // LLM streams (`inferloop generate --parallel 16`, Q4_K_M, 2 threads, where a decode step runs
  // about 90 regions of ~1 ms) went 1.05x faster (median of 6 alternating runs, AMD EPYC); the
  // zoo's ResNet-50, 3-D U-Nets and DLRM at batch 8 measured the same within noise.
  Job job{thunk, fn, n, std::min<int64_t>(max_blocks, int64_t{team} * 16), team, {team}};
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
