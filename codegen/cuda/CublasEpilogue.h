//===- CublasEpilogue.h - GEMM epilogue expressions to cuBLASLt -*- C++ -*-===//
//
// The CUDA backend runs GEMMs through cuBLASLt (runtime/GemmPlan.cpp),
// which fuses a few epilogues. The program describes a GEMM's epilogue as a
// scalar expression (program/Lowering.h, GemmEpilogue); this file recognises
// which cuBLASLt epilogue computes it. The names are the manifest's
// "epilogue" values (ARTIFACT.md "gemm").
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_CUBLASEPILOGUE_H
#define FUSEC_CODEGEN_CUDA_CUBLASEPILOGUE_H

#include "absl/status/statusor.h"
#include "program/Lowering.h"

namespace fusec::codegen {

/// The cuBLASLt epilogue that computes \p e: "none" (accumulator
/// unchanged), "bias" (acc + bias[n]), "relu" / "relu_bias" (max(x, 0) of
/// those), "gelu" / "gelu_bias" (the tanh GELU of those, as
/// program::buildGeluTanh builds it). Matching is structural on the
/// hash-consed expression. Errors: Unimplemented for any other expression.
absl::StatusOr<const char *> cublasLtEpilogue(const program::GemmEpilogue &e);

}  // namespace fusec::codegen

#endif  // FUSEC_CODEGEN_CUDA_CUBLASEPILOGUE_H
