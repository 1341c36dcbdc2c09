//===- CudaEmitter.h - KernelSpecs to CUDA C++ ------------------*- C++ -*-===//
//
// The CUDA backend: lowers a fused graph (Lowering.h) and prints every
// generated KernelSpec as CUDA C++ — one __global__ kernel and one
// extern "C" launcher per structurally unique spec — plus the manifest steps
// (ARTIFACT.md) that run them and the library calls, in order.
//
// Launcher ABI (ARTIFACT.md): extern "C" int fusec_k<N>(void *const *buffers,
// cudaStream_t stream); buffers[i] is the device address of Step::buffers[i];
// returns a cudaError_t (0 = success).
//
// Names: kernel symbols are fusec_k<N> (N counts unique specs); ONNX node
// names appear only inside comments, escaped.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_CUDAEMITTER_H
#define FUSEC_CODEGEN_CUDA_CUDAEMITTER_H

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/KernelSpec.h"
#include "program/Lowering.h"
#include "program/Program.h"
#include "ir/Graph.h"
#include "passes/fusion/FusionPlan.h"

namespace fusec::codegen {

// The target-neutral program (program/) is this backend's input vocabulary.
using namespace ::fusec::program;


/// The generated module: the .cu source and the steps that run it.
/// Every Value named by a step (kernel buffers, GEMM/conv operands) must be
/// allocated by the artifact writer: graph inputs/outputs, constants
/// (weights), arena Values, and view Values (aliases of their input).
struct CudaModule {
  std::string source;                    ///< complete .cu translation unit
  std::vector<Step> steps;               ///< in execution order
  std::vector<std::string> kernelNames;  ///< plan kernel names, in step order (unique)
  std::vector<std::string> symbols;      ///< unique launcher symbols defined in source
};

struct CudaOptions {
  std::string arch = "sm_90";
  bool allowTf32 = false;
  /// Row kernels: the most threads one row gets (32..1024, a multiple of 32);
  /// 0 picks per row length (512 for a vectorised row that fits registers).
  /// A tuning knob for benchmarks; results do not depend on it.
  int rowMaxThreads = 0;
  /// Dynamic shapes (program/Symbolic.h): the artifact's symbols in
  /// manifest order and each one's largest value. Non-empty: every launcher
  /// takes the bound symbols (docs/ARTIFACT.md) and symbolic extents are
  /// read from them at run time.
  std::vector<std::string> symbolNames;
  std::vector<int64_t> symbolMax;
};

/// Most symbols a dynamic CUDA artifact may have (fx::Syms).
inline constexpr int kMaxCudaSymbols = 16;

/// Lowers every kernel of \p plan (graph already fused: nodes carry
/// fusec.kernel) to CUDA. Errors as lowerGraph().
absl::StatusOr<CudaModule> lowerToCuda(const ir::Graph &graph, const passes::FusionPlan &plan,
                                       const CudaOptions &opts);

/// The options the CUDA backend lowers with, in its legality check and its
/// emission alike (the one legality rule): TF32 as \p allowTf32 says, and
/// output Casts to f32 folded into f16/bf16 GEMMs (cuBLASLt writes f32 D
/// from f16/bf16 A and B with f32 compute).
program::LoweringOptions cudaLoweringOptions(bool allowTf32);

/// Prints a built program: the unique kernels of \p prog and its steps
/// with launcher symbols. Errors: Unimplemented for a spec CUDA cannot print.
absl::StatusOr<CudaModule> printCudaModule(const Program &prog, const CudaOptions &opts);

/// The launcher symbol of unique kernel \p kernel: "fusec_k<kernel>".
std::string cudaKernelSymbol(int kernel);

/// Prints one spec as a __global__ kernel plus launcher named \p symbol.
/// \p comment goes into a /* */ header (escaped here). Row-reduction and
/// pointwise specs get a 16-byte vectorised kernel (<symbol>_vec) beside the
/// scalar one when the innermost extent allows; the launcher picks it when
/// every vectorised buffer is 16-byte aligned at run time.
absl::StatusOr<std::string> emitCudaKernel(const KernelSpec &spec, const std::string &symbol,
                                           const std::string &comment, const CudaOptions &opts = {});

/// The prelude (includes and scalar helpers) every generated .cu starts with.
std::string cudaPrelude();

/// The CUDA C++ type that stores one element of \p t in device memory
/// ("float", "__nv_bfloat16", "int64_t", "bool", ...); null for dtypes with
/// no CUDA storage type (string, undefined).
const char *cudaStorageType(ir::DType t);

/// Escapes \p text for a C block comment: "*/" and control characters
/// (newlines included) cannot end the comment or break the line.
std::string escapeComment(const std::string &text);

}  // namespace fusec::codegen

#endif  // FUSEC_CODEGEN_CUDA_CUDAEMITTER_H
