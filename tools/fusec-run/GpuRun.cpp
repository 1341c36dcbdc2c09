//===- GpuRun.cpp - fusec-run OUT --data DIR: run a cuda or cpu artifact --===//
//
// One runner for both libfusert targets: the session, the input checks,
// the comparison lines and the benchmark are shared; what differs (where
// the tensors live, how a run is synchronised and timed) is a TensorMemory:
// CudaMemory (device buffers, one non-blocking stream, CUDA events, CUDA
// graphs on) or HostMemory (64-byte aligned host buffers, steady_clock).
//
//===----------------------------------------------------------------------===//
#include "tools/fusec-run/GpuRun.h"
#include "tools/fusec-run/TestData.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/OnnxImporter.h"
#include "interp/Compare.h"
#include "runtime/internal/Checksum.h"
#include "ir/Tensor.h"
#include "support/Escape.h"
#include "support/Status.h"

#ifdef FUSEC_HAVE_RUNTIME
#ifdef FUSEC_HAVE_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif

#include "fusert/fusert.h"
#endif

namespace fusec::tools {

namespace fs = std::filesystem;

namespace {

/// Prints the error and the FAIL line; \returns 1.
int fail(const std::string &artifactDir, const std::string &msg) {
  std::fprintf(stderr, "fusec-run: error: %s\n", printableLines(msg).c_str());
  std::printf("FAIL %s: %s\n", printable(artifactDir).c_str(), printable(msg).c_str());
  return 1;
}

}  // namespace

#ifndef FUSEC_HAVE_RUNTIME

bool gpuRunAvailable() { return false; }

int runArtifact(const std::string &artifactDir, const std::string &dataDir, int benchIters,
                double atol, double rtol, bool poison) {
  return fail(artifactDir,
              "this fusec-run was built without libfusert; it cannot run artifacts");
}

#else

bool gpuRunAvailable() { return true; }

namespace {

/// Maps an IR dtype to the runtime's; false for types artifacts do not have.
bool toFusert(ir::DType t, fusert_dtype &out) {
  switch (t) {
    case ir::DType::kF32: out = FUSERT_F32; return true;
    case ir::DType::kF16: out = FUSERT_F16; return true;
    case ir::DType::kBF16: out = FUSERT_BF16; return true;
    case ir::DType::kF64: out = FUSERT_F64; return true;
    case ir::DType::kI64: out = FUSERT_I64; return true;
    case ir::DType::kI32: out = FUSERT_I32; return true;
    case ir::DType::kI8: out = FUSERT_I8; return true;
    case ir::DType::kU8: out = FUSERT_U8; return true;
    case ir::DType::kBool: out = FUSERT_BOOL; return true;
    case ir::DType::kI16: out = FUSERT_I16; return true;
    case ir::DType::kU16: out = FUSERT_U16; return true;
    case ir::DType::kU32: out = FUSERT_U32; return true;
    case ir::DType::kU64: out = FUSERT_U64; return true;
    case ir::DType::kF8E4M3FN: out = FUSERT_F8E4M3FN; return true;
    case ir::DType::kF8E4M3FNUZ: out = FUSERT_F8E4M3FNUZ; return true;
    case ir::DType::kF8E5M2: out = FUSERT_F8E5M2; return true;
    case ir::DType::kF8E5M2FNUZ: out = FUSERT_F8E5M2FNUZ; return true;
    default: return false;
  }
}

bool fromFusert(fusert_dtype t, ir::DType &out) {
  switch (t) {
    case FUSERT_F32: out = ir::DType::kF32; return true;
    case FUSERT_F16: out = ir::DType::kF16; return true;
    case FUSERT_BF16: out = ir::DType::kBF16; return true;
    case FUSERT_F64: out = ir::DType::kF64; return true;
    case FUSERT_I64: out = ir::DType::kI64; return true;
    case FUSERT_I32: out = ir::DType::kI32; return true;
    case FUSERT_I8: out = ir::DType::kI8; return true;
    case FUSERT_U8: out = ir::DType::kU8; return true;
    case FUSERT_BOOL: out = ir::DType::kBool; return true;
    case FUSERT_I16: out = ir::DType::kI16; return true;
    case FUSERT_U16: out = ir::DType::kU16; return true;
    case FUSERT_U32: out = ir::DType::kU32; return true;
    case FUSERT_U64: out = ir::DType::kU64; return true;
    case FUSERT_F8E4M3FN: out = ir::DType::kF8E4M3FN; return true;
    case FUSERT_F8E4M3FNUZ: out = ir::DType::kF8E4M3FNUZ; return true;
    case FUSERT_F8E5M2: out = ir::DType::kF8E5M2; return true;
    case FUSERT_F8E5M2FNUZ: out = ir::DType::kF8E5M2FNUZ; return true;
  }
  return false;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) absl::StrAppend(&out, i ? "," : "", s[i]);
  return out + "]";
}

std::string fusertMsg(fusert_status s) {
  return absl::StrCat(fusert_status_name(s), ": ", fusert_last_error());
}

/// Where a target's tensors live and how its runs are synchronised and
/// timed.
class TensorMemory {
 public:
  virtual ~TensorMemory() = default;
  /// A buffer of \p bytes (at least 1, so that every tensor has its own).
  virtual absl::StatusOr<void *> allocate(size_t bytes, const std::string &what) = 0;
  virtual void release(void *p) = 0;
  virtual absl::Status upload(void *dst, const void *src, size_t bytes, const std::string &what) = 0;
  virtual absl::Status download(void *dst, const void *src, size_t bytes,
                                const std::string &what) = 0;
  /// Sets \p bytes at \p p to \p value (in order with the runs).
  virtual absl::Status fill(void *p, int value, size_t bytes, const std::string &what) = 0;
  /// The stream runs go to (nullptr for cpu).
  virtual cudaStream_t stream() const = 0;
  /// Waits for every queued run.
  virtual absl::Status synchronize(const std::string &what) = 0;
  /// Times \p run (one fusert_run) in milliseconds, to completion.
  virtual absl::StatusOr<float> timeRun(const std::function<absl::Status()> &run) = 0;
  /// Sets the model up for timing (CUDA graphs on).
  virtual absl::Status configure(fusert_model *model) = 0;
  /// How the runs were made, for the latency line.
  virtual std::string benchMode(const fusert_model *model) const = 0;
};

/// cpu artifacts: 64-byte aligned host buffers, synchronous runs.
class HostMemory final : public TensorMemory {
 public:
  absl::StatusOr<void *> allocate(size_t bytes, const std::string &what) override {
    size_t size = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, size);
    if (!p)
      return absl::ResourceExhaustedError(absl::StrCat("allocating ", bytes, " bytes for ", what));
    return p;
  }
  void release(void *p) override { std::free(p); }
  // A zero-size tensor has no bytes and its host vector may hold no pointer:
  // memcpy/memset with a null argument are undefined even for 0 bytes.
  absl::Status upload(void *dst, const void *src, size_t bytes, const std::string &) override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status download(void *dst, const void *src, size_t bytes, const std::string &) override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status fill(void *p, int value, size_t bytes, const std::string &) override {
    if (bytes != 0) std::memset(p, value, bytes);
    return absl::OkStatus();
  }
  cudaStream_t stream() const override { return nullptr; }
  absl::Status synchronize(const std::string &) override { return absl::OkStatus(); }
  absl::StatusOr<float> timeRun(const std::function<absl::Status()> &run) override {
    auto t0 = std::chrono::steady_clock::now();
    FUSEC_RETURN_IF_ERROR(run());
    return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  absl::Status configure(fusert_model *) override { return absl::OkStatus(); }
  std::string benchMode(const fusert_model *model) const override {
    int n = fusert_num_threads(model);
    return absl::StrCat("cpu, ", n, n == 1 ? " thread" : " threads");
  }
};

#ifdef FUSEC_HAVE_CUDA_RUNTIME
std::string cudaMsg(cudaError_t e) {
  return absl::StrCat(cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

/// cuda artifacts: device buffers, one non-blocking stream, CUDA events.
class CudaMemory final : public TensorMemory {
 public:
  ~CudaMemory() override {
    if (stream_) cudaStreamSynchronize(stream_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  absl::Status init() {
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0)
      return absl::FailedPreconditionError(absl::StrCat(
          "no CUDA device (", e != cudaSuccess ? cudaMsg(e) : "0 devices",
          "): running an artifact needs a GPU; use --reference to check the model on the CPU"));
    if ((e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess)
      return absl::InternalError(absl::StrCat("cudaStreamCreate: ", cudaMsg(e)));
    if ((e = cudaEventCreate(&start_)) != cudaSuccess || (e = cudaEventCreate(&stop_)) != cudaSuccess)
      return absl::InternalError(absl::StrCat("cudaEventCreate: ", cudaMsg(e)));
    return absl::OkStatus();
  }
  absl::StatusOr<void *> allocate(size_t bytes, const std::string &what) override {
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 1));
    if (e != cudaSuccess)
      return absl::ResourceExhaustedError(
          absl::StrCat("cudaMalloc of ", bytes, " bytes for ", what, ": ", cudaMsg(e)));
    return p;
  }
  void release(void *p) override { cudaFree(p); }
  absl::Status upload(void *dst, const void *src, size_t bytes, const std::string &what) override {
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return absl::InternalError(absl::StrCat("uploading ", what, ": ", cudaMsg(e)));
    return absl::OkStatus();
  }
  absl::Status download(void *dst, const void *src, size_t bytes, const std::string &what) override {
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
      return absl::InternalError(absl::StrCat("downloading ", what, ": ", cudaMsg(e)));
    return absl::OkStatus();
  }
  absl::Status fill(void *p, int value, size_t bytes, const std::string &what) override {
    cudaError_t e = cudaMemsetAsync(p, value, bytes, stream_);
    if (e != cudaSuccess) return absl::InternalError(absl::StrCat("poisoning ", what, ": ", cudaMsg(e)));
    return absl::OkStatus();
  }
  cudaStream_t stream() const override { return stream_; }
  absl::Status synchronize(const std::string &what) override {
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) return absl::InternalError(absl::StrCat(what, ": ", cudaMsg(e)));
    return absl::OkStatus();
  }
  absl::StatusOr<float> timeRun(const std::function<absl::Status()> &run) override {
    cudaEventRecord(start_, stream_);
    FUSEC_RETURN_IF_ERROR(run());
    cudaEventRecord(stop_, stream_);
    cudaError_t e = cudaEventSynchronize(stop_);
    if (e != cudaSuccess) return absl::InternalError(absl::StrCat("timed run: ", cudaMsg(e)));
    float t = 0;
    cudaEventElapsedTime(&t, start_, stop_);
    return t;
  }
  absl::Status configure(fusert_model *model) override {
    fusert_status s = fusert_enable_cuda_graph(model, 1);
    if (s != FUSERT_OK) return absl::InternalError(fusertMsg(s));
    return absl::OkStatus();
  }
  std::string benchMode(const fusert_model *) const override { return "CUDA graph"; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};
#endif  // FUSEC_HAVE_CUDA_RUNTIME

/// The "target" of the artifact's manifest.json ("" if it has none).
/// Errors: InvalidArgument when manifest.json is not a JSON object (before
/// anything looks for a device, so the message names the real problem).
absl::StatusOr<std::string> artifactTarget(const std::string &artifactDir) {
  const fs::path path = fs::path(artifactDir) / "manifest.json";
  std::ifstream in(path);
  nlohmann::json m = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object())
    return absl::InvalidArgumentError(absl::StrCat("cannot load artifact '", artifactDir, "': ",
                                                   path.string(), " is not a JSON object"));
  auto t = m.find("target");
  if (t == m.end()) return std::string();
  if (!t->is_string())
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load artifact '", artifactDir, "': manifest: 'target' is not a string"));
  return t->get<std::string>();
}

/// Whether a step of the artifact's manifest has a "guard" (an If chosen at
/// run time): then the runtime never captures a CUDA graph (RUNTIME.md
/// "Guarded steps"), which the bench line says. False when unreadable
/// (fusert_load reports that).
bool artifactHasGuards(const std::string &artifactDir) {
  std::ifstream in(fs::path(artifactDir) / "manifest.json");
  nlohmann::json m = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object() || !m.contains("steps") || !m["steps"].is_array())
    return false;
  for (const nlohmann::json &st : m["steps"])
    if (st.is_object() && st.contains("guard") && st["guard"].is_array() && !st["guard"].empty())
      return true;
  return false;
}

/// Drops from \p inputs the data of graph inputs the artifact was compiled
/// with as constants (manifest "bound_inputs", fusec --input-value), after
/// checking that the data holds the value compiled in: a different value is
/// InvalidArgument (the artifact would silently compute with the old one).
/// Unnamed data is left alone (matched by position as before).
absl::Status consumeBoundInputs(const std::string &artifactDir,
                                std::vector<std::pair<std::string, ir::Tensor>> &inputs) {
  std::ifstream in(fs::path(artifactDir) / "manifest.json");
  nlohmann::json m = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) return absl::OkStatus();  // fusert_load reports it
  auto b = m.find("bound_inputs");
  if (b == m.end()) return absl::OkStatus();
  if (!b->is_array())
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load artifact '", artifactDir, "': manifest: 'bound_inputs' is not an array"));
  for (const nlohmann::json &e : *b) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("digest") ||
        !e["digest"].is_string())
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot load artifact '", artifactDir, "': manifest: a 'bound_inputs' entry lacks name or digest"));
    const std::string name = e["name"].get<std::string>();
    for (auto it = inputs.begin(); it != inputs.end(); ++it) {
      if (it->first != name) continue;
      if (artifact_checksum::bytesChecksum(it->second.data(), static_cast<size_t>(it->second.byteSize())) !=
          e["digest"].get<std::string>())
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", printable(name), "': the artifact was compiled with another value of this input "
            "(fusec --input-value); recompile with this value to run this data"));
      inputs.erase(it);
      break;
    }
  }
  return absl::OkStatus();
}

