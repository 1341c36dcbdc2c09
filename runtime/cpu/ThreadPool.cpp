//===- ThreadPool.cpp - The worker threads of one cpu model ---------------===//
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fusec::rt {
namespace {

/// How long a worker spins for the next job, and the caller for the last
/// worker, before sleeping / yielding.
constexpr auto kSpin = std::chrono::microseconds(200);

/// Chunks per thread of one parallelFor (at most; never more than its
/// blocks of grain iterations): when a worker is descheduled while it holds
/// a chunk (a machine with more runnable threads than cores), the others
/// finish every other chunk and then wait for that one, so the tail is at
/// most one chunk, 1 / (kChunksPerThread N) of the work. Claiming a chunk
/// costs one atomic increment.
constexpr int kChunksPerThread = 16;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// The pool and worker index of the chunk the current thread is running
/// (nullptr outside one): detects a nested parallelFor.
thread_local const ThreadPool *tPool = nullptr;
thread_local int tIndex = 0;

} // namespace

void ThreadPool::chunk(int64_t n, int64_t grain, int tasks, int t, int64_t &begin,
                       int64_t &end) {
  int64_t blocks = n / grain + (n % grain != 0);
  // Near-equal runs of blocks: the first blocks % tasks runs get one more.
  int64_t per = blocks / tasks, extra = blocks % tasks;
  int64_t b0 = per * t + std::min<int64_t>(t, extra);
  int64_t b1 = b0 + per + (t < extra ? 1 : 0);
  // b * grain <= n + grain - 1 may exceed INT64_MAX only when n is near it.
  begin = b0 >= n / grain + 1 ? n : std::min(n, b0 * grain);
  end = b1 >= n / grain + 1 ? n : std::min(n, b1 * grain);
}

void ThreadPool::runClaims(Job &job, int t) {
  const ThreadPool *outerPool = tPool;
  int outerIndex = tIndex;
  tPool = this;
  tIndex = t;
  // Its own share first, then the others' (each chunk is claimed exactly
  // once: by the fetch_add on its share's counter that returns it).
  for (int k = 0; k < job.numShares; ++k) {
    Share &share = job.shares[(t + k) % job.numShares];
    for (;;) {
      const int c = share.next.load(std::memory_order_relaxed) < share.end
                        ? share.next.fetch_add(1, std::memory_order_relaxed)
                        : share.end;
      if (c >= share.end)
        break;
      int64_t begin = 0, end = 0;
      chunk(job.n, job.grain, job.tasks, c, begin, end);
      if (begin < end)
        job.fn(job.closure, begin, end, t);
      job.done.fetch_add(1, std::memory_order_release);
    }
  }
  tPool = outerPool;
  tIndex = outerIndex;
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, fusert_cpu_range_fn fn, void *closure) {
  if (n <= 0 || !fn)
    return;
  grain = std::max<int64_t>(grain, 1);
  if (tPool == this) { // nested: run inline on this worker
    fn(closure, 0, n, tIndex);
    return;
  }
  int64_t blocks = n / grain + (n % grain != 0);
  auto job = std::make_shared<Job>();
  job->fn = fn;
  job->closure = closure;
  job->n = n;
  job->grain = grain;
  job->tasks = static_cast<int>(std::min<int64_t>(int64_t{kChunksPerThread} * numThreads(), blocks));
  job->numShares = numThreads();
  job->shares.reset(new Share[static_cast<size_t>(job->numShares)]);
  for (int s = 0; s < job->numShares; ++s) {
    job->shares[s].next.store(static_cast<int>(int64_t{job->tasks} * s / job->numShares),
                              std::memory_order_relaxed);
    job->shares[s].end = static_cast<int>(int64_t{job->tasks} * (s + 1) / job->numShares);
  }
  if (numThreads() <= 1 || job->tasks <= 1) {
    runClaims(*job, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  runClaims(*job, 0);
  // Only chunks a worker has claimed can still be running.
  auto start = std::chrono::steady_clock::now();
  for (int spins = 0; job->done.load(std::memory_order_acquire) != job->tasks; ++spins) {
    if (spins < 64 || std::chrono::steady_clock::now() - start < kSpin)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::parallelForEntry(void *pool, int64_t n, int64_t grain, fusert_cpu_range_fn fn,
                                  void *closure) {
  if (pool)
    static_cast<ThreadPool *>(pool)->parallelFor(n, grain, fn, closure);
}

void ThreadPool::workerLoop(int index, uint64_t seen) {
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0; g == seen; ++spins) {
      if ((spins & 63) == 63 && std::chrono::steady_clock::now() - start > kSpin) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      } else {
        cpuRelax();
      }
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire))
      return;
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = job_;
    }
    if (job)
      runClaims(*job, index);
  }
}

void ThreadPool::stopWorkers() {
  if (workers_.empty())
    return;
  stop_.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
  workers_.clear();
  stop_.store(false, std::memory_order_release);
}

Status ThreadPool::resize(int numThreads) {
  stopWorkers();
  if (numThreads < 1)
    numThreads = 1;
  uint64_t seen = generation_.load(std::memory_order_acquire);
  try {
    workers_.reserve(static_cast<size_t>(numThreads - 1));
    for (int i = 1; i < numThreads; ++i)
      workers_.emplace_back([this, i, seen] { workerLoop(i, seen); });
  } catch (const std::exception &e) {
    stopWorkers();
    return internalError("cannot start ", numThreads - 1, " worker threads: ", e.what());
  }
  return Status();
}

} // namespace fusec::rt
