//===- CpuCodegen.h - KernelSpecs, GEMMs and convolutions to LLVM IR -*- C++ -*-===//
//
// The cpu backend's code generator (docs/CPU_BACKEND.md). Every entry point
// it emits has the ABI of runtime/include/fusert/fusert_cpu_kernel.h:
//   int32_t symbol(void *const *buffers, const fusert_cpu_context *ctx)
// built with LLVM's IRBuilder, optimised with LLVM's O3 pipeline for one
// CPU (an LLVM CPU name and its features), emitted as an ELF object and
// linked into a shared library in-process by lld. No C compiler runs.
//
//  - Pointwise and reduce KernelSpecs (program/KernelSpec.h): the outer
//    parallel dims split over ctx->parallel_for; the innermost dim of each
//    loop nest is computed in explicit LLVM vector types of the CPU's
//    register width (masked loads/stores for the remainder), so vector
//    code does not depend on LLVM's loop vectoriser.
//  - GEMM steps (program::GemmParams) and convolutions (ConvParams, 1-D and
//    2-D): tiles of the output over parallel_for, ctx->sgemm per tile into
//    the per-thread workspace, then the GemmEpilogue as a vector loop over
//    the tile, stored in the output dtype.
//  - Attention specs (program/AttentionSpec.h): a tiled online softmax over
//    parallel_for tasks (batch, head, 64-row query tile), ctx->sgemm for
//    Q.K^T and P.V per 128-key tile, the score modification and mask as
//    vector IR, fully masked key tiles skipped (CpuAttention.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CPU_CPUCODEGEN_H
#define FUSEC_CODEGEN_CPU_CPUCODEGEN_H

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "program/KernelSpec.h"
#include "program/Lowering.h"

namespace fusec::codegen::cpu {

/// The CPU the code is built for.
struct CpuTarget {
  std::string triple;                 ///< LLVM target triple (the host's)
  std::string cpu;                    ///< LLVM CPU name ("znver4", "skylake-avx512")
  std::string featureString;          ///< "+avx2,+fma,..." for the target machine
  std::vector<std::string> features;  ///< the ISA features the code may use (manifest cpu_features)
  /// Whether \p feature (an LLVM feature name, e.g. "avx512f") is in features.
  bool hasFeature(const std::string &feature) const {
    return std::find(features.begin(), features.end(), feature) != features.end();
  }
  int vectorBits = 128;               ///< width of the vectors the kernels compute in
  /// Steps smaller than this (multiply-adds or elements) run on the calling
  /// thread, not through parallel_for (waking the workers costs more).
  /// Environment FUSEC_CPU_INLINE_WORK overrides it (0: never inline).
  int64_t inlineWork = 16384;
  /// Pointwise and reduce kernels whose element-wise outputs (stored with
  /// the identity index map, rows a multiple of the vector width) total at
  /// least this many bytes store full vectors with non-temporal (streaming)
  /// stores on x86, when the buffers are aligned to the vector size at run
  /// time: such outputs do not fit in the last-level cache anyway, and a
  /// streaming store does not read the line before writing it (a plain
  /// store moves 3 bytes over the memory bus per byte written plus read, a
  /// streaming one 2). Default: the host's last-level cache size (sysfs;
  /// 32 MiB when unknown or for another --arch). Environment
  /// FUSEC_CPU_STREAM_BYTES overrides it (0: every eligible kernel).
  int64_t streamingStoreBytes = int64_t{32} << 20;
  bool x86 = true;                    ///< the triple is x86 (streaming stores, sfence)
};

/// The target for LLVM CPU name \p cpu ("", "native" or the host's own
/// name = the host: getHostCPUName() and getHostCPUFeatures()). Errors: InvalidArgument for a name LLVM does not
/// know for the host's architecture (the message lists a few valid ones).
absl::StatusOr<CpuTarget> resolveCpuTarget(const std::string &cpu);

/// Whether the generator lowers \p spec (pointwise, reduce or attention).
/// The same walk runs inside CpuModuleBuilder::addKernel, so what this
/// accepts is emitted. Errors: Unimplemented with the reason.
absl::Status checkCpuKernel(const program::KernelSpec &spec);
/// Same for an attention spec: Q, K, V and O in f32, f16 or bf16, biases
/// of a dtype the backend loads, D and Dv >= 1, Hkv dividing Hq.
absl::Status checkCpuAttention(const program::AttentionSpec &a);
/// Same for a GEMM step: dtypes f32/f16/bf16, an epilogue checkCpuKernel accepts.
absl::Status checkCpuGemm(const program::GemmParams &gemm);
/// Same for a convolution: 1-D or 2-D NCHW, f32/f16/bf16.
absl::Status checkCpuConv(const program::ConvParams &conv);

/// The buffers of the kernel step that replaces a gemm step, in order:
/// a, b, c (when present), bias (when present), the epilogue's inputs
/// (GemmParams::epilogueInputs), d.
std::vector<const ir::Value *> gemmStepBuffers(const program::GemmParams &gemm);
/// ... and of a conv step: x, w, bias (when present), the epilogue's inputs
/// (ConvParams::epilogueInputs), y.
std::vector<const ir::Value *> convStepBuffers(const program::ConvParams &conv);

/// The built module.
struct CpuObject {
  std::string object;                      ///< ELF relocatable object
  std::string ir;                          ///< optimised IR text (when asked)
  uint64_t workspaceBytesPerThread = 0;    ///< max over the entry points, 64-byte multiple
};

/// Collects entry points into one LLVM module and compiles it.
class CpuModuleBuilder {
 public:
  CpuModuleBuilder(const CpuTarget &target, const std::string &moduleName);
  ~CpuModuleBuilder();
  CpuModuleBuilder(const CpuModuleBuilder &) = delete;
  CpuModuleBuilder &operator=(const CpuModuleBuilder &) = delete;

  /// Dynamic shapes: the symbols whose values fusert_cpu_context.symbols
  /// holds, in that order (the manifest's "symbols"). Call before adding
  /// entry points whose specs are symbolic (program/Symbolic.h).
  void setSymbols(std::vector<std::string> names);
  /// Adds entry point \p symbol for \p spec; buffers[i] is spec buffer i.
  absl::Status addKernel(const program::KernelSpec &spec, const std::string &symbol);
  /// Adds \p symbol running \p gemm; buffers as gemmStepBuffers().
  absl::Status addGemm(const program::GemmParams &gemm, const std::string &symbol);
  /// Adds \p symbol running \p conv; buffers as convStepBuffers().
  absl::Status addConv(const program::ConvParams &conv, const std::string &symbol);
  /// Adds the exported constant \p symbol holding \p text and a NUL (the
  /// manifest digest placeholder, runtime/ArtifactFormat.h).
  void addConstantString(const std::string &symbol, const std::string &text);
  /// The unoptimised IR text so far (tests).
  std::string irText() const;
  /// Verifies, optimises (O3 for the target) and emits the object; \p wantIr
  /// also returns the optimised IR. The builder is spent afterwards.
  /// Errors: Internal when LLVM's verifier or code generator fails.
  absl::StatusOr<CpuObject> finish(bool wantIr);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Links \p object into the shared library \p outPath with lld in-process
/// (ld.lld -shared; libm when present, for the f64 math the kernels call).
/// \p workDir holds the temporary object file. Errors: Internal with lld's
/// diagnostics.
absl::Status linkSharedLibrary(const std::string &object, const std::string &workDir,
                               const std::string &outPath);

}  // namespace fusec::codegen::cpu

#endif  // FUSEC_CODEGEN_CPU_CPUCODEGEN_H
