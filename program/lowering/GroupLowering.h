//===- GroupLowering.h - One fused group to one KernelSpec ------*- C++ -*-===//
//
// Internal to program/lowering (not installed for other libraries).
//
// Each op's semantics are written in the scalar language of KernelSpec by
// valueAt(v, idx): "the expression for tensor v at indices idx", built
// recursively through the group's members (consumer-driven, so broadcasts,
// transposes, slices and gathers become index arithmetic) and ending in
// Loads of the group's inputs. Expressions are hash-consed, so each member
// result is computed once per point.
//
// Reductions (Softmax, LogSoftmax, LayerNormalization, RMSNormalization,
// Reduce*, ArgMax/ArgMin, pooling windows, the K loop of a fallback MatMul)
// share one domain per kernel: parallel dims = the kept dims of the first
// reduction (the anchor), reduced dims = its reduced dims. Another reduction
// joins only if it reduces the same rows (checked structurally: its row
// index expression must equal the domain's).
//
// Semantics follow the ONNX operator pages (opset 13+ forms; the importer
// upgrades older ones).
//
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_LOWERING_GROUPLOWERING_H
#define FUSEC_PROGRAM_LOWERING_GROUPLOWERING_H

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "program/Lowering.h"
#include "support/Status.h"

namespace fusec::program::lowering {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;
using Shape = std::vector<int64_t>;

inline int64_t prod(const Shape &s, size_t b = 0, size_t e = std::string::npos) {
  int64_t n = 1;
  for (size_t i = b; i < std::min(e, s.size()); ++i) n *= s[i];
  return n;
}

inline absl::StatusOr<Shape> staticShape(const Value *v) {
  if (!v) return absl::InternalError("codegen: missing value (an absent operand)");
  if (!v->type().rankKnown || !v->type().isStatic())
    return absl::InvalidArgumentError(absl::StrCat("value '", v->name(), "' has non-static type ",
                                                   v->type().str(),
                                                   " (bind dims with --shape)"));
  return v->type().staticShape();
}

inline std::string nodeDesc(const Node &n) { return absl::StrCat("'", n.name(), "' (", n.opType(), ")"); }

inline absl::Status unimplemented(const Node &n, const std::string &why) {
  return absl::UnimplementedError(absl::StrCat("codegen: cannot lower node ", nodeDesc(n), ": ", why));
}

/// Integer values of a constant input; nullopt if absent / not constant.
inline std::optional<std::vector<int64_t>> constInts(const Value *v) {
  if (!v || !v->isConstant()) return std::nullopt;
  return v->constant()->toInts();
}

inline bool isFloatCompute(ScalarType t) { return t == ScalarType::kF32 || t == ScalarType::kF64; }

/// Axes of a reduction node over its input of rank \p rank, sorted; and keepdims.
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool keepDims = true;
};

/// Axes reduced by reduction node \p n over an input of rank \p rank.
/// Errors: Unimplemented for an axis out of range or non-constant axes.
absl::StatusOr<ReduceAxes> reductionAxes(const Node &n, int64_t rank);

/// One sliced axis of a Slice node: its index in the input (normalised),
/// the first element read (clamped into the input as ONNX Slice does: to
/// [0, d] for a positive step, [0, d - 1] for a negative one) and the step.
struct SliceAxis {
  int64_t axis = 0, start = 0, step = 1;
};

/// The sliced axes of Slice node \p n over an input of shape \p in (the
/// output shape comes from shape inference). Errors: Unimplemented when its
/// starts, ends, axes or steps are not constants.
absl::StatusOr<std::vector<SliceAxis>> constSliceAxes(const Node &n, const Shape &in);

/// True for the ops that reduce rows (Softmax, LayerNormalization, Reduce*, ...).
bool isRowReductionOp(OpKind k);

//===----------------------------------------------------------------------===//
// GroupLowering: one generated kernel.
//===----------------------------------------------------------------------===//

class GroupLowering {
 public:
  GroupLowering(const ir::Graph &graph, const std::vector<const Node *> &members,
                const LoweringOptions &opts,
                const absl::flat_hash_map<const Value *, std::vector<Node *>> &users)
      : graph_(graph), members_(members.begin(), members.end()), order_(members), opts_(opts),
        users_(users) {
    spec_.mergeIntConstants = !opts.distinctIntConstants;
  }

  /// Lowers the group; \p external are member results read from memory
  /// instead (the output of a library call before its epilogue).
  absl::StatusOr<WorkItem> run(const std::set<const Value *> &external);

