//===- CudaExecutor.cpp - Runs a cuda artifact on the caller's CUDA stream -===//
//
// The executor of target "cuda" (runtime/internal/Model.h). prepare()
// uploads the weights, allocates the arena and the workspace and builds the
// cuBLASLt / cuDNN plans (algorithms picked at load, not per run). run()
// enqueues the steps directly or through a captured CUDA graph; profiling
// records a CUDA event before each step and after the last.
//
// Dynamic shapes (docs/ARTIFACT.md): kernels take the bound symbols too.
// bindShapes() grows the arena (never shrinks it) and switches to the
// plans of the new binding: plan sets and captured graphs are each kept
// for the kPlanCacheSize / kGraphCacheSize most recently used bindings, so
// alternating shapes re-pick no algorithm and re-capture no graph. A
// reallocated arena or workspace drops every graph (they hold its address).
//
// GEMM operands: a gemm step whose D rows are not 16-byte aligned runs as
// tiles (GemmTiling.h); when its B is a weight, the main tiles read B from
// copies made once at load with aligned rows and first columns
// (wantedBCopies), shared by the steps that read the same weight alike.
// A, C and D keep their dense layouts.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <fstream>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "runtime/internal/CudaStatus.h"
#include "runtime/internal/GemmPlan.h"
#include "runtime/internal/Model.h"
#ifdef FUSERT_HAVE_CUDNN
#include "runtime/internal/ConvPlan.h"
#endif

namespace fusec::rt {
namespace {

/// Signatures of a generated kernel symbol (docs/ARTIFACT.md): static
/// artifacts, and dynamic ones, which also read the bound symbols (host
/// memory, manifest "symbols" order, valid during the call).
using KernelFn = int (*)(void *const *buffers, cudaStream_t stream);
using DynamicKernelFn = int (*)(void *const *buffers, const int64_t *symbols, cudaStream_t stream);

constexpr size_t kGemmWorkspaceBytes = 32u << 20;
constexpr size_t kConvWorkspaceLimit = 256u << 20;
constexpr size_t kUploadChunkBytes = 64u << 20;
/// Dynamic shapes: bindings whose plans / captured graph are kept.
constexpr size_t kPlanCacheSize = 8;
constexpr size_t kGraphCacheSize = 8;

/// Sets the model's device for the lifetime of the guard, then restores the
/// caller's.
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&prev_) == cudaSuccess && prev_ != device)
      switched_ = cudaSetDevice(device) == cudaSuccess;
  }
  ~DeviceGuard() {
    if (switched_)
      cudaSetDevice(prev_);
  }

private:
  int prev_ = -1;
  bool switched_ = false;
};

bool isLegacyStream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy;
}

/// Per-step state built at load.
struct StepState {
  KernelFn fn = nullptr;               ///< static artifacts
  DynamicKernelFn dynamicFn = nullptr; ///< dynamic artifacts
  std::vector<void *> args; ///< kernel argument array, refilled each run
};

/// The cuBLASLt and cuDNN plans of every gemm and conv step for one
/// binding of the symbols (the only one of a static artifact).
struct PlanSet {
  std::vector<int64_t> symbols; ///< the binding (empty: static artifact)
  std::vector<std::unique_ptr<GemmPlan>> gemm; ///< per step; null but for gemm steps
#ifdef FUSERT_HAVE_CUDNN
  std::vector<std::unique_ptr<ConvPlan>> conv; ///< per step; null but for conv steps
#endif
  size_t workspaceBytes = 0; ///< what the plans need
};

/// A run captured as a CUDA graph: for one binding and its key.
struct CapturedGraph {
  std::vector<int64_t> symbols;
  std::vector<void *> key; ///< input ptrs, output ptrs, stream
  cudaGraphExec_t exec = nullptr;
};

class CudaExecutor final : public Executor {
public:
  ~CudaExecutor() override {
    DeviceGuard guard(device_);
    destroyEvents();
    dropGraphs();
    current_ = nullptr;
    plans_.clear(); // plans destroy their descriptors before the handles go
#ifdef FUSERT_HAVE_CUDNN
    if (cudnn_)
      cudnnDestroy(cudnn_);
#endif
    if (lt_)
      cublasLtDestroy(lt_);
    for (const PaddedWeight &p : padded_)
      cudaFree(p.data);
    if (workspace_)
      cudaFree(workspace_);
    if (arena_)
      cudaFree(arena_);
    if (weights_)
      cudaFree(weights_);
    if (hostByte_)
      cudaFreeHost(hostByte_);
  }

