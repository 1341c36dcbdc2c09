//===- Manifest.h - Parse and check an artifact's manifest.json -===//
//
// The manifest (docs/ARTIFACT.md, format version 1) is parsed into plain
// structs and checked completely here, with no CUDA call, so the loader can
// trust every id, offset and size afterwards and so the checks are testable
// on a machine without a GPU. bindTensors() checks the tensors a caller hands
// to fusert_run against the manifest, also without touching the device.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_MANIFEST_H
#define FUSEC_RUNTIME_INTERNAL_MANIFEST_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fusert/fusert.h"
#include "runtime/internal/Status.h"

namespace fusec::rt {

/// Where a buffer's memory comes from (manifest "storage").
enum class Storage { kInput, kOutput, kWeight, kArena, kAlias };

/// Dynamic shapes (docs/ARTIFACT.md "dynamic shapes"): a dim or size that
/// is coeff * the product of symbols (indices into Manifest::symbols, with
/// repeats for powers); static when `symbols` is empty.
struct Extent {
  int64_t coeff = 0;
  std::vector<int> symbols;
  bool isStatic() const { return symbols.empty(); }
  /// The value with \p values (one per manifest symbol); saturates at
  /// INT64_MAX on overflow.
  int64_t eval(const std::vector<int64_t> &values) const;
};

/// One entry of "symbols": a dim bound from the inputs' shapes at run time.
struct SymbolDesc {
  std::string name;
  int64_t min = 1, max = INT64_MAX;
  int64_t opt = 0; ///< "opt": the extent compiled for (0 = none)
};

/// One entry of "buffers".
struct BufferDesc {
  int id = -1;
  std::string name;
  fusert_dtype dtype = FUSERT_F32;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  Storage storage = Storage::kArena;
  int index = -1;      ///< input/output position (kInput, kOutput)
  uint64_t offset = 0; ///< bytes into weights / arena / aliased buffer
  int of = -1;         ///< aliased buffer id (kAlias)
  /// Dynamic shapes: the shape and size as written (symbolic or not); the
  /// fields above hold their values for the bound symbols. Empty/unset
  /// for a static manifest.
  std::vector<Extent> dims;
  Extent size;
  int liveFirst = -1, liveLast = -1; ///< kArena: "live" steps (dynamic shapes)
};

/// One entry of "inputs" / "outputs".
struct TensorDesc {
  std::string name;
  fusert_dtype dtype = FUSERT_F32;
  std::vector<int64_t> shape;
  int buffer = -1; ///< buffer id
  std::vector<Extent> dims; ///< dynamic shapes: as written (see BufferDesc)
  /// Dynamic shapes: the dims with -1 where a symbol decides them
  /// (fusert_input_info before any binding).
  std::vector<int64_t> declared;
};

enum class StepKind { kKernel, kGemm, kConv, kCopy };

enum class Epilogue { kNone, kBias, kRelu, kReluBias, kGelu, kGeluBias };

/// Fields of a "gemm" step: D[m,n] = alpha * op(A) * op(B) + beta * C, all
/// row-major, batched with element strides; buffer ids are -1 when absent.
/// A, B and the bias are `dtype`; C and D are `dDtype` ("d_dtype": absent =
/// dtype; f32 for an f16/bf16 GEMM, which then writes its f32 result
/// unrounded).
struct GemmDesc {
  int a = -1, b = -1, c = -1, d = -1, bias = -1;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0, strideD = 0;
  bool transA = false, transB = false;
  double alpha = 1.0, beta = 0.0;
  Epilogue epilogue = Epilogue::kNone;
  fusert_dtype dtype = FUSERT_F32;
  fusert_dtype dDtype = FUSERT_F32; ///< "d_dtype" (== dtype when absent)
  bool tf32 = false; ///< "compute": "tf32"
  /// Dynamic shapes: "m", "n", "k", "batch" and the four strides as written
  /// (integers or products of symbols); applyBinding evaluates them into
  /// the fields above. Unused for a static manifest.
  struct Extents {
    Extent m, n, k, batch, strideA, strideB, strideC, strideD;
  } extents;
};

/// Fields of a "conv" step (NCHW, cross-correlation as in ONNX Conv).
struct ConvDesc {
  int x = -1, w = -1, bias = -1, y = -1;
  std::vector<int64_t> xShape, wShape, yShape;
  std::vector<int64_t> pads, strides, dilations; ///< pads: begin..., end...
  int64_t group = 1;
  fusert_dtype dtype = FUSERT_F32;
  /// Dynamic shapes: "x_shape" and "y_shape" as written (integers or
  /// products of symbols; the other fields are static); applyBinding
  /// evaluates them into xShape and yShape. Empty for a static manifest.
  std::vector<Extent> xDims, yDims;
};

/// One term of a step's "guard": the step runs only when buffer `buffer`
/// (a bool of one element) holds `when` (ARTIFACT.md "guard").
struct GuardDesc {
  int buffer = -1;
  bool when = true;
};

/// One entry of "steps".
struct StepDesc {
  StepKind kind = StepKind::kKernel;
  std::string name;
  std::string symbol;       ///< kKernel
  std::vector<int> buffers; ///< kKernel: buffer ids passed to the symbol
  GemmDesc gemm;            ///< kGemm
  ConvDesc conv;            ///< kConv
  int src = -1, dst = -1;   ///< kCopy
  uint64_t bytes = 0;       ///< kCopy
  Extent copySize;          ///< kCopy, dynamic shapes: "bytes" as written
  /// "guard": empty = always runs; else only when every term holds, the
  /// terms read in order (a later one only when the earlier ones hold).
  std::vector<GuardDesc> guard;
};

/// A parsed and checked manifest.json.
struct Manifest {
  std::string model, target, arch;
  std::string library;
  std::string weightsFile;
  uint64_t weightsBytes = 0;
  uint64_t arenaBytes = 0;
  /// "checksums": file name (the library or the weights file) -> checksum
  /// text (runtime/internal/Checksum.h). The loader requires an entry for
  /// the weights file and for the library the manifest names (unless
  /// libraryBuiltByHand) and verifies every entry.
  std::vector<std::pair<std::string, std::string>> checksums;
  /// "library_build": "by hand": written by `fusec --no-nvcc`, whose library
  /// the user builds from the sources after fusec ran, so the manifest can
  /// hold no checksum of it. The field is part of the manifest digest, so a
  /// library built for an artifact without it is still refused.
  bool libraryBuiltByHand = false;
  /// manifestDigest() of the parsed manifest (runtime/internal/ManifestDigest.h):
  /// what the library must record under kManifestDigestSymbol.
  std::string digest;
  /// Dynamic shapes: "symbols", in order (fusert_cpu_context.symbols);
  /// empty for a static artifact.
  std::vector<SymbolDesc> symbols;
  bool dynamic() const { return !symbols.empty(); }
  std::vector<BufferDesc> buffers; ///< in file order
  std::vector<TensorDesc> inputs, outputs;
  std::vector<StepDesc> steps;
  // Fields of a cpu artifact (target "cpu"; docs/ARTIFACT.md, "cpu
  // artifacts"), unset otherwise.
  int64_t cpuAbi = -1;                  ///< "cpu_abi"
  std::vector<std::string> cpuFeatures; ///< "cpu_features", LLVM spelling
  uint64_t workspaceBytesPerThread = 0; ///< "workspace_bytes_per_thread"

