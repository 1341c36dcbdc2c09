//===- OpTable.h - Op descriptions read by every part of fusec --*- C++ -*-===//
//
// The op table (rows in ir/Ops.def) and its hooks: type/shape inference and
// cost counting (FLOPs and minimum HBM bytes) per op.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_OPTABLE_H
#define FUSEC_IR_OPTABLE_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace fusec::ir {

enum class OpKind : int {
#define FUSEC_OP(E, N, MinI, MaxI, MinO, MaxO, C, D) k##E,
#include "ir/Ops.def"
  kUnregistered,
};

/// How an op takes part in fusion.
enum class FusionClass {
  kElementwise,  ///< one output element from the same-index elements of inputs (with broadcast)
  kInjective,    ///< layout/data movement: each output element reads one input element
  kReduction,    ///< reduces along some axes (incl. softmax / normalisation rows)
  kContraction,  ///< GEMM-like, usually compute-bound
  kShape,        ///< produces metadata or constants; folded when shapes are known
  kOpaque,       ///< anything else; never fused
};

struct OpInfo {
  OpKind kind;
  const char *name;  ///< ONNX op_type
  int minInputs;
  int maxInputs;     ///< -1: variadic
  int minOutputs;
  int maxOutputs;    ///< -1: variadic
  FusionClass fusionClass;
  const char *doc;
};

/// \returns the row for ONNX op_type \p name, or null if fusec lacks it.
const OpInfo *lookupOp(std::string_view name);
/// \returns the row for \p kind (not kUnregistered).
const OpInfo &opInfo(OpKind kind);
/// All rows, in table order.
const std::vector<OpInfo> &allOps();
/// Text name of a fusion class ("elementwise", ...).
const char *fusionClassName(FusionClass c);

}  // namespace fusec::ir

#endif  // FUSEC_IR_OPTABLE_H