  Status checkRunnable(const Manifest &m) override {
#ifndef FUSERT_HAVE_CUDNN
    for (size_t i = 0; i < m.steps.size(); ++i)
      if (m.steps[i].kind == StepKind::kConv)
        return invalidArgument("step ", i, " '", m.steps[i].name,
                               "': conv steps need cuDNN, and this libfusert "
                               "was built without it");
#endif
    (void)m;
    return Status();
  }

  Status prepare(fusert_model &model, const std::string &weightsPath) override {
    const Manifest &m = model.manifest;
    steps_.resize(m.steps.size());
    for (size_t i = 0; i < m.steps.size(); ++i) {
      if (m.dynamic())
        steps_[i].dynamicFn = reinterpret_cast<DynamicKernelFn>(model.symbols[i]);
      else
        steps_[i].fn = reinterpret_cast<KernelFn>(model.symbols[i]);
      steps_[i].args.resize(m.steps[i].buffers.size());
    }
    // A dynamic manifest is loaded evaluated at every symbol's minimum
    // (parseManifest): the plans built here are that binding's.
    for (const SymbolDesc &d : m.symbols)
      symbols_.push_back(d.min);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0)
      return Status(FUSERT_CUDA_ERROR,
                    strCat("no CUDA device: ",
                           err == cudaSuccess ? "device count is 0" : cudaGetErrorString(err)));
    FUSERT_RETURN_IF_ERROR(cudaStatus(cudaGetDevice(&device_), "cudaGetDevice"));
    FUSERT_RETURN_IF_ERROR(uploadWeights(weightsPath, m.weightsBytes));
    if (m.arenaBytes > 0)
      FUSERT_RETURN_IF_ERROR(
          cudaStatus(cudaMalloc(&arena_, m.arenaBytes),
                     strCat("allocating the ", m.arenaBytes, "-byte arena")));
    arenaBytes_ = m.arenaBytes;
    if (model.hasGuards) {
      FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMallocHost(reinterpret_cast<void **>(&hostByte_), 1),
                                        "allocating the guard's host byte"));
      // The If's Where reads the value of the branch not taken (and discards
      // it): zeroed once here, those bytes are defined even before any run
      // wrote them (compute-sanitizer initcheck), as the cpu arena is.
      if (arena_)
        FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMemset(arena_, 0, m.arenaBytes),
                                          "zeroing the arena of a guarded artifact"));
    }
    return createHandlesAndPlans(model);
  }

  Status bindShapes(fusert_model &model, const std::vector<int64_t> &symbols,
                    uint64_t arenaBytes) override {
    DeviceGuard guard(device_);
    if (arenaBytes > arenaBytes_) {
      // Runs in flight may still use the old arena, and every graph holds
      // its address.
      FUSERT_RETURN_IF_ERROR(cudaStatus(cudaDeviceSynchronize(),
                                        "waiting for the device before growing the arena"));
      dropGraphs();
      if (arena_)
        cudaFree(arena_);
      arena_ = nullptr;
      arenaBytes_ = 0;
      FUSERT_RETURN_IF_ERROR(
          cudaStatus(cudaMalloc(&arena_, arenaBytes),
                     strCat("allocating the ", arenaBytes, "-byte arena for this binding")));
      arenaBytes_ = arenaBytes;
      if (model.hasGuards)
        FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMemset(arena_, 0, arenaBytes_),
                                          "zeroing the arena of a guarded artifact"));
    }
    auto cached = std::find_if(plans_.begin(), plans_.end(),
                               [&](const PlanSet &p) { return p.symbols == symbols; });
    if (cached != plans_.end()) {
      plans_.splice(plans_.begin(), plans_, cached);
    } else {
      PlanSet set;
      set.symbols = symbols;
      FUSERT_RETURN_IF_ERROR(buildPlans(model, set));
      plans_.push_front(std::move(set));
      if (plans_.size() > kPlanCacheSize)
        plans_.pop_back();
    }
    current_ = &plans_.front();
    FUSERT_RETURN_IF_ERROR(ensureWorkspace(current_->workspaceBytes));
    symbols_ = symbols;
    return Status();
  }

  char *weights() const override { return static_cast<char *>(weights_); }
  char *arena() const override { return static_cast<char *>(arena_); }

  Status run(fusert_model &model, const std::vector<void *> &in, const std::vector<void *> &out,
             cudaStream_t stream) override {
    DeviceGuard guard(device_);
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (model.profile && !events_.empty()) {
      if (cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
          capturing == cudaStreamCaptureStatusNone)
        return model.runProfiled(stream);
      // Inside a caller's capture nothing can be timed: launch untimed.
      return model.runSteps(stream, /*timed=*/false);
    }
    if (model.hasGuards) {
      // Steps chosen at run time (If): the host reads each condition, which
      // no CUDA graph can contain; run the steps directly, never captured.
      if (!isLegacyStream(stream) && cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
          capturing != cudaStreamCaptureStatusNone)
        return invalidArgument("the artifact has steps guarded by run-time conditions (an If); "
                               "they cannot join the caller's CUDA graph capture");
      return model.runSteps(stream, /*timed=*/false);
    }
    if (!useGraph_ || isLegacyStream(stream) ||
        cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone) {
      // Direct launch; when the caller is capturing, the steps join its graph.
      return model.runSteps(stream, /*timed=*/false);
    }

    std::vector<void *> key = in;
    key.insert(key.end(), out.begin(), out.end());
    key.push_back(static_cast<void *>(stream));
    // One graph per binding (the symbols' values are baked into its
    // launches), most recently used first.
    auto it = std::find_if(graphs_.begin(), graphs_.end(),
                           [&](const CapturedGraph &g) { return g.symbols == symbols_; });
    if (it != graphs_.end()) {
      graphs_.splice(graphs_.begin(), graphs_, it);
      if (graphs_.front().key != key) {
        cudaGraphExecDestroy(graphs_.front().exec);
        graphs_.pop_front();
      }
    }
    if (graphs_.empty() || graphs_.front().symbols != symbols_) {
      cudaGraphExec_t exec = nullptr;
      FUSERT_RETURN_IF_ERROR(capture(model, stream, exec));
      graphs_.push_front(CapturedGraph{symbols_, key, exec});
      if (graphs_.size() > kGraphCacheSize) {
        cudaGraphExecDestroy(graphs_.back().exec);
        graphs_.pop_back();
      }
    }
    return cudaStatus(cudaGraphLaunch(graphs_.front().exec, stream), "cudaGraphLaunch");
  }

  Status runStep(fusert_model &model, size_t i, cudaStream_t stream) override {
    const StepDesc &s = model.manifest.steps[i];
    StepState &st = steps_[i];
    switch (s.kind) {
    case StepKind::kKernel: {
      for (size_t j = 0; j < s.buffers.size(); ++j)
        st.args[j] = model.at(s.buffers[j]);
      int rc = st.dynamicFn ? st.dynamicFn(st.args.data(), symbols_.data(), stream)
                            : st.fn(st.args.data(), stream);
      return cudaStatus(static_cast<cudaError_t>(rc), strCat("kernel '", s.symbol, "'"));
    }
    case StepKind::kGemm:
      return current_->gemm[i]->run(gemmPointers(model, s.gemm), workspace_, stream);
    case StepKind::kConv:
#ifdef FUSERT_HAVE_CUDNN
      FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnSetStream(cudnn_, stream), "cudnnSetStream"));
      return current_->conv[i]->run(model.at(s.conv.x), model.at(s.conv.w),
                                    model.at(s.conv.bias), model.at(s.conv.y), workspace_);
