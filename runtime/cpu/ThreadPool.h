//===- ThreadPool.h - The worker threads of one cpu model -------*- C++ -*-===//
//
// Each loaded cpu model owns one pool, so models run from different threads
// never share workers or wait for each other. parallelFor implements
// fusert_cpu_context.parallel_for (runtime/include/fusert/
// fusert_cpu_kernel.h): the calling thread is worker 0 and takes a chunk
// itself; workers 1..N-1 are std::threads that spin briefly after each job
// (kernels of one run follow each other within microseconds) and then sleep
// on a condition variable until the next one.
//
// Chunks: [0, n) is cut into ceil(n / grain) blocks of grain iterations
// (the last may be shorter), and those into C = min(16 N, blocks)
// contiguous, near-equal runs of blocks (chunk()), one call of fn each, so a
// kernel's per-thread scratch and caches see stretches of rows, and a worker
// descheduled while it holds a chunk delays the job by at most 1 / (16 N)
// of its work (4 N before: 1/8 of a 100 ms row kernel on 2 threads). Chunks are claimed
// dynamically: thread t first claims the chunks of its own share, the t-th
// of N contiguous runs of chunks (an atomic counter per share), then those
// left in the other shares. So without load every thread runs the same
// contiguous part of every step's rows, and the rows a step reads were
// mostly written by the same core one step before (in its L2, no transfer
// from the other core's cache); with chunks claimed in one shared order,
// neighbouring chunks alternated between the threads. The caller claims
// chunks too and then waits only for the chunks a worker has started,
// never for a worker that has not woken up yet. On a loaded machine (more runnable threads than
// cores) a descheduled worker therefore costs its share of the work, not a
// scheduler time slice per parallel_for. The `thread` argument of fn is the
// index of the worker running it (0 = the caller), unique among the chunks
// running at one time.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CPU_THREADPOOL_H
#define FUSEC_RUNTIME_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fusert/fusert_cpu_kernel.h"
#include "runtime/internal/Status.h"

namespace fusec::rt {

class ThreadPool {
public:
  ThreadPool() = default;
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;
  ~ThreadPool() { stopWorkers(); }

  /// Stops the current workers and starts \p numThreads - 1 new ones
  /// (\p numThreads >= 1; the caller of parallelFor is the other one).
  /// Errors: FUSERT_INTERNAL if a thread cannot be started (the pool then
  /// runs everything on the caller, numThreads() == 1).
  Status resize(int numThreads);
  /// Workers including the caller (>= 1).
  int numThreads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(closure, begin, end, thread) over disjoint chunks covering
  /// [0, n) (nothing for n <= 0; grain < 1 counts as 1) and returns when all
  /// have returned. A call from inside a chunk of this pool (which the ABI
  /// forbids) runs the whole range on the calling worker, with its index,
  /// instead of deadlocking.
  void parallelFor(int64_t n, int64_t grain, fusert_cpu_range_fn fn, void *closure);

  /// The C entry point stored in fusert_cpu_context.parallel_for; \p pool is
  /// the ThreadPool.
  static void parallelForEntry(void *pool, int64_t n, int64_t grain, fusert_cpu_range_fn fn,
                               void *closure);

  /// [begin, end) of chunk \p t of \p tasks over \p n iterations in blocks
  /// of \p grain (the chunking above; exposed for tests).
  static void chunk(int64_t n, int64_t grain, int tasks, int t, int64_t &begin, int64_t &end);

private:
  /// The chunks [next, end) of one thread's share not yet claimed.
  struct alignas(64) Share {
    std::atomic<int> next{0};
    int end = 0;
  };
  struct Job {
    fusert_cpu_range_fn fn = nullptr;
    void *closure = nullptr;
    int64_t n = 0, grain = 1;
    int tasks = 0;                ///< chunks
    /// Thread t's share: chunks [t tasks / N, (t + 1) tasks / N).
    std::unique_ptr<Share[]> shares;
    int numShares = 0;
    std::atomic<int> done{0};     ///< chunks finished
  };

  void workerLoop(int index, uint64_t seen);
  /// Claims and runs chunks of \p job as worker \p t until none is left.
  void runClaims(Job &job, int t);
  void stopWorkers();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0}; ///< bumped (under mu_) per job
  std::atomic<bool> stop_{false};
  /// The current job (under mu_); a worker that wakes late holds its own
  /// reference, finds no chunk left and drops it.
  std::shared_ptr<Job> job_;
};

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_CPU_THREADPOOL_H
