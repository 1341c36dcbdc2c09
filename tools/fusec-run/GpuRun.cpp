//===- GpuRun.cpp - fusec-run OUT --data DIR: run an artifact on the GPU --===//
#include "tools/fusec-run/GpuRun.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/OnnxImporter.h"
#include "interp/Compare.h"
#include "ir/Tensor.h"
#include "support/Escape.h"
#include "support/Status.h"

#ifdef FUSEC_HAVE_RUNTIME
#include <cuda_runtime_api.h>

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
              "this fusec-run was built without libfusert (no CUDA toolkit at configure time); "
              "it cannot run artifacts");
}

#else

bool gpuRunAvailable() { return true; }

namespace {

/// Loads DIR/<prefix>_<i>.pb for i = 0, 1, ... until one is missing.
absl::StatusOr<std::vector<std::pair<std::string, ir::Tensor>>> loadSeries(
    const std::string &dir, const std::string &prefix) {
  std::vector<std::pair<std::string, ir::Tensor>> out;
  for (int i = 0;; ++i) {
    fs::path p = fs::path(dir) / absl::StrCat(prefix, "_", i, ".pb");
    std::error_code ec;
    if (!fs::exists(p, ec)) break;
    std::string name;
    FUSEC_ASSIGN_OR_RETURN(ir::Tensor t, frontend::loadTensorProtoFile(p.string(), &name));
    out.emplace_back(name, std::move(t));
  }
  return out;
}

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
  }
  return false;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) absl::StrAppend(&out, i ? "," : "", s[i]);
  return out + "]";
}