#else
      return invalidArgument("conv step without cuDNN support");
#endif
    case StepKind::kCopy:
      if (s.bytes > 0 && model.at(s.src) != model.at(s.dst))
        return cudaStatus(cudaMemcpyAsync(model.at(s.dst), model.at(s.src), s.bytes,
                                          cudaMemcpyDeviceToDevice, stream),
                          "cudaMemcpyAsync");
      return Status();
    }
    return internalError("unknown step kind");
  }

  Status fillArena(int byteValue, cudaStream_t stream) override {
    DeviceGuard guard(device_);
    return cudaStatus(cudaMemsetAsync(arena_, byteValue, arenaBytes_, stream),
                      "cudaMemsetAsync of the arena");
  }

  Status enableProfiling(bool on, size_t numSteps) override {
    if (!on || !events_.empty())
      return Status();
    DeviceGuard guard(device_);
    events_.assign(numSteps + 1, nullptr);
    for (cudaEvent_t &e : events_) {
      Status s = cudaStatus(cudaEventCreate(&e), "creating profiling events");
      if (!s.ok()) {
        destroyEvents();
        return s;
      }
    }
    return Status();
  }

  // One byte to the host: a pinned byte (allocated at load when a step has
  // a guard) copied on the stream after the steps that wrote it, then the
  // stream is synchronised. This is why a guarded artifact never captures a
  // CUDA graph (run()).
  Status readGuard(const void *addr, cudaStream_t stream, bool &value) override {
    if (!hostByte_)
      return internalError("guard read without its host byte");
    FUSERT_RETURN_IF_ERROR(cudaStatus(
        cudaMemcpyAsync(hostByte_, addr, 1, cudaMemcpyDeviceToHost, stream),
        "copying a guard condition to the host"));
    FUSERT_RETURN_IF_ERROR(cudaStatus(cudaStreamSynchronize(stream),
                                      "waiting for a guard condition"));
    value = *hostByte_ != 0;
    return Status();
  }

  Status markTime(size_t i, cudaStream_t stream) override {
    return cudaStatus(cudaEventRecord(events_[i], stream), "recording a profiling event");
  }

  Status stepTimes(std::vector<float> &us, cudaStream_t stream) override {
    (void)stream;
    FUSERT_RETURN_IF_ERROR(
        cudaStatus(cudaEventSynchronize(events_.back()), "waiting for the profiled run"));
    us.assign(events_.size() - 1, 0.0f);
    for (size_t i = 0; i < us.size(); ++i) {
      float ms = 0;
      FUSERT_RETURN_IF_ERROR(cudaStatus(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]),
                                        strCat("timing step ", i)));
      us[i] = ms * 1000.0f;
    }
    return Status();
  }

  void setCudaGraph(bool on) override {
    useGraph_ = on;
    if (!on && !graphs_.empty()) {
      DeviceGuard guard(device_);
      dropGraphs();
    }
  }