/// One input or output as the model describes it.
struct TensorSlot;
const ir::Tensor *match(const std::vector<std::pair<std::string, ir::Tensor>> &data, const TensorSlot &slot,
                        size_t i);

struct TensorSlot {
  std::string name;
  fusert_dtype dtype = FUSERT_F32;
  ir::DType irType = ir::DType::kF32;
  std::vector<int64_t> shape;
  size_t bytes = 0;
  void *data = nullptr;  ///< device (cuda) or host (cpu) buffer
};

/// Owns the model, the tensor buffers and the target's memory.
struct Session {
  fusert_model *model = nullptr;
  std::unique_ptr<TensorMemory> mem;
  std::vector<TensorSlot> inputs, outputs;

  ~Session() {
    if (mem) {
      (void)mem->synchronize("");
      for (auto *list : {&inputs, &outputs})
        for (TensorSlot &t : *list)
          if (t.data) mem->release(t.data);
    }
    fusert_unload(model);
    mem.reset();
  }

  /// Slots for the inputs and outputs. Dynamic shapes: an input dim the
  /// artifact declares -1 takes its extent from \p data (matched as
  /// match() does), and the outputs' dims come from binding the symbols
  /// to those shapes (fusert_bind_shapes).
  absl::Status describe(const std::vector<std::pair<std::string, ir::Tensor>> &data) {
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) FUSEC_RETURN_IF_ERROR(bindShapes());
      std::vector<TensorSlot> &list = pass == 0 ? inputs : outputs;
      size_t n = pass == 0 ? fusert_num_inputs(model) : fusert_num_outputs(model);
      for (size_t i = 0; i < n; ++i) {
        const char *name = nullptr;
        int rank = 0;
        const int64_t *shape = nullptr;
        TensorSlot t;
        fusert_status s = pass == 0 ? fusert_input_info(model, i, &name, &t.dtype, &rank, &shape)
                                    : fusert_output_info(model, i, &name, &t.dtype, &rank, &shape);
        if (s != FUSERT_OK) return absl::InternalError(fusertMsg(s));
        t.name = name ? name : "";
        t.shape.assign(shape, shape + rank);
        bool dynamic = false;
        for (int64_t d : t.shape) dynamic = dynamic || d < 0;
        if (dynamic) {
          const ir::Tensor *given = pass == 0 ? match(data, t, i) : nullptr;
          if (!given || given->rank() != rank)
            return absl::InvalidArgumentError(absl::StrCat(
                pass == 0 ? "input '" : "output '", t.name, "' has dynamic dims ", shapeStr(t.shape),
                given ? absl::StrCat(" and the data's rank is ", given->rank()) : ": no data gives its shape"));
          for (int k = 0; k < rank; ++k)
            if (t.shape[k] >= 0 && t.shape[k] != given->shape()[k])
              return absl::InvalidArgumentError(absl::StrCat("input '", t.name, "': data has shape ",
                                                             shapeStr(given->shape()), ", the artifact takes ",
                                                             shapeStr(t.shape)));
          t.shape = given->shape();
        }
        if (!fromFusert(t.dtype, t.irType))
          return absl::InternalError(absl::StrCat("unknown dtype of '", t.name, "'"));
        t.bytes = static_cast<size_t>(ir::numElements(t.shape) * ir::dtypeSize(t.irType));
        FUSEC_ASSIGN_OR_RETURN(t.data, mem->allocate(t.bytes, absl::StrCat("'", t.name, "'")));
        list.push_back(std::move(t));
      }
    }
    return absl::OkStatus();
  }

  /// Binds a dynamic artifact's symbols from the input slots' shapes
  /// (no effect for static shapes).
  absl::Status bindShapes() {
    std::vector<fusert_tensor> in;
    for (TensorSlot &t : inputs)
      in.push_back({t.name.c_str(), t.dtype, static_cast<int>(t.shape.size()), t.shape.data(), nullptr});
    fusert_status s = fusert_bind_shapes(model, in.data(), in.size());
    if (s != FUSERT_OK) return absl::InvalidArgumentError(fusertMsg(s));
    return absl::OkStatus();
  }

  absl::Status run() {
    std::vector<fusert_tensor> in, out;
    for (TensorSlot &t : inputs)
      in.push_back({t.name.c_str(), t.dtype, static_cast<int>(t.shape.size()), t.shape.data(),
                    t.data});
    for (TensorSlot &t : outputs)
      out.push_back({t.name.c_str(), t.dtype, static_cast<int>(t.shape.size()), t.shape.data(),
                     t.data});
    fusert_status s = fusert_run(model, in.data(), in.size(), out.data(), out.size(), mem->stream());
    if (s != FUSERT_OK) return absl::InternalError(absl::StrCat("fusert_run: ", fusertMsg(s)));
    return absl::OkStatus();
  }
};

