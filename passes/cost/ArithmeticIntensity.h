//===- ArithmeticIntensity.h - FLOPs, HBM bytes and roofline cost -*- C++ -*-===//
//
// Per-op cost from a node and its static input/output types, and per-group
// (one fused kernel) cost against a TargetSpec's roofline.
//
// FLOPs (one add, multiply, compare, select or special-function evaluation =
// 1 FLOP; an FMA = 2):
//   MatMul       2 * K * (elements of the output)  (= 2*M*N*K*batch)
//   Gemm         2*M*N*K, + M*N if alpha != 1, + M*N (+ M*N if beta != 1) with C
//   Conv         2 * (elements of Y) * Cin/group * prod(kernel), + |Y| with bias
//   ConvTranspose 2 * (elements of X) * Cout/group * prod(kernel), + |Y| with bias
//   elementwise  1 per output element for arithmetic, comparisons, selects
//                and transcendentals (kTranscendentalFlops = 1: one SFU /
//                ScalarEngine evaluation; Exp, Log, Erf, Tanh, Sqrt, Sin, ...);
//                composite activations count their primitive steps (Sigmoid
//                3, Softplus 3, Elu 3, HardSigmoid 3, Swish 4 (5 with alpha),
//                LeakyRelu 2, Gelu 5, or 9 with approximate="tanh", Clip 2,
//                BatchNormalization 4);
//                n-ary Max/Min/Sum n-1 (Mean n); Cast, Identity, Dropout 0
//   reductions   1 per input element (ReduceSumSquare, ReduceL2 2), plus 1 per
//                output element for ReduceMean, ReduceL2, average pooling
//   pooling      prod(kernel_shape) per output element
//   Softmax, LogSoftmax  5 per element (max, subtract, exp, sum, divide/log)
//   LayerNormalization   8 per element; RMSNormalization 4 per element
//   PRelu        2 per element (compare, multiply); CumSum 1 per input element
//   QuantizeLinear 5 per element (divide, round, add, clamp); DequantizeLinear 2
//   TopK         2 * (axis length) per output element (k selection passes);
//                Hardmax 2 per element; BitShift 1; OneHot 0 (layout);
//                ScatterND / ScatterElements 1 per update element (0 for none)
//   Resize       nearest 0 (a gather: reads min(data, output) like Gather);
//                linear / cubic 2 per tap per output element, 2^k / 4^k taps
//                over the k resized axes (antialias's wider window not counted)
//   GridSample   as Resize over the spatial axes (nearest 0); RoiAlign 8 per
//                bilinear sample, sampling_ratio^2 per output element (2^2 if 0)
//   CumProd 1 per input element; Compress 0 (movement); BitCast 0; Col2Im 1 per
//   input element; Unique n log2 n (the sort); NonMaxSuppression 10
//                per (score, box) pair; Det M per input element (LU)
//   layout (Reshape, Transpose, Gather, Slice, Concat, ...) and Shape-class 0
//
// Minimum HBM bytes: every distinct input value is read once and every output
// written once (a constant input is a weight and counts as a read), except:
// Gather/GatherElements/GatherND and Slice read only the data they use
// (min(data, elements of the output)); Shape and Size read no data; operands
// that only carry shape or index parameters (Reshape's shape, Slice's
// starts/ends/axes/steps, Squeeze/Unsqueeze/Reduce* axes, Expand's shape,
// Tile's repeats, Pad's pads/axes, Split's split, Trilu's k,
// ConstantOfShape's shape) are metadata and read 0 bytes. Layout ops are
// costed as copies (a runtime may alias a Reshape instead).
//
// Types that are not fully static give an unknown cost (known == false);
// nothing here fails or aborts on such input.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_COST_ARITHMETICINTENSITY_H
#define FUSEC_PASSES_COST_ARITHMETICINTENSITY_H

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/Graph.h"
#include "passes/cost/TargetSpec.h"
#include "passes/fusion/FusionPlan.h"

namespace fusec::passes {

/// FLOPs charged for one transcendental (exp, log, erf, tanh, sqrt, sin ...).
inline constexpr double kTranscendentalFlops = 1;

/// Cost of one op run on its own.
struct OpCost {
  bool known = false;       ///< false if some type is not static
  double flops = 0;         ///< floating-point operations
  double bytesRead = 0;     ///< minimum HBM bytes read
  double bytesWritten = 0;  ///< HBM bytes written (all outputs)
  bool contraction = false; ///< done by the matrix unit (MatMul, Gemm, Conv)
  double bytes() const { return bytesRead + bytesWritten; }
};

/// \returns FLOPs and minimum HBM bytes of \p node from its input/output
/// types (rules in the file comment). Unknown (known == false) if any input
/// or output whose size matters is not static, or the op is unregistered.
OpCost opCost(const ir::Node &node);

/// Minimum bytes \p node reads of its operand \p i (0 for an absent operand
/// or a metadata operand; partial for Gather/Slice data); -1 if unknown.
double operandReadBytes(const ir::Node &node, int i);

/// Roofline cost of a group of nodes executed as one kernel.
struct GroupCost {
  bool known = false;             ///< false if any member's cost is unknown
  double flops = 0;               ///< sum over members
  double bytes = 0;               ///< values entering (read once) + leaving the group
  double bytesUnfused = 0;        ///< sum of the members' own OpCost::bytes()
  double arithmeticIntensity = 0; ///< flops / bytes, FLOP/byte
  bool hasContraction = false;    ///< uses the matrix unit's peak
  ir::DType dtype = ir::DType::kF32;  ///< dtype whose peak applies
  double peakFlops = 0;           ///< FLOP/s of the unit that does the work
  double ridgePoint = 0;          ///< peakFlops / bandwidth, FLOP/byte
  bool memoryBound = true;        ///< arithmeticIntensity < ridgePoint
  double rooflineUs = 0;          ///< max(bytes / bandwidth, flops / peak), microseconds
};

using UserMap = absl::flat_hash_map<const ir::Value *, std::vector<ir::Node *>>;

/// Cost of \p members (nodes of \p graph, any order) as one kernel on
/// \p target. A value enters the group if a member reads it and no member
/// produces it (graph inputs and constants included); it is read once, at the
/// largest operandReadBytes() any member needs. A value leaves the group if a
/// member produces it and a non-member uses it or it is a graph output.
/// \p users is graph.userMap(), passed in to cost many groups cheaply.
GroupCost groupCost(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                    const TargetSpec &target);
GroupCost groupCost(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                    const TargetSpec &target, const UserMap &users);

/// Cost of \p node run on its own (its OpCost against \p target's roofline;
/// bytes == bytesUnfused, every output counted as written).
GroupCost nodeCost(const ir::Node &node, const TargetSpec &target);

/// Copies flops, bytes, bytesUnfused, intensity, bound and roofline time of
/// \p cost into \p kernel.
void fillKernelCost(const GroupCost &cost, Kernel &kernel);

/// Adds \p bytes that the group's lowering moves beyond its own inputs and
/// outputs (program::GroupNote::extraBytes: a library call's result written
/// and read back by a separate epilogue kernel) to \p cost, and recomputes
/// its arithmetic intensity, bound and roofline time on \p target.
void addLoweringBytes(GroupCost &cost, double bytes, const TargetSpec &target);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_COST_ARITHMETICINTENSITY_H
