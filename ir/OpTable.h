//===- OpTable.h - Op descriptions read by every part of fusec --*- C++ -*-===//
//
// The op table (rows in ir/Ops.def): names, arity, fusion class, attribute
// schema and traits (view, row axes, metadata-only operands). Per-op code of
// each concern (shape inference, cost, interpreter) is an exhaustive switch
// over OpKind in that concern's file; Ops.def's header lists them.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_OPTABLE_H
#define FUSEC_IR_OPTABLE_H

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/Attribute.h"
#include "ir/DType.h"

namespace fusec::ir {

class Node;

enum class OpKind : int {
#define FUSEC_OP(E, ...) k##E,
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

/// Ops.def's View column: whether output 0 is input 0's elements, in the same
/// order (a reshape of the same buffer: no data moves).
enum class ViewTrait {
  kNone,             ///< computes its output
  kView,             ///< always a view (Reshape, Squeeze, Unsqueeze, Flatten, Identity)
  kViewIfOneOutput,  ///< a view when result 1 is absent (inference Dropout without mask)
};

/// Ops.def's Row column: which axes of input 0 form the "row" a row reduction
/// reduces (see rowAxes()).
enum class RowTrait {
  kNone,          ///< no row
  kLastAxis,      ///< attribute axis; a row only when it is the last axis (Softmax, ArgMax)
  kFromAxis,      ///< axes [axis, rank) (LayerNormalization, RMSNormalization)
  kTrailingAxes,  ///< the axes input (Reduce*), a row when it is {k, ..., rank-1}
};

/// Ops.def's FUSEC_DTYPES Class column: the dtypes an operand may have.
enum class DTypeClass {
  kFloat,    ///< f16, bf16, f32, f64
  kNumeric,  ///< floats and integers (not bool)
  kIndex,    ///< i32, i64
  kBool,     ///< bool
  kQuantized,  ///< integers and the narrow dtypes (float8, float4, int4, int2)
  kScale,    ///< Float and f8e8m0 (quantisation scales)
  kAny,      ///< any dtype (the row only asks for one shared dtype)
};

/// One FUSEC_DTYPES row: the inputs in `operands` (bit i: input i; all bits:
/// every input) that are present and typed share one dtype, of class `cls`.
struct DTypeRule {
  DTypeClass cls;
  uint32_t operands;
};

/// Ops.def's FUSEC_SCALARS Class column: how many elements a scalar operand
/// may hold.
enum class ScalarClass {
  kOne,         ///< exactly one (rank 0, or every dim 1)
  kOneOrEmpty,  ///< one, or none (read as the input being absent)
};

/// One FUSEC_SCALARS row: each input in `operands` (bit i: input i) that is
/// present and has a known rank holds the elements `cls` allows.
struct ScalarRule {
  ScalarClass cls;
  uint32_t operands;
};

/// \returns whether \p dtype belongs to \p cls.
bool dtypeInClass(DType dtype, DTypeClass cls);
/// Text name of a dtype class ("float", "numeric", "index", "bool", "any").
const char *dtypeClassName(DTypeClass cls);

/// One attribute of an op's schema (FUSEC_ATTR* rows of Ops.def).
struct AttrSpec {
  enum class Default {
    kValue,     ///< absent means `value`
    kDerived,   ///< absent means a default derived from the inputs; the reader passes it
    kRequired,  ///< the op's hooks refuse a node without it
  };
  const char *name;     ///< ONNX attribute name
  Attribute::Kind kind;
  Default presence;
  Attribute value;      ///< the default when presence == kValue
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
  ViewTrait view;
  RowTrait row;
  uint32_t metadataOperands;     ///< bit i set: input i is metadata only
  std::vector<AttrSpec> attrs;   ///< the attribute schema, sorted by name
  std::vector<DTypeRule> dtypes; ///< operand dtype rules (FUSEC_DTYPES rows)
  std::vector<ScalarRule> scalars; ///< scalar operand rules (FUSEC_SCALARS rows)
};

/// \returns the row for ONNX op_type \p name, or null if fusec lacks it.
const OpInfo *lookupOp(std::string_view name);
/// \returns the row for \p kind (not kUnregistered).
const OpInfo &opInfo(OpKind kind);
/// All rows, in table order.
const std::vector<OpInfo> &allOps();
/// Text name of a fusion class ("elementwise", ...).
const char *fusionClassName(FusionClass c);

/// \returns the schema entry of attribute \p name of \p kind, or null when
/// the op's schema has no such attribute (unknown attributes, e.g. ONNX ones
/// fusec ignores, are kept on nodes and not checked).
const AttrSpec *findAttrSpec(OpKind kind, std::string_view name);

/// \returns whether input \p operand of an op of \p kind is metadata only:
/// its value (a small integer list: Reshape's shape, Slice's starts, ends,
/// axes and steps, Expand's shape, (Un)Squeeze / Reduce* axes, Tile's
/// repeats, Pad's pads and axes, Split's sizes, ConstantOfShape's shape,
/// Trilu's k, Dropout's ratio and training_mode) is read at compile time to
/// decide shapes or index maps, never as tensor data. False for
/// kUnregistered and out-of-range operands.
bool isMetadataOperand(OpKind kind, int operand);

/// \returns whether \p node's output 0 is a view of its input 0: the same
/// elements in the same row-major order, so that no data moves (Reshape,
/// Squeeze, Unsqueeze, Flatten, Identity, and Dropout without a mask
/// result). Named so as not to clash, through argument-dependent lookup,
/// with codegen::isViewNode, which it is meant to replace.
bool nodeIsView(const Node &node);

/// The row of a row reduction: axes [first, rank) of input 0.
struct RowAxes {
  int64_t first;
  int64_t rank;
};

/// \returns the row that \p node reduces, normalised to [0, rank), or
/// nullopt when the node is not a row reduction or input 0's rank or the
/// axes are unknown. Softmax / LogSoftmax / ArgMax / ArgMin: attribute axis,
/// only when it is the last axis ([rank-1, rank)). LayerNormalization /
/// RMSNormalization: [axis, rank). Reduce*: the axes input (a constant; empty
/// means all axes unless noop_with_empty_axes), only when it is the trailing
/// contiguous set {k, ..., rank-1} ([k, rank)). Axis out of range: nullopt.
std::optional<RowAxes> rowAxes(const Node &node);

}  // namespace fusec::ir

#endif  // FUSEC_IR_OPTABLE_H
