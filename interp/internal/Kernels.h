//===- Kernels.h - Per-op reference functions (internal) --------*- C++ -*-===//
//
// Each interp/ops/*.cpp file defines the reference functions of one op family
// and registers them in a KernelTable. Interpreter.cpp owns the table.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_INTERNAL_KERNELS_H
#define FUSEC_INTERP_INTERNAL_KERNELS_H

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

namespace fusec::interp {

/// Inputs of one node evaluation; inputs[i] is null for an omitted optional.
struct KernelArgs {
  const ir::Node &node;
  const std::vector<const ir::Tensor *> &inputs;
  /// Input i or null (also null when i >= inputs.size()).
  const ir::Tensor *in(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
};

using KernelFn = std::function<absl::StatusOr<std::vector<ir::Tensor>>(const KernelArgs &)>;

/// One entry per OpKind (index = static_cast<int>(kind)); empty = unsupported.
using KernelTable = std::vector<KernelFn>;

// Each op family registers its functions here (interp/ops/<Family>.cpp).
void registerElementwiseKernels(KernelTable &table);  // unary, binary, Where, Cast, Clip, ...
void registerReductionKernels(KernelTable &table);    // Reduce*, ArgMax/Min, Softmax, norms
void registerNnKernels(KernelTable &table);           // MatMul, Gemm, Conv, pools, BatchNorm
void registerLayoutKernels(KernelTable &table);       // Reshape ... Slice
void registerMovementKernels(KernelTable &table);     // Gather*, Expand ... Pad, Shape, Range, ...
void registerResizeKernels(KernelTable &table);       // Resize
void registerAttentionKernels(KernelTable &table);    // FusedAttention (fusec op)

}  // namespace fusec::interp

#endif  // FUSEC_INTERP_INTERNAL_KERNELS_H