std::string cudaMsg(cudaError_t e) {
  return absl::StrCat(cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

std::string fusertMsg(fusert_status s) {
  return absl::StrCat(fusert_status_name(s), ": ", fusert_last_error());
}

/// One input or output as the model describes it.
struct TensorSlot {
  std::string name;
  fusert_dtype dtype = FUSERT_F32;
  ir::DType irType = ir::DType::kF32;
  std::vector<int64_t> shape;
  size_t bytes = 0;
  void *device = nullptr;
};

/// Owns the model, the device buffers, the stream and the events.
struct Session {
  fusert_model *model = nullptr;
  std::vector<TensorSlot> inputs, outputs;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;

  ~Session() {
    if (stream) cudaStreamSynchronize(stream);
    for (auto *list : {&inputs, &outputs})
      for (TensorSlot &t : *list)
        if (t.device) cudaFree(t.device);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    fusert_unload(model);
  }

  absl::Status describe() {
    for (int pass = 0; pass < 2; ++pass) {
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
        if (!fromFusert(t.dtype, t.irType))
          return absl::InternalError(absl::StrCat("unknown dtype of '", t.name, "'"));
        t.bytes = static_cast<size_t>(ir::numElements(t.shape) * ir::dtypeSize(t.irType));
        // At least one byte so that every tensor has a distinct device pointer.
        cudaError_t e = cudaMalloc(&t.device, std::max<size_t>(t.bytes, 1));
        if (e != cudaSuccess)
          return absl::ResourceExhaustedError(
              absl::StrCat("cudaMalloc of ", t.bytes, " bytes for '", t.name, "': ", cudaMsg(e)));
        list.push_back(std::move(t));
      }
    }
    return absl::OkStatus();
  }

  absl::Status run() {
    std::vector<fusert_tensor> in, out;
    for (TensorSlot &t : inputs)
      in.push_back({t.name.c_str(), t.dtype, static_cast<int>(t.shape.size()), t.shape.data(),
                    t.device});
    for (TensorSlot &t : outputs)
      out.push_back({t.name.c_str(), t.dtype, static_cast<int>(t.shape.size()), t.shape.data(),
                     t.device});
    fusert_status s = fusert_run(model, in.data(), in.size(), out.data(), out.size(), stream);
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

absl::StatusOr<bool> runChecked(Session &sess, const std::string &artifactDir,
                                const std::string &dataDir, int benchIters, double atol,
                                double rtol, bool poison) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device (", e != cudaSuccess ? cudaMsg(e) : "0 devices",
        "): running an artifact needs a GPU; use --reference to check the model on the CPU"));

  FUSEC_ASSIGN_OR_RETURN(auto inputs, loadSeries(dataDir, "input"));
  FUSEC_ASSIGN_OR_RETURN(auto expected, loadSeries(dataDir, "output"));
  if (expected.empty())
    return absl::NotFoundError(absl::StrCat("no output_0.pb in '", dataDir, "'"));

  fusert_status s = fusert_load(artifactDir.c_str(), &sess.model);
  if (s != FUSERT_OK)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load artifact '", artifactDir, "': ", fusertMsg(s)));
  FUSEC_RETURN_IF_ERROR(sess.describe());
  if ((e = cudaStreamCreateWithFlags(&sess.stream, cudaStreamNonBlocking)) != cudaSuccess)
    return absl::InternalError(absl::StrCat("cudaStreamCreate: ", cudaMsg(e)));

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
    if (t->shape() != slot.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", slot.name, "': data has shape ", shapeStr(t->shape()),
          ", the artifact was compiled for ", shapeStr(slot.shape),
          " (recompile with --shape to change it)"));
    if ((e = cudaMemcpy(slot.device, t->data(), slot.bytes, cudaMemcpyHostToDevice)) != cudaSuccess)
      return absl::InternalError(absl::StrCat("uploading '", slot.name, "': ", cudaMsg(e)));
  }

  if ((s = fusert_enable_cuda_graph(sess.model, 1)) != FUSERT_OK)
    return absl::InternalError(fusertMsg(s));
  if (poison) {  // unwritten elements become NaN (GpuRun.h)
    for (TensorSlot &slot : sess.outputs)
      if ((e = cudaMemsetAsync(slot.device, 0xFF, slot.bytes, sess.stream)) != cudaSuccess)
        return absl::InternalError(absl::StrCat("poisoning '", slot.name, "': ", cudaMsg(e)));
    if ((s = fusert_fill_arena(sess.model, 0xFF, sess.stream)) != FUSERT_OK)
      return absl::InternalError(absl::StrCat("poisoning the arena: ", fusertMsg(s)));
  }
  FUSEC_RETURN_IF_ERROR(sess.run());
  if ((e = cudaStreamSynchronize(sess.stream)) != cudaSuccess)
    return absl::InternalError(absl::StrCat("running the model: ", cudaMsg(e)));

  if (expected.size() > sess.outputs.size())
    return absl::InvalidArgumentError(absl::StrCat("the artifact has ", sess.outputs.size(),
                                                   " outputs, the data has ", expected.size()));
  bool allPass = true;
  for (size_t i = 0; i < sess.outputs.size() && i < expected.size(); ++i) {
    const TensorSlot &slot = sess.outputs[i];
    const ir::Tensor *want = match(expected, slot, i);
    if (!want)
      return absl::InvalidArgumentError(absl::StrCat("no expected data for output ", i, " '",
                                                     slot.name, "'"));
    ir::Tensor got(slot.irType, slot.shape);
    if ((e = cudaMemcpy(got.data(), slot.device, slot.bytes, cudaMemcpyDeviceToHost)) != cudaSuccess)
      return absl::InternalError(absl::StrCat("downloading '", slot.name, "': ", cudaMsg(e)));
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
    if ((e = cudaEventCreate(&sess.start)) != cudaSuccess ||
        (e = cudaEventCreate(&sess.stop)) != cudaSuccess)
      return absl::InternalError(absl::StrCat("cudaEventCreate: ", cudaMsg(e)));
    constexpr int kWarmup = 10;
    for (int i = 0; i < kWarmup; ++i) FUSEC_RETURN_IF_ERROR(sess.run());
    if ((e = cudaStreamSynchronize(sess.stream)) != cudaSuccess)
      return absl::InternalError(absl::StrCat("warm-up: ", cudaMsg(e)));
    std::vector<float> ms;
    ms.reserve(static_cast<size_t>(benchIters));
    for (int i = 0; i < benchIters; ++i) {
      cudaEventRecord(sess.start, sess.stream);
      FUSEC_RETURN_IF_ERROR(sess.run());
      cudaEventRecord(sess.stop, sess.stream);
      if ((e = cudaEventSynchronize(sess.stop)) != cudaSuccess)
        return absl::InternalError(absl::StrCat("timed run ", i, ": ", cudaMsg(e)));
      float t = 0;
      cudaEventElapsedTime(&t, sess.start, sess.stop);
      ms.push_back(t);
    }
    std::printf("latency ms: p50 %.4f p90 %.4f p99 %.4f (%d runs after %d warm-up, CUDA graph)\n",
                percentile(ms, 0.5), percentile(ms, 0.9), percentile(ms, 0.99), benchIters,
                kWarmup);
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
