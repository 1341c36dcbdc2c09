//===- Runtime.cpp - libfusert's C API: load an artifact and run it -===//
//
// fusert_load checks everything it can before touching the device (manifest,
// library, symbols, weights file), then uploads the weights, allocates the
// arena and workspace and builds the cuBLASLt / cuDNN plans. fusert_run binds
// the caller's tensors, resolves every buffer to a device address and
// enqueues the steps, directly or through a captured CUDA graph.
// No exception leaves this file: each API function catches at its boundary.
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "fusert/fusert.h"
#include "runtime/internal/Checksum.h"
#include "runtime/internal/CudaStatus.h"
#include "runtime/internal/GemmPlan.h"
#include "runtime/internal/Manifest.h"
#include "runtime/internal/Profile.h"
#ifdef FUSERT_HAVE_CUDNN
#include "runtime/internal/ConvPlan.h"
#endif

using namespace fusec::rt;

namespace {

thread_local std::string tLastError;

/// Signature of a generated kernel symbol (docs/ARTIFACT.md).
using KernelFn = int (*)(void *const *buffers, cudaStream_t stream);

constexpr size_t kGemmWorkspaceBytes = 32u << 20;
constexpr size_t kConvWorkspaceLimit = 256u << 20;
constexpr size_t kUploadChunkBytes = 64u << 20;

/// Per-step state built at load.
struct StepState {
  KernelFn fn = nullptr;
  std::vector<void *> args; ///< kernel argument array, refilled each run
  std::unique_ptr<GemmPlan> gemm;
#ifdef FUSERT_HAVE_CUDNN
  std::unique_ptr<ConvPlan> conv;
#endif
};

fusert_status fail(const Status &s) {
  tLastError = s.message();
  return s.code();
}

std::string joinPath(const std::string &dir, const std::string &file) {
  if (!file.empty() && file[0] == '/')
    return file;
  return dir.empty() || dir.back() == '/' ? dir + file : dir + "/" + file;
}

bool fileSize(const std::string &path, uint64_t &size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  size = static_cast<uint64_t>(st.st_size);
  return true;
}

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

} // namespace

struct fusert_model {
  std::string dir;
  Manifest manifest;
  void *library = nullptr;
  int device = 0;
  void *weights = nullptr; ///< device copy of weights.bin
  void *arena = nullptr;
  void *workspace = nullptr; ///< shared by cuBLASLt and cuDNN steps
  size_t workspaceBytes = 0;
  cublasLtHandle_t lt = nullptr;
#ifdef FUSERT_HAVE_CUDNN
  cudnnHandle_t cudnn = nullptr;
#endif
  std::vector<StepState> steps;
  std::vector<void *> addr; ///< device address per buffer (file order)

  // CUDA graph state.
  bool useGraph = false;
  cudaGraphExec_t graphExec = nullptr;
  std::vector<void *> graphKey; ///< input ptrs, output ptrs, stream

  // Profiling state (fusert_enable_profiling).
  bool profile = false;
  std::vector<cudaEvent_t> profEvents; ///< one before each step, one after the last
  StepProfile profSamples;

  ~fusert_model() {
    DeviceGuard guard(device);
    destroyProfEvents();
    if (graphExec)
      cudaGraphExecDestroy(graphExec);
    steps.clear(); // plans destroy their descriptors before the handles go
#ifdef FUSERT_HAVE_CUDNN
    if (cudnn)
      cudnnDestroy(cudnn);
#endif
    if (lt)
      cublasLtDestroy(lt);
    if (workspace)
      cudaFree(workspace);
    if (arena)
      cudaFree(arena);
    if (weights)
      cudaFree(weights);
    if (library)
      dlclose(library);
  }