/// Finds the data tensor for slot \p i: by name, else by position.
const ir::Tensor *match(const std::vector<std::pair<std::string, ir::Tensor>> &data,
                        const TensorSlot &slot, size_t i) {
  for (const auto &[name, t] : data)
    if (!name.empty() && name == slot.name) return &t;
  return i < data.size() ? &data[i].second : nullptr;
}

double percentile(std::vector<float> sorted, double q) {
  if (sorted.empty()) return 0;
  std::sort(sorted.begin(), sorted.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

/// The memory of \p target's artifacts.
absl::StatusOr<std::unique_ptr<TensorMemory>> memoryFor(const std::string &target) {
  if (target == "cpu") return std::unique_ptr<TensorMemory>(std::make_unique<HostMemory>());
#ifdef FUSEC_HAVE_CUDA_RUNTIME
  auto cuda = std::make_unique<CudaMemory>();
  FUSEC_RETURN_IF_ERROR(cuda->init());
  return std::unique_ptr<TensorMemory>(std::move(cuda));
#else
  return absl::FailedPreconditionError(
      absl::StrCat("this is a '", target.empty() ? "cuda" : target,
                   "' artifact, and this fusec-run was built without CUDA: it runs cpu artifacts "
                   "(fusec --target cpu) only"));
#endif
}

absl::StatusOr<bool> runChecked(Session &sess, const std::string &artifactDir,
                                const std::string &dataDir, int benchIters, double atol,
                                double rtol, bool poison) {
  FUSEC_ASSIGN_OR_RETURN(const std::string target, artifactTarget(artifactDir));
  FUSEC_ASSIGN_OR_RETURN(sess.mem, memoryFor(target));
  FUSEC_ASSIGN_OR_RETURN(auto inputs, loadSeries(dataDir, "input"));
  FUSEC_ASSIGN_OR_RETURN(auto expected, loadSeries(dataDir, "output"));
  if (expected.empty())
    return absl::NotFoundError(absl::StrCat("no output_0.pb in '", dataDir, "'"));
  FUSEC_RETURN_IF_ERROR(consumeBoundInputs(artifactDir, inputs));

  fusert_status s = fusert_load(artifactDir.c_str(), &sess.model);
  if (s != FUSERT_OK)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load artifact '", artifactDir, "': ", fusertMsg(s)));
  FUSEC_RETURN_IF_ERROR(sess.describe(inputs));

  // Upload inputs, checking dtype and shape (no conversion).
  for (size_t i = 0; i < sess.inputs.size(); ++i) {
    TensorSlot &slot = sess.inputs[i];
    const ir::Tensor *t = match(inputs, slot, i);
    if (!t)
      return absl::InvalidArgumentError(absl::StrCat("no data for input ", i, " '", slot.name,
                                                     "' in '", dataDir, "'"));
    fusert_dtype dt;
    if (!toFusert(t->dtype(), dt) || dt != slot.dtype)
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", slot.name, "': data has dtype ", ir::dtypeName(t->dtype()),
          ", the artifact wants ", fusert_dtype_name(slot.dtype), " (no conversion is done)"));
    // As ONNX Runtime does, one-element data of shape [1] is read as an
    // input compiled as a scalar (the same bytes).
    if (slot.shape.empty() && t->shape() == ir::Shape{1})
      std::fprintf(stderr, "fusec-run: note: input '%s' has shape [1] in the data; read as the scalar the artifact takes\n",
                   slot.name.c_str());
    else if (t->shape() != slot.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", slot.name, "': data has shape ", shapeStr(t->shape()),
          ", the artifact was compiled for ", shapeStr(slot.shape),
          " (recompile with --shape to change it)"));
    FUSEC_RETURN_IF_ERROR(sess.mem->upload(slot.data, t->data(), slot.bytes, absl::StrCat("'", slot.name, "'")));
  }

  if (inputs.size() > sess.inputs.size()) {
    // More data than inputs: typically a graph input with an initializer,
    // which fusec compiles as a constant (README.md, "Using it").
    std::fprintf(stderr,
                 "fusec-run: note: the data has %zu input files, the artifact takes %zu inputs; "
                 "input_%zu.pb and later are not used (a graph input with an initializer is "
                 "compiled as a constant)\n",
                 inputs.size(), sess.inputs.size(), sess.inputs.size());
  }
  FUSEC_RETURN_IF_ERROR(sess.mem->configure(sess.model));
  if (poison) {  // unwritten elements become NaN (GpuRun.h)
    for (TensorSlot &slot : sess.outputs)
      FUSEC_RETURN_IF_ERROR(sess.mem->fill(slot.data, 0xFF, slot.bytes, absl::StrCat("'", slot.name, "'")));
    if ((s = fusert_fill_arena(sess.model, 0xFF, sess.mem->stream())) != FUSERT_OK)
      return absl::InternalError(absl::StrCat("poisoning the arena: ", fusertMsg(s)));
  }
  FUSEC_RETURN_IF_ERROR(sess.run());
  FUSEC_RETURN_IF_ERROR(sess.mem->synchronize("running the model"));

  if (expected.size() > sess.outputs.size())
    return absl::InvalidArgumentError(absl::StrCat("the artifact has ", sess.outputs.size(),
                                                   " outputs, the data has ", expected.size()));
  std::vector<std::string> outputNames;
  for (const TensorSlot &slot : sess.outputs) outputNames.push_back(slot.name);
  FUSEC_ASSIGN_OR_RETURN(std::vector<int> wanted, tools::matchSeries(expected, outputNames, "output"));
  bool allPass = true;
  for (size_t i = 0; i < sess.outputs.size(); ++i) {
    const TensorSlot &slot = sess.outputs[i];
    if (wanted[i] < 0) continue;  // no data for it (outputs past the data's, or named ones absent)
    const ir::Tensor *want = &expected[static_cast<size_t>(wanted[i])].second;
    ir::Tensor got(slot.irType, slot.shape);
    FUSEC_RETURN_IF_ERROR(sess.mem->download(got.data(), slot.data, slot.bytes, absl::StrCat("'", slot.name, "'")));
    interp::Tolerance tol = interp::defaultTolerance(want->dtype());
    if (atol >= 0) tol.atol = atol;
    if (rtol >= 0) tol.rtol = rtol;
    interp::CompareResult r = interp::compareTensors(got, *want, &tol);
    std::printf("output %zu '%s' %s: max abs err %.3g, max rel err %.3g (atol %g, rtol %g) %s%s%s\n",
                i, printable(slot.name).c_str(), ir::dtypeName(want->dtype()), r.maxAbsError,
                r.maxRelError, tol.atol, tol.rtol, r.pass ? "ok" : "MISMATCH",
                r.pass ? "" : ": ", r.message.c_str());
    allPass = allPass && r.pass;
  }

  if (benchIters > 0) {
    constexpr int kWarmup = 10;
    for (int i = 0; i < kWarmup; ++i) FUSEC_RETURN_IF_ERROR(sess.run());
    FUSEC_RETURN_IF_ERROR(sess.mem->synchronize("warm-up"));
    std::vector<float> ms;
    ms.reserve(static_cast<size_t>(benchIters));
    for (int i = 0; i < benchIters; ++i) {
      absl::StatusOr<float> t = sess.mem->timeRun([&] { return sess.run(); });
      if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat("timed run ", i, ": ", t.status().message()));
      ms.push_back(*t);
    }
    std::string mode = sess.mem->benchMode(sess.model);
    if (mode == "CUDA graph" && artifactHasGuards(artifactDir))
      mode = "direct launches: steps guarded by run-time conditions, no CUDA graph";
    std::printf("latency ms: p50 %.4f p90 %.4f p99 %.4f (%d runs after %d warm-up, %s)\n",
                percentile(ms, 0.5), percentile(ms, 0.9), percentile(ms, 0.99), benchIters,
                kWarmup, mode.c_str());
  }
  return allPass;
}

}  // namespace

int runArtifact(const std::string &artifactDir, const std::string &dataDir, int benchIters,
                double atol, double rtol, bool poison) {
  Session sess;
  absl::StatusOr<bool> pass =
      runChecked(sess, artifactDir, dataDir, benchIters, atol, rtol, poison);
  if (!pass.ok()) return fail(artifactDir, std::string(pass.status().message()));
  std::printf("%s %s\n", *pass ? "PASS" : "FAIL", printable(artifactDir).c_str());
  return *pass ? 0 : 1;
}

#endif  // FUSEC_HAVE_RUNTIME

}  // namespace fusec::tools
