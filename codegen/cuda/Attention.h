//===- Attention.h - CUDA attention kernels ---------------------*- C++ -*-===//
//
// Prints an AttentionSpec (codegen/AttentionSpec.h) as CUDA C++: one
// __global__ kernel plus the extern "C" launcher
//   int <symbol>(void *const *buffers, cudaStream_t stream)
// (ARTIFACT.md kernel ABI; buffers in AttentionSpec order: Q, K, V,
// biases..., O; returns a cudaError_t, 0 = success). The text relies on
// cudaPrelude() (CudaEmitter.h) for includes, idx_t and the fx:: helpers.
//
// emitAttentionKernel is the one entry point CudaEmitter calls for
// SpecKind::kAttention. Today it prints the simple online-softmax kernel of
// AttentionNaive.cpp; the tiled tensor-core kernel (codegen/cuda/attention/)
// replaces it behind this same function for the specs it supports.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_ATTENTION_H
#define FUSEC_CODEGEN_CUDA_ATTENTION_H

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/AttentionSpec.h"
#include "ir/ScoreExpr.h"

namespace fusec::codegen {

// The target-neutral program (program/) is this backend's input vocabulary.
using namespace ::fusec::program;

/// The CUDA source (kernel + launcher named \p symbol) for \p spec.
/// Errors: InvalidArgument for inconsistent sizes (Hq % Hkv != 0, zero
/// extents), Unimplemented for storage dtypes without a CUDA type.
/// Dynamic shapes: \p symbolNames (the artifact's symbols, manifest order)
/// non-empty gives the launcher the symbols parameter; fields of
/// spec.symbolic are read from it (the tiled kernel only: Unimplemented
/// where it declines such a spec). \p arch: the nvcc arch the module is
/// built for; "sm_90a" gives bf16/fp16 specs the warp-specialised TMA +
/// wgmma kernel where it applies (attention::hopperDecline).
absl::StatusOr<std::string> emitAttentionKernel(const AttentionSpec &spec,
                                                const std::string &symbol,
                                                const std::vector<std::string> &symbolNames = {},
                                                const std::string &arch = "sm_90");

/// One line for the fusion dump: the kernel emitAttentionKernel() gives
/// \p spec for \p arch and why (the sm_90a warp-specialised kernel, the
/// sm_80 mma.sync kernel with the reason the sm_90a one declined, the exact
/// fp32 kernel, or the simple kernel with the tiled one's reason).
std::string describeAttentionKernel(const AttentionSpec &spec, const std::string &arch);

/// The simple kernel (one block per (b, h, 16 query rows), f32 online
/// softmax over keys, no tensor cores): correct for every valid spec.
absl::StatusOr<std::string> emitAttentionKernelNaive(const AttentionSpec &spec,
                                                     const std::string &symbol);

/// Names the generated C code uses for the expression's free variables.
struct ScoreCudaNames {
  std::string score = "s";
  std::string b = "b", h = "h", q = "q", k = "k";  ///< integer (long long) variables
  /// Bias i as a float expression (e.g. "bias_0(b,h,q,k)"); index = i.
  std::vector<std::string> bias;
  /// Table NAME at integer expression X is printed as prefix + NAME + "[" X "]"
  /// (a __constant__ / local float array the caller defines).
  std::string tablePrefix = "tab_";
};

/// \p e as one C expression of type float (or bool for masks: \p asBool).
/// Follows ir/ScoreExpr.h semantics: int arithmetic in long long, floats in
/// f32 (fx:: helpers for tanh/exp/log), bools as C bool.
std::string scoreExprToCuda(const ir::ScoreExpr &e, const ScoreCudaNames &names, bool asBool);

}  // namespace fusec::codegen

#endif  // FUSEC_CODEGEN_CUDA_ATTENTION_H