 private:
  // Semantics.
  absl::StatusOr<int> valueAt(const Value *v, const std::vector<int> &idx);
  absl::StatusOr<int> nodeAt(const Node &n, int result, const std::vector<int> &idx);
  absl::StatusOr<int> elementwiseAt(const Node &n, int result, const std::vector<int> &idx);
  absl::StatusOr<int> layoutAt(const Node &n, const std::vector<int> &idx);
  absl::StatusOr<int> reductionAt(const Node &n, int result, const std::vector<int> &idx);
  absl::StatusOr<int> poolAt(const Node &n, const std::vector<int> &idx);
  absl::StatusOr<int> matmulAt(const Node &n, const std::vector<int> &idx);
  /// Resize at output point \p idx: per resized axis the source coordinate
  /// (ir/Resample.h's formulas, in f64), the taps clamped into the input
  /// and their weights; the sum over the taps' product grid (Resize.cpp).
  absl::StatusOr<int> resizeAt(const Node &n, const std::vector<int> &idx);
  /// GridSample at output point \p idx (n, c, grid point): the position from
  /// the grid's coordinates (f64), padding applied, the taps gathered from
  /// X with their weights (GridSample.cpp).
  absl::StatusOr<int> gridSampleAt(const Node &n, const std::vector<int> &idx);
  /// ConvTranspose at output point \p idx (the kernel's anchor): the sum
  /// over the group's input channels and the kernel taps that reach it.
  absl::StatusOr<int> convTransposeAt(const Node &n, const std::vector<int> &idx);
  /// CumSum / CumProd (their own kernel): the domain is the output plus one reduced dim
  /// over the scanned axis (Orchestration.cpp).
  absl::Status lowerCumSum(const Node &n);
  /// Det (its own kernel): the domain is the output; the determinant of each
  /// M x M matrix as its permutation expansion in f64, M <= kMaxDetSize.
  absl::Status lowerDet(const Node &n);
  /// RoiAlign (its own kernel): the domain is the output [R, C, oh, ow]; per
  /// bin sampling_ratio^2 bilinear samples gathered from X (GridSample.cpp).
  /// Errors: Unimplemented for sampling_ratio 0 (a data-dependent count).
  absl::Status lowerRoiAlign(const Node &n);
  /// TopK (its own kernel): rows over the input without its axis, the
  /// reduced dim over the axis, k selection passes; stores the outputs
  /// among \p outputs (Select.cpp). Errors: Unimplemented for a run-time k
  /// or k above the kernel's limit, naming the node.
  absl::Status lowerTopK(const Node &n, const std::vector<const Value *> &outputs);
  /// ScatterND / ScatterElements (their own kernel): the domain is the
  /// output plus one reduced dim over the candidate updates (Select.cpp).
  absl::Status lowerScatter(const Node &n);
  /// Lowers, without recursion, the operands of \p v at \p idx that valueAt
  /// would reach through elementwise members and views, in the order it
  /// would reach them (the expressions come out identical); valueAt(v, idx)
  /// then finds them memoised.
  absl::Status lowerOperandsFirst(const Value *v, const std::vector<int> &idx);
  /// How many of \p n's inputs its elementwise lowering reads first, in
  /// order, at its output's index broadcast (0 for other ops).
  static int leadingInputs(const Node &n, int result);
  /// Input \p i of \p n at the indices of the output (shape \p outShape) broadcast to it.
  absl::StatusOr<int> bcastInput(const Node &n, int i, const std::vector<int> &idx,
                                 const Shape &outShape);
  /// A load of \p v (an input of the group) with an optional guard.
  absl::StatusOr<int> loadValue(const Value *v, const std::vector<int> &idx, int guard = -1);
  /// The one element of input \p i of \p n, an operand the op reads as a
  /// scalar (FUSEC_SCALARS rows of ir/Ops.def: Clip's bounds, Pad's
  /// constant_value, Range's inputs). Error, naming the node, when it holds
  /// more than one element (shape inference refuses that first); an empty
  /// one reads as 0.
  absl::StatusOr<int> scalarAt(const Node &n, int i);
  /// valueAt for a value that must only be read where \p guard holds (else 0).
  /// A value computed in the kernel is computed at \p idx clamped into its
  /// shape (the caller selects): every dim, or only dim \p onlyDim when the
  /// others are known to be in range (Concat: its axis), which keeps the
  /// other dims' extents out of the kernel's constants (dynamic shapes).
  absl::StatusOr<int> guardedAt(const Value *v, std::vector<int> idx, int guard, int onlyDim = -1);
  int bufferFor(const Value *v, bool written);
  bool isMemberResult(const Value *v) const;
  /// Follows views from \p v back to a member result; null if it leaves the group.
  const Value *viewSource(const Value *v, std::vector<const Node *> *chain) const;

  // Domain setup.
  absl::Status setupDomain(const std::vector<const Value *> &outputs);
  absl::Status setupReductionDomain(const Node &anchor);
  /// Maps row coordinates of a reduction over input shape \p s with \p axes to
  /// (kept-dims coords, reduced coords in the domain). Checks the row.
  absl::StatusOr<std::vector<int>> reducedInputIndex(const Node &n, const Shape &s,
                                                     const std::vector<int64_t> &axes,
                                                     const std::vector<int> &keptIdx);