private:
  /// Captures one run of the steps on \p stream into \p exec.
  Status capture(fusert_model &model, cudaStream_t stream, cudaGraphExec_t &exec) {
    FUSERT_RETURN_IF_ERROR(
        cudaStatus(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                   "cudaStreamBeginCapture"));
    Status enqueued = model.runSteps(stream, /*timed=*/false);
    cudaGraph_t graph = nullptr;
    Status status = cudaStatus(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    if (enqueued.ok() && status.ok())
      status = cudaStatus(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    if (graph)
      cudaGraphDestroy(graph);
    if (!enqueued.ok())
      return enqueued.withContext("capturing the CUDA graph");
    if (!status.ok())
      exec = nullptr;
    return status;
  }

  /// Destroys every captured graph.
  void dropGraphs() {
    for (const CapturedGraph &g : graphs_)
      cudaGraphExecDestroy(g.exec);
    graphs_.clear();
  }

  /// Grows the workspace to at least \p bytes (never shrinks it).
  Status ensureWorkspace(size_t bytes) {
    if (bytes <= workspaceBytes_)
      return Status();
    if (workspace_) {
      FUSERT_RETURN_IF_ERROR(cudaStatus(cudaDeviceSynchronize(),
                                        "waiting for the device before growing the workspace"));
      cudaFree(workspace_);
    }
    dropGraphs();
    workspace_ = nullptr;
    workspaceBytes_ = 0;
    FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&workspace_, bytes),
                                      strCat("allocating the ", bytes, "-byte workspace")));
    workspaceBytes_ = bytes;
    return Status();
  }

  static GemmPointers gemmPointers(const fusert_model &model, const GemmDesc &g) {
    GemmPointers p;
    p.a = model.at(g.a);
    p.b = model.at(g.b);
    p.c = model.at(g.c);
    p.d = model.at(g.d);
    p.bias = model.at(g.bias);
    return p;
  }

  /// True if buffer \p id is a weight (directly or through aliases).
  static bool isWeight(const Manifest &m, int id) {
    for (size_t hops = 0; id >= 0 && hops <= m.buffers.size(); ++hops) {
      const BufferDesc &b = m.buffer(id);
      if (b.storage == Storage::kWeight)
        return true;
      if (b.storage != Storage::kAlias)
        return false;
      id = b.of;
    }
    return false;
  }

  /// The copies of B that gemm \p g's tiles want (wantedBCopies), made on
  /// the device, when B is a weight: \p out holds them with their data set
  /// (empty when B is not a weight or no tile wants one). A copy of the
  /// same weight, shift and row length made for an earlier step is reused.
  /// Errors: FUSERT_CUDA_ERROR.
  Status weightBCopies(const fusert_model &model, const GemmDesc &g,
                       std::vector<GemmBCopy> &out) {
    out.clear();
    if (!isWeight(model.manifest, g.b))
      return Status();
    const size_t elem = fusert_dtype_size(g.dtype);
    const int64_t rows = g.transB ? g.n : g.k, ld = denseLdB(g);
    const char *src = static_cast<const char *>(model.at(g.b));
    for (GemmBCopy c : wantedBCopies(g, gemmTiles(g))) {
      const char *from = src + static_cast<size_t>(c.shift) * elem;
      const int64_t width = ld - c.shift; // elements of each row copied
      for (const PaddedWeight &p : padded_)
        if (p.src == from && p.width == width && p.ld == c.ld && p.rows == rows &&
            p.elem == elem)
          c.data = p.data;
      if (!c.data) {
        const size_t bytes = static_cast<size_t>(rows * c.ld) * elem;
        void *dst = nullptr;
        FUSERT_RETURN_IF_ERROR(cudaStatus(
            cudaMalloc(&dst, bytes), strCat("allocating a ", bytes, "-byte copy of gemm B")));
        padded_.push_back(PaddedWeight{from, width, c.ld, rows, elem, dst});
        FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMemset(dst, 0, bytes), "clearing a copy of gemm B"));
        FUSERT_RETURN_IF_ERROR(cudaStatus(
            cudaMemcpy2D(dst, static_cast<size_t>(c.ld) * elem, from,
                         static_cast<size_t>(ld) * elem, static_cast<size_t>(width) * elem,
                         static_cast<size_t>(rows), cudaMemcpyDeviceToDevice),
            "copying gemm B"));
        c.data = dst;
      }
      out.push_back(c);
    }
    return Status();
  }

  void destroyEvents() {
    for (cudaEvent_t e : events_)
      if (e)
        cudaEventDestroy(e);
    events_.clear();
  }

  Status uploadWeights(const std::string &path, uint64_t size) {
    if (path.empty() || size == 0)
      return Status();
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return notFound("cannot read ", path);
    FUSERT_RETURN_IF_ERROR(
        cudaStatus(cudaMalloc(&weights_, size), strCat("allocating ", size, " weight bytes")));
    std::vector<char> chunk(std::min<uint64_t>(size, kUploadChunkBytes));
    for (uint64_t done = 0; done < size;) {
      uint64_t n = std::min<uint64_t>(chunk.size(), size - done);
      if (!in.read(chunk.data(), static_cast<std::streamsize>(n)))
        return internalError("short read of ", path, " at byte ", done);
      FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMemcpy(static_cast<char *>(weights_) + done,
                                                   chunk.data(), n, cudaMemcpyHostToDevice),
                                        "uploading weights"));
      done += n;
    }
    return Status();
  }

  /// Creates the cuBLASLt / cuDNN handles the steps need, then the plans of
  /// the manifest's binding as loaded (current_) and the workspace.
  Status createHandlesAndPlans(fusert_model &model) {
    const Manifest &m = model.manifest;
    bool hasGemm = false, hasConv = false;
    for (const StepDesc &s : m.steps) {
      hasGemm |= s.kind == StepKind::kGemm;
      hasConv |= s.kind == StepKind::kConv;
    }
    if (hasGemm)
      FUSERT_RETURN_IF_ERROR(cublasStatus(cublasLtCreate(&lt_), "cublasLtCreate"));
#ifdef FUSERT_HAVE_CUDNN
    if (hasConv)
      FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnCreate(&cudnn_), "cudnnCreate"));
