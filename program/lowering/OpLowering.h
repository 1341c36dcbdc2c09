//===- OpLowering.h - Each op's scalar lowering, found through the op table -*- C++ -*-===//
//
// Which part of the group lowering writes an op's semantics in the
// KernelSpec scalar language. One entry per row of ir/Ops.def, read through
// the table's X-macro: a row added to Ops.def without an entry here is a
// compile error ("'NewOp' is not a member of ...ops"), so a new op cannot be
// fused and then silently refused by codegen.
//
// Only the first column of Ops.def (the enum name) is read here; the rest
// of the row is ignored (FUSEC_OP(E, ...)), so columns may be added.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_LOWERING_OPLOWERING_H
#define FUSEC_PROGRAM_LOWERING_OPLOWERING_H

#include <cstddef>

#include "ir/OpTable.h"

namespace fusec::program::lowering {

/// Where an op's value at a point of the domain is built.
enum class ScalarLowering {
  kElementwise,  ///< elementwiseAt: broadcast inputs, one scalar op (Values.cpp)
  kLayout,       ///< layoutAt: index arithmetic into the input (Layout.cpp)
  kReduction,    ///< reductionAt: a row reduction of the kernel's domain (Reduction.cpp)
  kPool,         ///< poolAt: a guarded window reduction (Pooling.cpp)
  kMatMul,       ///< matmulAt: a K reduction, when no library call runs it (Pooling.cpp)
  kResample,     ///< resizeAt / gridSampleAt: a weighted window of taps per resized axis
                 ///< (Resize.cpp, GridSample.cpp)
  kTransposedConv,  ///< convTransposeAt: a guarded reduction over channels and taps (Pooling.cpp)
  kOwnKernel,    ///< never inside a fused expression: a library call (Conv), an attention
                 ///< spec (FusedAttention), a multi-output kernel (Split, TopK), a scan
                 ///< (CumSum), a scatter (ScatterND, ScatterElements) or data (Constant)
};

namespace ops {
inline constexpr ScalarLowering Abs = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Neg = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Exp = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Log = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sqrt = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Reciprocal = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Erf = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Tanh = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sigmoid = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Relu = ScalarLowering::kElementwise;
inline constexpr ScalarLowering LeakyRelu = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Elu = ScalarLowering::kElementwise;
inline constexpr ScalarLowering HardSigmoid = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Swish = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Softplus = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Gelu = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sin = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Cos = ScalarLowering::kElementwise;
inline constexpr ScalarLowering BitwiseAnd = ScalarLowering::kElementwise;
inline constexpr ScalarLowering BitwiseOr = ScalarLowering::kElementwise;
inline constexpr ScalarLowering BitwiseXor = ScalarLowering::kElementwise;
inline constexpr ScalarLowering BitwiseNot = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Tan = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Asin = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Acos = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Atan = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sinh = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Cosh = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Asinh = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Acosh = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Atanh = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Floor = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Ceil = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Round = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sign = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Not = ScalarLowering::kElementwise;
inline constexpr ScalarLowering IsNaN = ScalarLowering::kElementwise;
inline constexpr ScalarLowering IsInf = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Cast = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Identity = ScalarLowering::kLayout;
inline constexpr ScalarLowering Dropout = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Clip = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Add = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sub = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Mul = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Div = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Pow = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Mod = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Max = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Min = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Sum = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Mean = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Equal = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Less = ScalarLowering::kElementwise;
inline constexpr ScalarLowering LessOrEqual = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Greater = ScalarLowering::kElementwise;
inline constexpr ScalarLowering GreaterOrEqual = ScalarLowering::kElementwise;
inline constexpr ScalarLowering And = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Or = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Xor = ScalarLowering::kElementwise;
inline constexpr ScalarLowering Where = ScalarLowering::kElementwise;
inline constexpr ScalarLowering PRelu = ScalarLowering::kElementwise;
inline constexpr ScalarLowering BitShift = ScalarLowering::kElementwise;
inline constexpr ScalarLowering QuantizeLinear = ScalarLowering::kElementwise;
inline constexpr ScalarLowering DequantizeLinear = ScalarLowering::kElementwise;
inline constexpr ScalarLowering MatMul = ScalarLowering::kMatMul;
inline constexpr ScalarLowering Gemm = ScalarLowering::kMatMul;
inline constexpr ScalarLowering Conv = ScalarLowering::kOwnKernel;
inline constexpr ScalarLowering ConvTranspose = ScalarLowering::kTransposedConv;
inline constexpr ScalarLowering Softmax = ScalarLowering::kReduction;
inline constexpr ScalarLowering LogSoftmax = ScalarLowering::kReduction;
inline constexpr ScalarLowering Hardmax = ScalarLowering::kReduction;
inline constexpr ScalarLowering LayerNormalization = ScalarLowering::kReduction;
inline constexpr ScalarLowering RMSNormalization = ScalarLowering::kReduction;
inline constexpr ScalarLowering BatchNormalization = ScalarLowering::kElementwise;
inline constexpr ScalarLowering ReduceMean = ScalarLowering::kReduction;
inline constexpr ScalarLowering ReduceSum = ScalarLowering::kReduction;
inline constexpr ScalarLowering ReduceMax = ScalarLowering::kReduction;
inline constexpr ScalarLowering ReduceMin = ScalarLowering::kReduction;
inline constexpr ScalarLowering ReduceProd = ScalarLowering::kReduction;
inline constexpr ScalarLowering ReduceSumSquare = ScalarLowering::kReduction;
inline constexpr ScalarLowering ReduceL2 = ScalarLowering::kReduction;
inline constexpr ScalarLowering ArgMax = ScalarLowering::kReduction;
inline constexpr ScalarLowering ArgMin = ScalarLowering::kReduction;
inline constexpr ScalarLowering TopK = ScalarLowering::kOwnKernel;  // k selection passes (Orchestration.cpp)
inline constexpr ScalarLowering MaxPool = ScalarLowering::kPool;
inline constexpr ScalarLowering AveragePool = ScalarLowering::kPool;
inline constexpr ScalarLowering GlobalAveragePool = ScalarLowering::kReduction;
inline constexpr ScalarLowering GlobalMaxPool = ScalarLowering::kReduction;
inline constexpr ScalarLowering Reshape = ScalarLowering::kLayout;
inline constexpr ScalarLowering Transpose = ScalarLowering::kLayout;
inline constexpr ScalarLowering Flatten = ScalarLowering::kLayout;
inline constexpr ScalarLowering Squeeze = ScalarLowering::kLayout;
inline constexpr ScalarLowering Unsqueeze = ScalarLowering::kLayout;
inline constexpr ScalarLowering Concat = ScalarLowering::kLayout;
inline constexpr ScalarLowering Split = ScalarLowering::kOwnKernel;
inline constexpr ScalarLowering Slice = ScalarLowering::kLayout;
inline constexpr ScalarLowering Gather = ScalarLowering::kLayout;
inline constexpr ScalarLowering GatherElements = ScalarLowering::kLayout;
inline constexpr ScalarLowering GatherND = ScalarLowering::kLayout;
inline constexpr ScalarLowering Expand = ScalarLowering::kLayout;
inline constexpr ScalarLowering Tile = ScalarLowering::kLayout;
inline constexpr ScalarLowering Trilu = ScalarLowering::kLayout;
inline constexpr ScalarLowering Pad = ScalarLowering::kLayout;
inline constexpr ScalarLowering OneHot = ScalarLowering::kLayout;
inline constexpr ScalarLowering ScatterND = ScalarLowering::kOwnKernel;        // Orchestration.cpp
inline constexpr ScalarLowering ScatterElements = ScalarLowering::kOwnKernel;  // Orchestration.cpp
inline constexpr ScalarLowering CumSum = ScalarLowering::kOwnKernel;  // a scan (Orchestration.cpp)
inline constexpr ScalarLowering Resize = ScalarLowering::kResample;
inline constexpr ScalarLowering GridSample = ScalarLowering::kResample;  // gridSampleAt (GridSample.cpp)
inline constexpr ScalarLowering RoiAlign = ScalarLowering::kOwnKernel;   // samples per bin (GridSample.cpp)
inline constexpr ScalarLowering CumProd = ScalarLowering::kOwnKernel;    // a scan, as CumSum
inline constexpr ScalarLowering Compress = ScalarLowering::kOwnKernel;   // data-dependent size: refused
inline constexpr ScalarLowering NonMaxSuppression = ScalarLowering::kOwnKernel;  // data-dependent size: refused
inline constexpr ScalarLowering Det = ScalarLowering::kOwnKernel;        // cofactor sum (Orchestration.cpp)
inline constexpr ScalarLowering BitCast = ScalarLowering::kOwnKernel;    // no bit-cast scalar op: refused
inline constexpr ScalarLowering Col2Im = ScalarLowering::kOwnKernel;     // no kernel yet: refused
inline constexpr ScalarLowering Unique = ScalarLowering::kOwnKernel;     // data-dependent size: refused
inline constexpr ScalarLowering TensorScatter = ScalarLowering::kOwnKernel;  // no kernel yet: refused
inline constexpr ScalarLowering Shape = ScalarLowering::kLayout;
inline constexpr ScalarLowering Size = ScalarLowering::kLayout;
inline constexpr ScalarLowering ConstantOfShape = ScalarLowering::kLayout;
inline constexpr ScalarLowering Range = ScalarLowering::kLayout;
inline constexpr ScalarLowering Constant = ScalarLowering::kOwnKernel;
inline constexpr ScalarLowering FusedAttention = ScalarLowering::kOwnKernel;
}  // namespace ops

/// The table, in OpKind order (ir/OpTable.h numbers ops in Ops.def order).
inline constexpr ScalarLowering kScalarLowering[] = {
#define FUSEC_OP(E, ...) ops::E,
#include "ir/Ops.def"
#undef FUSEC_OP
};

/// The scalar lowering of op \p k.
inline ScalarLowering scalarLoweringOf(ir::OpKind k) {
  static_assert(sizeof(kScalarLowering) / sizeof(kScalarLowering[0]) ==
                    static_cast<size_t>(ir::OpKind::kUnregistered),
                "one scalar lowering per Ops.def row");
  if (k == ir::OpKind::kUnregistered) return ScalarLowering::kOwnKernel;
  return kScalarLowering[static_cast<int>(k)];
}

}  // namespace fusec::program::lowering

#endif  // FUSEC_PROGRAM_LOWERING_OPLOWERING_H
