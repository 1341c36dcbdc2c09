//===- CpuExecutor.cpp - Runs a cpu artifact on the host ------------------===//
//
// The executor of target "cpu" (runtime/internal/Model.h; the contract is
// docs/ARTIFACT.md, "cpu artifacts", and runtime/include/fusert/
// fusert_cpu_kernel.h). Weights and arena live in 64-byte aligned host
// memory (touched at load, so a first run takes no page faults); inputs and
// outputs are the caller's host pointers. A kernel step calls its symbol
// with the buffer addresses and the model's fusert_cpu_context (thread pool,
// sgemm, per-thread workspace); a copy step is a memmove. The caller's
// stream argument is ignored; a run returns when the outputs are written.
// Profiling reads std::chrono::steady_clock before each step and after the
// last.
//
//===----------------------------------------------------------------------===//
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fusert/fusert_cpu_kernel.h"
#include "runtime/cpu/CpuFeatures.h"
#include "runtime/cpu/Sgemm.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/internal/Model.h"

namespace fusec::rt {
namespace {

constexpr uint64_t kAlign = 64;

uint64_t roundUp(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

/// 64-byte aligned host memory; freed on destruction.
class HostBuffer {
public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;
  ~HostBuffer() { std::free(ptr_); }

  /// Allocates \p bytes (rounded up to 64; at least 64) and zeroes them, so
  /// that the pages are mapped now rather than in the first run.
  Status allocate(uint64_t bytes, const char *what) {
    std::free(ptr_);
    ptr_ = nullptr;
    uint64_t size = roundUp(bytes == 0 ? 1 : bytes, kAlign);
    if (size < bytes || size > SIZE_MAX)
      return internalError("cannot allocate ", bytes, " bytes for the ", what);
    ptr_ = static_cast<char *>(std::aligned_alloc(kAlign, static_cast<size_t>(size)));
    if (!ptr_)
      return internalError("out of host memory: ", bytes, " bytes for the ", what);
    std::memset(ptr_, 0, static_cast<size_t>(size));
    return Status();
  }
  char *get() const { return ptr_; }

private:
  char *ptr_ = nullptr;
};

/// Threads for a new model: FUSERT_NUM_THREADS when it is a number in
/// 1..FUSERT_MAX_THREADS, else the machine's hardware concurrency.
int defaultThreads() {
  if (const char *env = std::getenv("FUSERT_NUM_THREADS"); env && *env) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end == '\0' && n >= 1 && n <= FUSERT_MAX_THREADS)
      return static_cast<int>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, FUSERT_MAX_THREADS));
}