  /// Indices \p idx of a point in shape \p from, re-expressed in shape \p to
  /// (same element count, row-major): direct when the shapes differ only
  /// in 1-dims, else through the flat offset.
  std::vector<int> reshapeIndex(const std::vector<int> &idx, const Shape &from, const Shape &to);

  int c(double v, ScalarType t) { return isFloatCompute(t) ? spec_.constF(v, t) : spec_.constI(static_cast<int64_t>(v), t); }
  int bin(BinaryOp op, int a, int b) { return spec_.binary(op, a, b); }
  int un(UnaryOp op, int a) { return spec_.unary(op, a); }
  ScalarType typeOf(int e) const { return spec_.expr(e).type; }

  const ir::Graph &graph_;
  std::set<const Node *> members_;
  std::vector<const Node *> order_;
  const LoweringOptions &opts_;
  const absl::flat_hash_map<const Value *, std::vector<Node *>> &users_;
  std::set<const Value *> external_;

  KernelSpec spec_;
  std::vector<const Value *> bufferValues_;
  std::map<const Value *, int> bufferOf_;
  std::map<std::pair<const Value *, std::vector<int>>, int> memo_;

  // Domain.
  Shape domainShape_;          ///< parallel dims then reduced dims
  std::vector<int> domainIdx_;
  size_t numParallel_ = 0;
  const Node *anchor_ = nullptr;
  /// The anchor reduction's input shape and the domain point's coordinates
  /// in it (element-level outputs are laid out like the anchor's input).
  Shape anchorShape_;
  std::vector<int> anchorIdx_;
  std::map<const Node *, std::vector<int>> nodeReductions_;
};

/// GEMM parameters for a MatMul / Gemm node; nullopt if the library cannot
/// run it (batch broadcast not one strided batch, dtype).
std::optional<GemmParams> gemmFor(const Node &n, bool allowTf32);
/// Convolution parameters of a Conv node. Errors: Unimplemented.
absl::StatusOr<ConvParams> convFor(const Node &n);
/// Matches the epilogue chain of a GEMM group against the library's fused
/// epilogues (and, as \p opts allow, a final Cast to f32: foldableOutputCast()).
/// \returns the final Value on success, null when a member is left over.
const Value *matchGemmEpilogue(const Node &anchor, const std::vector<const Node *> &rest,
                               GemmParams &g, const LoweringOptions &opts);
/// Folds \p kernel, a generated pointwise kernel of one store that reads the
/// GEMM's result \p acc at the point it writes, into g.epilogue (after what
/// g.epilogue already computes): its other buffers become
/// g.epilogueInputs, its output g.d. \returns false, \p g unchanged, when
/// the kernel is not of that form (a reduction, a guard, \p acc read at
/// another point, an output of another dtype, an empty GEMM, a batched
/// GEMM other than row blocks of A times one B (folded into M), a domain
/// whose trailing dims do not make up N).
bool foldIntoGemmEpilogue(const WorkItem &kernel, const Value *acc, GemmParams &g);
/// Folds \p kernel, a generated pointwise kernel of one store over the
/// convolution's output [N, Mo, spatial...] (dims merged or split within
/// the image, channel and pixel parts) that reads the convolution's result
/// \p acc at the point it writes, into conv.epilogue (after the bias), at
/// the implicit GEMM's (m, oc) = (image * P + pixel, channel): its other
/// buffers become conv.epilogueInputs (read as [image, channel, pixel]
/// with parts merged when a load is the domain point with whole parts
/// broadcast), its output conv.y. \returns false, \p conv unchanged,
/// when the kernel is not of that form (as foldIntoGemmEpilogue; also an
/// output of another dtype than the convolution's). The caller checks that
/// nothing else reads \p acc.
bool foldIntoConvEpilogue(const WorkItem &kernel, const Value *acc, ConvParams &conv);

/// The one attention kernel of a group of one FusedAttention and Transpose /
/// Slice / Split members (AttentionOperands.cpp): Q, K and V read through
/// the members' chains as strides (StridedAlias buffers where they start
/// past their root), O written into a member Transpose's result. \p users is
/// Graph::userMap(), \p graphOutputs the graph's outputs. Errors:
/// Unimplemented when a member is another op, a chain's result is read
/// outside it, a reshape is not expressible as strides, the head dim is not
/// innermost, a start is not a multiple of 8 elements, or
/// !opts.foldAttentionLayouts; attentionSpecFor()'s errors.
absl::StatusOr<std::vector<WorkItem>> lowerAttentionGroup(
    const std::string &name, const std::vector<const Node *> &members, const LoweringOptions &opts,
    const absl::flat_hash_map<const Value *, std::vector<Node *>> &users,
    const std::vector<const Value *> &graphOutputs);

}  // namespace fusec::program::lowering

#endif  // FUSEC_PROGRAM_LOWERING_GROUPLOWERING_H