#else
    (void)hasConv;
#endif
    PlanSet set;
    set.symbols = symbols_;
    FUSERT_RETURN_IF_ERROR(buildPlans(model, set));
    plans_.push_front(std::move(set));
    current_ = &plans_.front();
    return ensureWorkspace(current_->workspaceBytes);
  }

  /// Builds \p set: the plans of every gemm and conv step for the binding
  /// model.manifest is evaluated for, and the workspace they need. The
  /// handles exist. Resolves model.addr with stand-in caller pointers (a
  /// run resolves its own).
  Status buildPlans(fusert_model &model, PlanSet &set) {
    const Manifest &m = model.manifest;
    // Plans are chosen for caller buffers that are 256-byte aligned (as
    // cudaMalloc returns); GemmPlan::run re-picks if a run's are not.
    std::vector<void *> fakeIn(m.inputs.size(), reinterpret_cast<void *>(uintptr_t{1} << 20));
    std::vector<void *> fakeOut(m.outputs.size(), reinterpret_cast<void *>(uintptr_t{1} << 20));
    model.resolveAll(fakeIn, fakeOut);
    set.gemm.resize(m.steps.size());
#ifdef FUSERT_HAVE_CUDNN
    set.conv.resize(m.steps.size());
#endif
    set.workspaceBytes = 0;
    for (size_t i = 0; i < m.steps.size(); ++i) {
      const StepDesc &s = m.steps[i];
      const std::string where = strCat("step ", i, " '", s.name, "'");
      if (s.kind == StepKind::kGemm) {
        set.gemm[i] = std::make_unique<GemmPlan>();
        std::vector<GemmBCopy> copies;
        FUSERT_RETURN_IF_ERROR(weightBCopies(model, s.gemm, copies).withContext(where));
        FUSERT_RETURN_IF_ERROR(
            set.gemm[i]
                ->init(lt_, s.gemm, gemmPointers(model, s.gemm), kGemmWorkspaceBytes, copies)
                .withContext(where));
        set.workspaceBytes = std::max(set.workspaceBytes, kGemmWorkspaceBytes);
      }
#ifdef FUSERT_HAVE_CUDNN
      if (s.kind == StepKind::kConv) {
        set.conv[i] = std::make_unique<ConvPlan>();
        FUSERT_RETURN_IF_ERROR(
            set.conv[i]->init(cudnn_, s.conv, kConvWorkspaceLimit).withContext(where));
        set.workspaceBytes = std::max(set.workspaceBytes, set.conv[i]->workspaceBytes());
      }
#endif
    }
    return Status();
  }

  int device_ = 0;
  void *weights_ = nullptr; ///< device copy of weights.bin
  void *arena_ = nullptr;
  uint64_t arenaBytes_ = 0;
  void *workspace_ = nullptr; ///< shared by cuBLASLt and cuDNN steps
  size_t workspaceBytes_ = 0;
  cublasLtHandle_t lt_ = nullptr;
