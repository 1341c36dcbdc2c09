//===- QuantGeometry.h - QuantizeLinear / DequantizeLinear parameters -*- C++ -*-===//
//
// How the scale and zero point of ONNX QuantizeLinear / DequantizeLinear
// (opsets 10-25; ir/Ops.def) map onto x, decided once from the shapes and
// the axis / block_size attributes, for shape inference, the reference
// interpreter and the lowering alike:
//   per tensor  the parameter holds one element (rank 0, or rank 1 of
//               length 1): every element of x reads it;
//   per axis    block_size = 0 and the parameter is 1-D of length
//               x.shape[axis]: x[..., i, ...] reads param[i];
//   blocked     block_size > 0 and the parameter has x's rank with
//               param.shape[axis] = ceil(x.shape[axis] / block_size) and
//               every other dim equal to x's: x[..., i, ...] reads
//               param[..., i / block_size, ...] (the last block may be
//               short, as onnx.reference's replication then take).
// The result dtypes: QuantizeLinear gives output_dtype when set, else the
// zero point's dtype, else u8; DequantizeLinear gives output_dtype when
// set, else the scale's dtype.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_QUANTGEOMETRY_H
#define FUSEC_IR_QUANTGEOMETRY_H

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/DType.h"
#include "ir/Graph.h"

namespace fusec::ir {

enum class QuantMode { kPerTensor, kPerAxis, kBlocked };

struct QuantGeometry {
  QuantMode mode = QuantMode::kPerTensor;
  int64_t axis = 0;       ///< normalised into [0, rank(x)) (per axis, blocked)
  int64_t blockSize = 0;  ///< blocked only
};

/// The geometry for x of shape \p x and a scale (or zero point) of shape
/// \p param (-1 for an unknown extent; a known extent is checked) under the
/// attributes of QuantizeLinear / DequantizeLinear node \p n. Errors:
/// InvalidArgument naming the mismatch (axis out of range, a 1-D parameter
/// whose length is not x's extent on the axis, a blocked parameter of
/// another rank or extent, block_size < 0).
absl::StatusOr<QuantGeometry> quantGeometry(const Node &n, const std::vector<int64_t> &x,
                                            const std::vector<int64_t> &param);

/// The integer range of quantised dtype \p t (u8, i8, u16, i16, i4, u4, i2,
/// u2; also i32 / u32 for DequantizeLinear's input). False for other dtypes
/// (the float8 / float4 results saturate as Cast does).
bool quantRange(DType t, int64_t *lo, int64_t *hi);

/// The result dtype of a QuantizeLinear node whose zero point has dtype
/// \p zeroPoint (kUndefined when absent), or of a DequantizeLinear node whose
/// scale has dtype \p scale; InvalidArgument for an output_dtype fusec does
/// not quantise to (f8e8m0, ...) or one that disagrees with the zero point.
absl::StatusOr<DType> quantizeResultDType(const Node &n, DType zeroPoint);
absl::StatusOr<DType> dequantizeResultDType(const Node &n, DType scale);

/// The dtype QuantizeLinear divides in: the precision attribute when set
/// (opset 23+), else x's dtype, promoted as numpy does for an integer x
/// (f64) and a mixed pair (the wider float).
absl::StatusOr<DType> quantizeComputeDType(const Node &n, DType x, DType scale);

}  // namespace fusec::ir

#endif  // FUSEC_IR_QUANTGEOMETRY_H
