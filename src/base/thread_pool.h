// ThreadPool: the one intra-op pool kernels split their work over.
//
// A pool has num_threads() workers counting the calling thread (a pool of 1 runs everything
// inline). ParallelFor blocks until every chunk has run; the caller takes chunks too. Several
// sessions in one process share one pool (SharedThreadPool) rather than each starting its own.
// Nested ParallelFor calls from inside a chunk run inline (no deadlock, no oversubscription).
//
// Implementation: the workers are libgomp's (GCC's OpenMP runtime), driven through its C ABI
// (GOMP_parallel) rather than #pragma omp, so gcc and clang builds behave the same. oneDNN
// (Debian's build) runs on libgomp too, so kernels and oneDNN primitives use one set of OS
// threads. libgomp keeps one team of workers per calling thread: concurrent Runs from several
// threads each get their own team, and the pool caps the threads all callers use together at
// num_threads() (a caller that finds the pool busy gets a smaller team, at least itself).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace inferloop {

class ThreadPool {
 public:
  // num_threads <= 0: DefaultThreadCount().
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const;

  // Calls fn(begin, end) on disjoint ranges covering [0, n), each at least `grain` long
  // (except the last). Returns after all ranges ran. fn must not throw. Does not allocate.
  template <typename Fn>
  void ParallelFor(int64_t n, int64_t grain, Fn&& fn) {
    RunChunks(n, grain, &CallThunk<std::remove_reference_t<Fn>>, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // True while the calling thread is running a chunk of some pool (nested calls run inline).
  static bool InParallelRegion();

  // Contention. On a machine whose CPUs other processes keep busy, a parallel region waits for
  // its woken workers to get a core: a scheduler slice (about 2 ms on 2 CPUs next to two busy
  // loops) where the work itself takes tens of microseconds. A caller that saw such a stall
  // (dnnl_common.h LooksStalled) calls NoteStall; for kContendedFor after the last one, the
  // pool reports Contended and callers keep work that is small for that wait on their own thread
  // (ThreadScope). Then they try the workers again: one stall per kContendedFor at most while the
  // contention lasts, none once it is gone. Thread-safe.
  static constexpr std::chrono::milliseconds kContendedFor{500};
  void NoteStall(std::chrono::steady_clock::time_point now);
  bool Contended(std::chrono::steady_clock::time_point now) const;

  // For code that runs its own OpenMP regions (oneDNN primitives): claims up to `want` of the
  // pool's threads for as long as the Reservation lives, so that concurrent callers together
  // stay within num_threads(). threads() is at least 1 (the caller itself).
  class Reservation {
   public:
    Reservation(ThreadPool* pool, int want);
    ~Reservation();
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    int threads() const { return threads_; }
    // ParallelFor on the threads this reservation holds (the caller and threads() - 1 workers),
    // for work between the oneDNN calls of the same holder; inline when it holds one thread.
    template <typename Fn>
    void ParallelFor(int64_t n, int64_t grain, Fn&& fn) const {
      RunChunksOnTeam(pool_ ? threads_ : 1, n, grain, &CallThunk<std::remove_reference_t<Fn>>,
                      const_cast<void*>(static_cast<const void*>(&fn)));
    }

   private:
    ThreadPool* pool_;
    int threads_ = 1;
  };

 private:
  using Thunk = void (*)(void* fn, int64_t begin, int64_t end);
  template <typename Fn>
  static void CallThunk(void* fn, int64_t b, int64_t e) { (*static_cast<Fn*>(fn))(b, e); }
  void RunChunks(int64_t n, int64_t grain, Thunk thunk, void* fn);
  // Runs the chunks on a team of at most `team` threads already claimed by the caller.
  static void RunChunksOnTeam(int team, int64_t n, int64_t grain, Thunk thunk, void* fn);

  int threads_ = 1;
  std::atomic<int> busy_{0};  // threads in use by all callers' teams right now
  std::atomic<int64_t> contended_until_ns_{0};  // steady_clock, ns since its epoch; 0: never
};

// The process-wide pool with `num_threads` threads (<= 0: DefaultThreadCount()). Sessions asking
// for the same count share one object, which lives until the process exits. Thread-safe.
ThreadPool* SharedThreadPool(int num_threads);

// CPUs this process may actually use: the affinity mask, capped by a cgroup CPU quota
// (base/cgroup_cpu.h: cgroup v2 cpu.max or v1 cfs_quota/period of this process's cgroup and its
// ancestors), at least 1. Computed once and cached.
int DefaultThreadCount();

// Runs fn over [0, n) on `pool`, or inline when pool is nullptr.
template <typename Fn>
void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (pool == nullptr || pool->num_threads() <= 1 || n < 2 * grain) {
    fn(int64_t{0}, n);
    return;
  }
  pool->ParallelFor(n, grain, fn);
}

}  // namespace inferloop