#ifdef FUSERT_HAVE_CUDNN
  cudnnHandle_t cudnn_ = nullptr;
#endif
  /// A copy of a weight B (weightBCopies): `rows` rows of `width` elements
  /// from `src` (row pitch the dense one), written `ld` elements apart.
  struct PaddedWeight {
    const char *src;
    int64_t width, ld, rows;
    size_t elem;
    void *data; ///< owned: freed with the executor
  };
  std::vector<PaddedWeight> padded_;
  std::vector<StepState> steps_;
  /// Dynamic shapes: the bound symbols the kernels read (empty for a
  /// static artifact).
  std::vector<int64_t> symbols_;
  /// Plan sets, most recently used first (at most kPlanCacheSize; one for
  /// a static artifact); current_ is the binding's, the front.
  std::list<PlanSet> plans_;
  PlanSet *current_ = nullptr;
  bool useGraph_ = false;
  unsigned char *hostByte_ = nullptr; ///< pinned; guard reads (readGuard)
  /// Captured runs, most recently used first (at most kGraphCacheSize).
  std::list<CapturedGraph> graphs_;
  std::vector<cudaEvent_t> events_; ///< one before each step, one after the last
};

} // namespace

Status makeCudaExecutor(std::unique_ptr<Executor> &out) {
  out = std::make_unique<CudaExecutor>();
  return Status();
}

} // namespace fusec::rt