  /// Device address of buffer at position \p i, given the bound caller
  /// pointers. Aliases are resolved through their chain (checked acyclic).
  char *resolve(size_t i, const std::vector<void *> &in,
                const std::vector<void *> &out) const {
    const BufferDesc &b = manifest.buffers[i];
    switch (b.storage) {
    case Storage::kInput:
      return static_cast<char *>(in[b.index]);
    case Storage::kOutput:
      return static_cast<char *>(out[b.index]);
    case Storage::kWeight:
      return static_cast<char *>(weights) + b.offset;
    case Storage::kArena:
      return static_cast<char *>(arena) + b.offset;
    case Storage::kAlias:
      return resolve(manifest.bufferIndex(b.of), in, out) + b.offset;
    }
    return nullptr;
  }

  void resolveAll(const std::vector<void *> &in,
                  const std::vector<void *> &out) {
    addr.resize(manifest.buffers.size());
    for (size_t i = 0; i < addr.size(); ++i)
      addr[i] = resolve(i, in, out);
  }

  void *at(int id) const { return id < 0 ? nullptr : addr[manifest.bufferIndex(id)]; }

  GemmPointers gemmPointers(const GemmDesc &g) const {
    GemmPointers p;
    p.a = at(g.a);
    p.b = at(g.b);
    p.c = at(g.c);
    p.d = at(g.d);
    p.bias = at(g.bias);
    return p;
  }

  Status load();
  Status enableProfiling(bool on);
  void destroyProfEvents() {
    for (cudaEvent_t e : profEvents)
      if (e)
        cudaEventDestroy(e);
    profEvents.clear();
  }
  Status runProfiled(cudaStream_t stream);
  Status verifyChecksums();
  Status loadLibrary();
  Status checkWeightsFile();
  Status uploadWeights();
  Status buildPlans();
  Status enqueue(cudaStream_t stream);
};

/// Recomputes the checksum of every file the manifest lists one for (the
/// library, the weights) before anything is dlopened or uploaded.
Status fusert_model::verifyChecksums() {
  for (const auto &[file, want] : manifest.checksums) {
    std::string path = joinPath(dir, file);
    uint64_t size = 0;
    if (!fileSize(path, size))
      return notFound(file, " not found in ", dir);
    std::string got;
    if (!fusec::artifact_checksum::fileChecksum(path, got))
      return invalidArgument("cannot read ", path);
    if (got != want)
      return invalidArgument(path, " does not match the manifest's checksum (", got,
                             " != ", want, "): the artifact was modified or mixed "
                             "with another; recompile it");
  }
  return Status();
}

Status fusert_model::loadLibrary() {
  bool hasKernels = std::any_of(
      manifest.steps.begin(), manifest.steps.end(),
      [](const StepDesc &s) { return s.kind == StepKind::kKernel; });
  if (manifest.library.empty() || !hasKernels)
    return Status();
  std::string path = joinPath(dir, manifest.library);
  uint64_t size = 0;
  if (!fileSize(path, size))
    return notFound("library ", path, " not found");
  library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *err = dlerror();
    return invalidArgument("cannot load ", path, ": ", err ? err : "dlopen failed");
  }
  steps.resize(manifest.steps.size());
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    const StepDesc &s = manifest.steps[i];
    if (s.kind != StepKind::kKernel)
      continue;
    dlerror();
    void *sym = dlsym(library, s.symbol.c_str());
    if (!sym)
      return notFound("step ", i, " '", s.name, "': symbol '", s.symbol,
                      "' not found in ", manifest.library);
    steps[i].fn = reinterpret_cast<KernelFn>(sym);
    steps[i].args.resize(s.buffers.size());
  }
  return Status();
}

Status fusert_model::checkWeightsFile() {
  if (manifest.weightsFile.empty())
    return Status();
  std::string path = joinPath(dir, manifest.weightsFile);
  uint64_t size = 0;
  if (!fileSize(path, size))
    return notFound("weights file ", path, " not found");
  if (size != manifest.weightsBytes)
    return invalidArgument("weights file ", path, " has ", size,
                           " bytes, the manifest says ", manifest.weightsBytes);
  return Status();
}

