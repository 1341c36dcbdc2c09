//===- CublasEpilogue.cpp - GEMM epilogue expressions to cuBLASLt ---------===//
#include "codegen/cuda/CublasEpilogue.h"

namespace fusec::codegen {

absl::StatusOr<const char *> cublasLtEpilogue(const program::GemmEpilogue &e) {
  if (e.empty()) return "none";
  // Rebuild each candidate in a copy of the spec: hash-consing gives the
  // existing id when the candidate is structurally the epilogue's value.
  program::GemmEpilogue c = e;
  const int acc = c.accumulator();
  // With a bias buffer, the bias must be added (the manifest passes it).
  const bool bias = c.hasBias();
  const int base =
      bias ? c.spec.binary(program::BinaryOp::kAdd, acc, c.addBias(c.spec.buffers[1].dtype)) : acc;
  if (e.value == base) return bias ? "bias" : "none";
  if (e.value == program::buildRelu(c.spec, base)) return bias ? "relu_bias" : "relu";
  if (e.value == program::buildGeluTanh(c.spec, base)) return bias ? "gelu_bias" : "gelu";
  return absl::UnimplementedError("codegen: GEMM epilogue that no cuBLASLt epilogue computes");
}

}  // namespace fusec::codegen
