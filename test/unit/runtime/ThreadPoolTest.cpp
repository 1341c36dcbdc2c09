//===- ThreadPoolTest.cpp - The cpu runtime's thread pool -------------------===//
//
// runtime/cpu/ThreadPool.cpp compiled into the test: every iteration runs
// exactly once whatever the thread count, chunk sizes follow the grain, and
// each thread starts with its own share of the chunks (the t-th contiguous
// run), so consecutive steps keep their rows on the same core.
//
//===----------------------------------------------------------------------===//
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu/ThreadPool.h"

namespace fusec::rt {
namespace {

struct Record {
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<int>> thread;
  explicit Record(int64_t n) : runs(static_cast<size_t>(n)), thread(static_cast<size_t>(n)) {}
};

void recordRange(void *closure, int64_t begin, int64_t end, int thread) {
  auto *r = static_cast<Record *>(closure);
  for (int64_t i = begin; i < end; ++i) {
    r->runs[static_cast<size_t>(i)].fetch_add(1);
    r->thread[static_cast<size_t>(i)].store(thread);
  }
}

TEST(ThreadPool, EveryIterationOnceAtAnyThreadCount) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool;
    ASSERT_TRUE(pool.resize(threads).ok());
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1000}, int64_t{4099}}) {
      for (int64_t grain : {int64_t{1}, int64_t{3}, int64_t{64}}) {
        Record r(n);
        pool.parallelFor(n, grain, recordRange, &r);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(r.runs[static_cast<size_t>(i)].load(), 1)
              << "threads " << threads << " n " << n << " grain " << grain << " i " << i;
          const int t = r.thread[static_cast<size_t>(i)].load();
          ASSERT_TRUE(t >= 0 && t < threads) << t;
        }
      }
    }
  }
}

/// Two threads, 32 chunks of one iteration: each chunk waits until both
/// threads have run one, so neither can take all of its share before the
/// other starts. The first chunk of thread 0 (the caller) is chunk 0 and
/// that of thread 1 is chunk 16: each starts with its own half. Every
/// chunk still runs once (a thread that finishes its share takes the
/// other's rest).
struct Shares {
  std::atomic<int> started{0};
  std::atomic<int> first[2] = {-1, -1};
  std::atomic<int> runs[32] = {};
};

void shareRange(void *closure, int64_t begin, int64_t end, int thread) {
  auto *s = static_cast<Shares *>(closure);
  int expected = -1;
  s->first[thread].compare_exchange_strong(expected, static_cast<int>(begin));
  if (expected == -1) {
    s->started.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (s->started.load() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
  }
  for (int64_t i = begin; i < end; ++i) s->runs[i].fetch_add(1);
}

TEST(ThreadPool, EachThreadStartsWithItsOwnShare) {
  ThreadPool pool;
  ASSERT_TRUE(pool.resize(2).ok());
  for (int round = 0; round < 5; ++round) {
    Shares s;
    pool.parallelFor(32, 1, shareRange, &s);
    EXPECT_EQ(s.first[0].load(), 0) << round;
    EXPECT_EQ(s.first[1].load(), 16) << round;
    for (int i = 0; i < 32; ++i) EXPECT_EQ(s.runs[i].load(), 1) << i;
  }
}

}  // namespace
}  // namespace fusec::rt