Status fusert_model::uploadWeights() {
  uint64_t size = manifest.weightsBytes;
  if (manifest.weightsFile.empty() || size == 0)
    return Status();
  std::string path = joinPath(dir, manifest.weightsFile);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound("cannot read ", path);
  FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&weights, size),
                                    strCat("allocating ", size, " weight bytes")));
  std::vector<char> chunk(std::min<uint64_t>(size, kUploadChunkBytes));
  for (uint64_t done = 0; done < size;) {
    uint64_t n = std::min<uint64_t>(chunk.size(), size - done);
    if (!in.read(chunk.data(), static_cast<std::streamsize>(n)))
      return internalError("short read of ", path, " at byte ", done);
    FUSERT_RETURN_IF_ERROR(
        cudaStatus(cudaMemcpy(static_cast<char *>(weights) + done, chunk.data(),
                              n, cudaMemcpyHostToDevice),
                   "uploading weights"));
    done += n;
  }
  return Status();
}

Status fusert_model::buildPlans() {
  steps.resize(manifest.steps.size());
  bool hasGemm = false, hasConv = false;
  for (const StepDesc &s : manifest.steps) {
    hasGemm |= s.kind == StepKind::kGemm;
    hasConv |= s.kind == StepKind::kConv;
  }
  // Plans are chosen for caller buffers that are 256-byte aligned (as
  // cudaMalloc returns); GemmPlan::run re-picks if a run's are not.
  std::vector<void *> fakeIn(manifest.inputs.size(),
                             reinterpret_cast<void *>(uintptr_t{1} << 20));
  std::vector<void *> fakeOut(manifest.outputs.size(),
                              reinterpret_cast<void *>(uintptr_t{1} << 20));
  resolveAll(fakeIn, fakeOut);
  if (hasGemm) {
    FUSERT_RETURN_IF_ERROR(cublasStatus(cublasLtCreate(&lt), "cublasLtCreate"));
    workspaceBytes = kGemmWorkspaceBytes;
    for (size_t i = 0; i < manifest.steps.size(); ++i) {
      const StepDesc &s = manifest.steps[i];
      if (s.kind != StepKind::kGemm)
        continue;
      steps[i].gemm = std::make_unique<GemmPlan>();
      FUSERT_RETURN_IF_ERROR(
          steps[i]
              .gemm->init(lt, s.gemm, gemmPointers(s.gemm), kGemmWorkspaceBytes)
              .withContext(strCat("step ", i, " '", s.name, "'")));
    }
  }
  if (hasConv) {
#ifdef FUSERT_HAVE_CUDNN
    FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnCreate(&cudnn), "cudnnCreate"));
    for (size_t i = 0; i < manifest.steps.size(); ++i) {
      const StepDesc &s = manifest.steps[i];
      if (s.kind != StepKind::kConv)
        continue;
      steps[i].conv = std::make_unique<ConvPlan>();
      FUSERT_RETURN_IF_ERROR(
          steps[i]
              .conv->init(cudnn, s.conv, kConvWorkspaceLimit)
              .withContext(strCat("step ", i, " '", s.name, "'")));
      workspaceBytes = std::max(workspaceBytes, steps[i].conv->workspaceBytes());
    }
#endif
  }
  if (workspaceBytes > 0)
    FUSERT_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&workspace, workspaceBytes),
                                      "allocating the workspace"));
  return Status();
}