/// The ABI's sgemm entry point (C linkage types only).
void sgemmEntry(int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                int64_t ldc) {
  cpuSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

class CpuExecutor final : public Executor {
public:
  Status checkRunnable(const Manifest &m) override {
    // The manifest checker has accepted cpu_abi and every feature name.
    std::string missing;
    for (const std::string &f : m.cpuFeatures)
      if (!hostHasCpuFeature(f))
        missing += (missing.empty() ? "" : ", ") + f;
    if (!missing.empty())
      return invalidArgument("this cpu artifact (arch '", m.arch, "') needs the cpu feature",
                             missing.find(',') == std::string::npos ? " " : "s ", missing,
                             ", which this host does not have; recompile it with "
                             "--target cpu --arch for this machine (the default)");
    return Status();
  }

  Status prepare(fusert_model &model, const std::string &weightsPath) override {
    const Manifest &m = model.manifest;
    configureBlasThreads();
    steps_.resize(m.steps.size());
    for (size_t i = 0; i < m.steps.size(); ++i) {
      steps_[i].fn = reinterpret_cast<fusert_cpu_kernel_fn>(model.symbols[i]);
      steps_[i].args.resize(m.steps[i].buffers.size());
    }
    if (!weightsPath.empty() && m.weightsBytes > 0) {
      FUSERT_RETURN_IF_ERROR(weights_.allocate(m.weightsBytes, "weights"));
      std::ifstream in(weightsPath, std::ios::binary);
      if (!in)
        return notFound("cannot read ", weightsPath);
      if (!in.read(weights_.get(), static_cast<std::streamsize>(m.weightsBytes)))
        return internalError("short read of ", weightsPath, ": ", in.gcount(), " of ",
                             m.weightsBytes, " bytes");
      hasWeights_ = true;
    }
    if (m.arenaBytes > 0) {
      FUSERT_RETURN_IF_ERROR(arena_.allocate(m.arenaBytes, "arena"));
      arenaBytes_ = m.arenaBytes;
    }
    workspacePerThread_ = roundUp(m.workspaceBytesPerThread, kAlign);
    ctx_.abi_version = FUSERT_CPU_ABI_VERSION;
    ctx_.pool = &pool_;
    ctx_.parallel_for = &ThreadPool::parallelForEntry;
    ctx_.sgemm = &sgemmEntry;
    return setNumThreads(0);
  }

  Status bindShapes(fusert_model &model, const std::vector<int64_t> &symbols,
                    uint64_t arenaBytes) override {
    (void)model;
    symbols_ = symbols;
    ctx_.symbols = symbols_.data();
    ctx_.num_symbols = static_cast<int64_t>(symbols_.size());
    if (arenaBytes > arenaBytes_) {
      FUSERT_RETURN_IF_ERROR(arena_.allocate(arenaBytes, "arena"));
      arenaBytes_ = arenaBytes;
    }
    return Status();
  }

  char *weights() const override { return hasWeights_ ? weights_.get() : nullptr; }
  char *arena() const override { return arenaBytes_ > 0 ? arena_.get() : nullptr; }

  Status run(fusert_model &model, const std::vector<void *> &in, const std::vector<void *> &out,
             cudaStream_t stream) override {
    (void)in;
    (void)out;
    if (model.profile && !times_.empty())
      return model.runProfiled(stream);
    return model.runSteps(stream, /*timed=*/false);
  }

  Status runStep(fusert_model &model, size_t i, cudaStream_t stream) override {
    (void)stream;
    const StepDesc &s = model.manifest.steps[i];
    StepState &st = steps_[i];
    switch (s.kind) {
    case StepKind::kKernel: {
      for (size_t j = 0; j < s.buffers.size(); ++j)
        st.args[j] = model.at(s.buffers[j]);
      int32_t rc = st.fn(st.args.data(), &ctx_);
      if (rc != 0)
        return internalError("kernel '", s.symbol, "' returned ", rc);
      return Status();
    }
    case StepKind::kCopy: {
      void *dst = model.at(s.dst);
      const void *src = model.at(s.src);
      if (s.bytes > 0 && dst != src)
        std::memmove(dst, src, static_cast<size_t>(s.bytes));
      return Status();
    }
    case StepKind::kGemm:
    case StepKind::kConv:
      break; // refused by the manifest checker
    }
    return internalError("step kind not supported by the cpu executor");
  }

  Status fillArena(int byteValue, cudaStream_t stream) override {
    (void)stream;
    if (arenaBytes_ > 0)
      std::memset(arena_.get(), byteValue, static_cast<size_t>(arenaBytes_));
    return Status();
  }

  Status enableProfiling(bool on, size_t numSteps) override {
    if (on)
      times_.assign(numSteps + 1, Clock::time_point());
    return Status();
  }

  Status readGuard(const void *addr, cudaStream_t stream, bool &value) override {
    (void)stream;  // steps run synchronously: the byte is written
    if (!addr)
      return internalError("guard buffer has no address");
    value = *static_cast<const unsigned char *>(addr) != 0;
    return Status();
  }

  Status markTime(size_t i, cudaStream_t stream) override {
    (void)stream;
    times_[i] = Clock::now();
    return Status();
  }

  Status stepTimes(std::vector<float> &us, cudaStream_t stream) override {
    (void)stream;
    us.assign(times_.size() - 1, 0.0f);
    for (size_t i = 0; i < us.size(); ++i)
      us[i] = std::chrono::duration<float, std::micro>(times_[i + 1] - times_[i]).count();
    return Status();
  }

  Status setNumThreads(int n) override {
    int want = n == 0 ? defaultThreads() : n;
    Status status = pool_.resize(want);
    int threads = pool_.numThreads();
    // Scratch for the threads the pool really has.
    Status ws = Status();
    if (workspacePerThread_ > 0) {
      ws = workspace_.allocate(workspacePerThread_ * static_cast<uint64_t>(threads),
                               "per-thread workspace");
      if (!ws.ok() && threads > 1) {
        pool_.resize(1);
        threads = 1;
        Status one = workspace_.allocate(workspacePerThread_, "per-thread workspace");
        if (!one.ok())
          return one;
      } else if (!ws.ok()) {
        return ws;
      }
    }
    ctx_.num_threads = threads;
    ctx_.workspace = workspacePerThread_ > 0 ? workspace_.get() : nullptr;
    ctx_.workspace_bytes_per_thread = workspacePerThread_;
    return status.ok() ? ws : status;
  }

  int numThreads() const override { return pool_.numThreads(); }

private:
  using Clock = std::chrono::steady_clock;

  struct StepState {
    fusert_cpu_kernel_fn fn = nullptr;
    std::vector<void *> args; ///< buffer addresses, refilled each run
  };

  HostBuffer weights_, arena_, workspace_;
  std::vector<int64_t> symbols_; ///< dynamic shapes: the bound values (ctx_.symbols)
  bool hasWeights_ = false;
  uint64_t arenaBytes_ = 0;
  uint64_t workspacePerThread_ = 0; ///< the manifest's, rounded up to 64
  ThreadPool pool_;
  fusert_cpu_context ctx_{};
  std::vector<StepState> steps_;
  std::vector<Clock::time_point> times_; ///< before each step, after the last
};

} // namespace

Status makeCpuExecutor(std::unique_ptr<Executor> &out) {
  out = std::make_unique<CpuExecutor>();
  return Status();
}

} // namespace fusec::rt