  /// \returns the position in `buffers` of buffer \p id, or -1.
  int bufferIndex(int id) const;
  /// \returns the buffer with id \p id; the id must be valid.
  const BufferDesc &buffer(int id) const { return buffers[bufferIndex(id)]; }
};

/// \returns the dtype named \p name ("f32", ...) in \p out, false if unknown.
bool parseDType(const std::string &name, fusert_dtype &out);

/// \returns the number of elements of \p shape (1 for rank 0).
int64_t numElements(const std::vector<int64_t> &shape);

/// Dynamic shapes: the symbol values that the shapes of \p inputs (the
/// caller's tensors, matched by name; data may be NULL) bind, in manifest
/// order. Each input dim that is one symbol binds it; every other dim must
/// then equal its evaluated extent; every symbol must be bound and within
/// its range. Errors: FUSERT_INVALID_ARGUMENT naming the input and dim.
Status bindSymbols(const Manifest &m, const fusert_tensor *inputs, size_t numInputs,
                   std::vector<int64_t> &values);

/// Dynamic shapes: evaluates every shape, size, copy, gemm extent and
/// stride and conv x/y shape of \p m for symbol \p values and plans the
/// arena for them (greedy by size over the "live" step ranges, as the
/// compiler plans a static arena; 256-byte aligned), setting the buffers'
/// offsets and m.arenaBytes; then checks every gemm and conv step against
/// its buffers for this binding, as checkManifest does. Errors:
/// FUSERT_INVALID_ARGUMENT for sizes or extents past 2^62 and gemm/conv
/// steps that do not fit their buffers for this binding.
Status applyBinding(Manifest &m, const std::vector<int64_t> &values);

/// Parses manifest text \p text into \p out and checks it with
/// checkManifest. Errors: FUSERT_INVALID_ARGUMENT naming the offending field
/// (bad JSON, wrong "format"/"version", missing or mistyped field, unknown
/// dtype/storage/step kind/epilogue/compute, plus checkManifest's errors).
Status parseManifest(const std::string &text, Manifest &out);

/// Reads and parses \p path. Errors: FUSERT_NOT_FOUND if it cannot be read,
/// else parseManifest's.
Status loadManifestFile(const std::string &path, Manifest &out);

/// Upper bound of a cpu artifact's "workspace_bytes_per_thread" (1 GiB).
inline constexpr uint64_t kMaxWorkspaceBytesPerThread = uint64_t{1} << 30;

/// Checks the cross-references of \p m: unique buffer ids; bytes equal to
/// elements * dtype size; weight/arena/alias ranges inside their storage
/// (aliases without cycles); inputs/outputs naming input/output buffers of the
/// same dtype and shape and the same index; step buffer ids valid and every
/// gemm/conv/copy access inside its buffers. For target "cpu" also: "cpu_abi"
/// present and equal to FUSERT_CPU_ABI_VERSION, every "cpu_features" name
/// known (runtime/cpu/CpuFeatures.h; whether the host has it is the loader's
/// check), "workspace_bytes_per_thread" at most kMaxWorkspaceBytesPerThread,
/// and only kernel and copy steps. Every "guard" term names a known buffer
/// of dtype bool with one element. Errors: FUSERT_INVALID_ARGUMENT.
Status checkManifest(const Manifest &m);

/// Matches caller tensors to the manifest's inputs and outputs by name and
/// checks count, dtype, rank, dims and non-NULL data. On success
/// \p inputPtrs[i] / \p outputPtrs[i] hold the data pointer of manifest
/// input/output i. Errors: FUSERT_INVALID_ARGUMENT naming the tensor.
Status bindTensors(const Manifest &m, const fusert_tensor *inputs,
                   size_t numInputs, const fusert_tensor *outputs,
                   size_t numOutputs, std::vector<void *> &inputPtrs,
                   std::vector<void *> &outputPtrs);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_MANIFEST_H