Status fusert_model::load() {
  FUSERT_RETURN_IF_ERROR(loadManifestFile(joinPath(dir, "manifest.json"), manifest));
#ifndef FUSERT_HAVE_CUDNN
  for (size_t i = 0; i < manifest.steps.size(); ++i)
    if (manifest.steps[i].kind == StepKind::kConv)
      return invalidArgument("step ", i, " '", manifest.steps[i].name,
                             "': conv steps need cuDNN, and this libfusert "
                             "was built without it");
#endif
  FUSERT_RETURN_IF_ERROR(verifyChecksums());
  FUSERT_RETURN_IF_ERROR(loadLibrary());
  FUSERT_RETURN_IF_ERROR(checkWeightsFile());
  profSamples.reset(manifest.steps.size());
  // Everything above runs without a GPU; from here on we need one.
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    return Status(FUSERT_CUDA_ERROR,
                  strCat("no CUDA device: ",
                         err == cudaSuccess ? "device count is 0"
                                            : cudaGetErrorString(err)));
  FUSERT_RETURN_IF_ERROR(cudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  FUSERT_RETURN_IF_ERROR(uploadWeights());
  if (manifest.arenaBytes > 0)
    FUSERT_RETURN_IF_ERROR(cudaStatus(
        cudaMalloc(&arena, manifest.arenaBytes),
        strCat("allocating the ", manifest.arenaBytes, "-byte arena")));
  FUSERT_RETURN_IF_ERROR(buildPlans());
  const char *env = std::getenv("FUSERT_PROFILE");
  if (env && std::strcmp(env, "1") == 0)
    FUSERT_RETURN_IF_ERROR(enableProfiling(true));
  return Status();
}

Status fusert_model::enableProfiling(bool on) {
  profile = on;
  profSamples.reset(manifest.steps.size());
  if (!on || !profEvents.empty())
    return Status();
  profEvents.assign(manifest.steps.size() + 1, nullptr);
  for (cudaEvent_t &e : profEvents) {
    Status s = cudaStatus(cudaEventCreate(&e), "creating profiling events");
    if (!s.ok()) {
      destroyProfEvents();
      profile = false;
      return s;
    }
  }
  return Status();
}

Status fusert_model::runProfiled(cudaStream_t stream) {
  FUSERT_RETURN_IF_ERROR(enqueue(stream));
  cudaEvent_t last = profEvents.back();
  FUSERT_RETURN_IF_ERROR(
      cudaStatus(cudaEventSynchronize(last), "waiting for the profiled run"));
  std::vector<float> us(manifest.steps.size());
  for (size_t i = 0; i < us.size(); ++i) {
    float ms = 0;
    FUSERT_RETURN_IF_ERROR(cudaStatus(
        cudaEventElapsedTime(&ms, profEvents[i], profEvents[i + 1]),
        strCat("timing step ", i, " '", manifest.steps[i].name, "'")));
    us[i] = ms * 1000.0f;
  }
  profSamples.addRun(us);
  return Status();
}

Status fusert_model::enqueue(cudaStream_t stream) {
  // Events only when profiling outside a capture (runProfiled reads them).
  const bool timed = profile && !profEvents.empty();
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    const StepDesc &s = manifest.steps[i];
    StepState &st = steps[i];
    Status status;
    if (timed)
      FUSERT_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(profEvents[i], stream),
                                        "recording a profiling event"));
    switch (s.kind) {
    case StepKind::kKernel: {
      for (size_t j = 0; j < s.buffers.size(); ++j)
        st.args[j] = at(s.buffers[j]);
      int rc = st.fn(st.args.data(), stream);
      status = cudaStatus(static_cast<cudaError_t>(rc),
                          strCat("kernel '", s.symbol, "'"));
      break;
    }
    case StepKind::kGemm:
      status = st.gemm->run(gemmPointers(s.gemm), workspace, stream);
      break;
    case StepKind::kConv:
#ifdef FUSERT_HAVE_CUDNN
      status = cudnnStatus(cudnnSetStream(cudnn, stream), "cudnnSetStream");
      if (status.ok())
        status = st.conv->run(at(s.conv.x), at(s.conv.w), at(s.conv.bias),
                              at(s.conv.y), workspace);
#else
      status = invalidArgument("conv step without cuDNN support");
#endif
      break;
    case StepKind::kCopy:
      if (s.bytes > 0 && at(s.src) != at(s.dst))
        status = cudaStatus(cudaMemcpyAsync(at(s.dst), at(s.src), s.bytes,
                                            cudaMemcpyDeviceToDevice, stream),
                            "cudaMemcpyAsync");
      break;
    }
    if (!status.ok())
      return status.withContext(strCat("step ", i, " '", s.name, "'"));
  }
  if (timed)
    FUSERT_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(profEvents.back(), stream),
                                      "recording a profiling event"));
  return Status();
}

