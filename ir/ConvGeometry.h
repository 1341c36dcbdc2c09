//===- ConvGeometry.h - ConvTranspose geometry shared by shapes, interpreter, lowering -*- C++ -*-===//
//
// ONNX ConvTranspose (opset 11+; ir/Ops.def) decided once from X's and W's
// shapes and the attributes: per spatial axis the stride, dilation, kernel
// extent, the padding at the start, and the output extent. Output element
// o along an axis receives input element i through kernel tap k where
//   o = i * stride - padBegin + k * dilation.
// Rules (ONNX operator page; onnx.reference for output_shape without
// auto_pad): with auto_pad SAME_UPPER / SAME_LOWER the output extent is
// output_shape (default in * stride) and the total padding
//   stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - out
// is split begin = total / 2 (SAME_UPPER) or total - total / 2
// (SAME_LOWER); otherwise pads (default 0) apply and the output extent is
// output_shape when given, else
//   stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - padBegin - padEnd.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_CONVGEOMETRY_H
#define FUSEC_IR_CONVGEOMETRY_H

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"

namespace fusec::ir {

struct ConvTransposeGeometry {
  int64_t group = 1;
  int64_t inChannels = 0;   ///< C (X's dim 1)
  int64_t outChannels = 0;  ///< M = W's dim 1 * group
  std::vector<int64_t> strides, dilations, kernel, padBegin;
  std::vector<int64_t> inSpatial;   ///< X's spatial extents (-1 unknown)
  std::vector<int64_t> outSpatial;  ///< Y's spatial extents (-1 unknown)
};

/// The geometry of ConvTranspose node \p n for X of shape \p x and W of
/// shape \p w ([N, C, D1..Dk] and [C, M/group, K1..Kk]; -1 for an unknown
/// extent). Errors: InvalidArgument for ranks below 3 or that differ, C not
/// divisible by group or not W's dim 0, attribute lists of the wrong
/// length, non-positive strides / dilations / kernel, output_padding not
/// below stride or dilation, an unknown auto_pad, a negative output extent.
absl::StatusOr<ConvTransposeGeometry> convTransposeGeometry(const Node &n,
                                                            const std::vector<int64_t> &x,
                                                            const std::vector<int64_t> &w);

}  // namespace fusec::ir

#endif  // FUSEC_IR_CONVGEOMETRY_H