namespace {

/// Runs \p body, turning any escaping exception into FUSERT_INTERNAL.
template <typename F> fusert_status guarded(F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(internalError("out of host memory"));
  } catch (const std::exception &e) {
    return fail(internalError("unexpected exception: ", e.what()));
  } catch (...) {
    return fail(internalError("unexpected exception"));
  }
}

fusert_status tensorInfo(const fusert_model *model, size_t index, bool input,
                         const char **name, fusert_dtype *dtype, int *rank,
                         const int64_t **shape) {
  if (!model)
    return fail(invalidArgument("model is NULL"));
  const auto &list = input ? model->manifest.inputs : model->manifest.outputs;
  if (index >= list.size())
    return fail(invalidArgument(input ? "input" : "output", " index ", index,
                                " out of range (model has ", list.size(), ")"));
  const TensorDesc &t = list[index];
  if (name)
    *name = t.name.c_str();
  if (dtype)
    *dtype = t.dtype;
  if (rank)
    *rank = static_cast<int>(t.shape.size());
  if (shape)
    *shape = t.shape.data();
  return FUSERT_OK;
}

bool isLegacyStream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy;
}

} // namespace

extern "C" {

const char *fusert_last_error(void) { return tLastError.c_str(); }

const char *fusert_status_name(fusert_status status) {
  switch (status) {
  case FUSERT_OK:
    return "FUSERT_OK";
  case FUSERT_INVALID_ARGUMENT:
    return "FUSERT_INVALID_ARGUMENT";
  case FUSERT_NOT_FOUND:
    return "FUSERT_NOT_FOUND";
  case FUSERT_CUDA_ERROR:
    return "FUSERT_CUDA_ERROR";
  case FUSERT_CUBLAS_ERROR:
    return "FUSERT_CUBLAS_ERROR";
  case FUSERT_CUDNN_ERROR:
    return "FUSERT_CUDNN_ERROR";
  case FUSERT_INTERNAL:
    return "FUSERT_INTERNAL";
  }
  return "FUSERT_UNKNOWN_STATUS";
}

fusert_status fusert_load(const char *artifact_dir, fusert_model **out) {
  return guarded([&] {
    if (!out)
      return fail(invalidArgument("fusert_load: out is NULL"));
    *out = nullptr;
    if (!artifact_dir)
      return fail(invalidArgument("fusert_load: artifact_dir is NULL"));
    auto model = std::make_unique<fusert_model>();
    model->dir = artifact_dir;
    Status status = model->load();
    if (!status.ok())
      return fail(status);
    *out = model.release();
    return FUSERT_OK;
  });
}

void fusert_unload(fusert_model *model) {
  try {
    const char *path = std::getenv("FUSERT_PROFILE_JSON");
    if (model && model->profile && path && *path && model->profSamples.runs() > 0) {
      std::ofstream f(path, std::ios::trunc);
      f << formatProfileJson(model->manifest, model->profSamples) << "\n";
      if (!f)
        std::fprintf(stderr, "libfusert: cannot write the profile to %s\n", path);
    }
    delete model;
  } catch (...) {
    // Destructors of the plans and handles do not throw; nothing to report.
  }
}

size_t fusert_num_inputs(const fusert_model *model) {
  return model ? model->manifest.inputs.size() : 0;
}

size_t fusert_num_outputs(const fusert_model *model) {
  return model ? model->manifest.outputs.size() : 0;
}

fusert_status fusert_input_info(const fusert_model *model, size_t index,
                                const char **name, fusert_dtype *dtype,
                                int *rank, const int64_t **shape) {
  return tensorInfo(model, index, /*input=*/true, name, dtype, rank, shape);
}

fusert_status fusert_output_info(const fusert_model *model, size_t index,
                                 const char **name, fusert_dtype *dtype,
                                 int *rank, const int64_t **shape) {
  return tensorInfo(model, index, /*input=*/false, name, dtype, rank, shape);
}

fusert_status fusert_enable_cuda_graph(fusert_model *model, int on) {
  if (!model)
    return fail(invalidArgument("model is NULL"));
  model->useGraph = on != 0;
  if (!model->useGraph && model->graphExec) {
    DeviceGuard guard(model->device);
    cudaGraphExecDestroy(model->graphExec);
    model->graphExec = nullptr;
    model->graphKey.clear();
  }
  return FUSERT_OK;
}

fusert_status fusert_fill_arena(fusert_model *model, int byte_value,
                                cudaStream_t stream) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    if (byte_value < 0 || byte_value > 255)
      return fail(invalidArgument("fusert_fill_arena: byte value ", byte_value,
                                  " is not in 0..255"));
    if (!model->arena || model->manifest.arenaBytes == 0)
      return FUSERT_OK;
    DeviceGuard guard(model->device);
    Status status = cudaStatus(cudaMemsetAsync(model->arena, byte_value,
                                               model->manifest.arenaBytes, stream),
                               "cudaMemsetAsync of the arena");
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

fusert_status fusert_enable_profiling(fusert_model *model, int on) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    DeviceGuard guard(model->device);
    Status status = model->enableProfiling(on != 0);
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

fusert_status fusert_profile_report(const fusert_model *model, char *buf,
                                    size_t size, size_t *needed) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    std::string text = formatProfileJson(model->manifest, model->profSamples);
    if (needed)
      *needed = text.size() + 1;
    if (!buf && size == 0)
      return FUSERT_OK;
    if (!buf || size < text.size() + 1)
      return fail(invalidArgument("fusert_profile_report: buffer of ", size,
                                  " bytes is too small, the report needs ",
                                  text.size() + 1));
    std::memcpy(buf, text.c_str(), text.size() + 1);
    return FUSERT_OK;
  });
}

fusert_status fusert_run(fusert_model *model, const fusert_tensor *inputs,
                         size_t num_inputs, fusert_tensor *outputs,
                         size_t num_outputs, cudaStream_t stream) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    std::vector<void *> in, out;
    Status status = bindTensors(model->manifest, inputs, num_inputs, outputs,
                                num_outputs, in, out);
    if (!status.ok())
      return fail(status);
    DeviceGuard guard(model->device);
    model->resolveAll(in, out);

    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (model->profile && !model->profEvents.empty()) {
      if (cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
          capturing == cudaStreamCaptureStatusNone) {
        status = model->runProfiled(stream);
      } else {
        // Inside a caller's capture nothing can be timed: launch untimed.
        model->profile = false;
        status = model->enqueue(stream);
        model->profile = true;
      }
      return status.ok() ? FUSERT_OK : fail(status);
    }
    if (!model->useGraph || isLegacyStream(stream) ||
        cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone) {
      // Direct launch; when the caller is capturing, the steps join its graph.
      status = model->enqueue(stream);
      return status.ok() ? FUSERT_OK : fail(status);
    }

    std::vector<void *> key = in;
    key.insert(key.end(), out.begin(), out.end());
    key.push_back(static_cast<void *>(stream));
    if (!model->graphExec || key != model->graphKey) {
      if (model->graphExec) {
        cudaGraphExecDestroy(model->graphExec);
        model->graphExec = nullptr;
      }
      status = cudaStatus(
          cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
      if (!status.ok())
        return fail(status);
      Status enqueued = model->enqueue(stream);
      cudaGraph_t graph = nullptr;
      status = cudaStatus(cudaStreamEndCapture(stream, &graph),
                          "cudaStreamEndCapture");
      if (enqueued.ok() && status.ok())
        status = cudaStatus(cudaGraphInstantiate(&model->graphExec, graph, 0),
                            "cudaGraphInstantiate");
      if (graph)
        cudaGraphDestroy(graph);
      if (!enqueued.ok())
        return fail(enqueued.withContext("capturing the CUDA graph"));
      if (!status.ok()) {
        model->graphExec = nullptr;
        return fail(status);
      }
      model->graphKey = key;
    }
    status = cudaStatus(cudaGraphLaunch(model->graphExec, stream),
                        "cudaGraphLaunch");
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

} // extern "C"
