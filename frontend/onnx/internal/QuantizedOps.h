//===- QuantizedOps.h - Integer and QLinear ops written at import -*- C++ -*-===//
//
// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (ai.onnx opset
// 10) become op-table ops at import, exactly (bit for bit the onnx.reference
// semantics):
//   MatMulInteger(A, B, a_zp, b_zp)
//       MatMul(Cast(A, i32) - a_zp, Cast(B, i32) - b_zp) in i32 (a 1-D a_zp
//       of M elements is per row: [M, 1]; b_zp per column broadcasts)
//   ConvInteger(X, W, x_zp, w_zp; conv attributes)
//       the same centring (w_zp per output channel: [M, 1, ...]), then the
//       convolution as an i32 GEMM over im2col columns: Pad (zeros: the
//       padding of the centred input), one Gather of constant flat spatial
//       offsets [taps, pixels] (im2col as a layout op that fuses), Reshape
//       to [N, G, C/G * taps, pixels], and MatMul with W reshaped to
//       [G, M/G, C/G * taps]
//   QLinearMatMul / QLinearConv
//       the integer op above (QLinearConv adds its i32 bias), then
//       y = saturate(round_half_even(f64(acc) * f64(x_scale * w_scale /
//       y_scale) + y_zp)): numpy multiplies an int32 array by a float32
//       scale in f64, and the scale product / quotient is computed in the
//       scales' dtype first, as onnx.reference does
// Integer products accumulate in i32 (wrapping as int32 does), so the GEMM
// is exact. Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_QUANTIZEDOPS_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_QUANTIZEDOPS_H

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx/internal/ExpansionBuilder.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"

namespace fusec::frontend::internal {

/// The most im2col elements (kernel taps x output pixels) a ConvInteger /
/// QLinearConv is written with (its Gather indices are a constant of that
/// many i64); a larger one is refused.
inline constexpr int64_t kMaxConvIntegerColumns = int64_t{1} << 24;

/// True for MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.
bool isQuantizedOp(std::string_view opType);

/// Adds \p spec (one of the ops above) as op-table ops through \p b.
/// Errors: InvalidArgument for a malformed node (operand dtypes, zero
/// points or scales of the wrong shape); Unimplemented for a convolution
/// whose X or W shape is not static, or with more than
/// kMaxConvIntegerColumns im2col elements.
absl::StatusOr<std::vector<ir::Node *>> expandQuantizedOp(const NodeSpec &spec, ExpansionBuilder &b);

/// MatMulInteger's product: MatMul(Cast(a, i32) - Cast(aZp, i32),
/// Cast(w, i32) - Cast(wZp, i32)) in i32 (wrapping), numpy broadcasting
/// (a [..., M, K], w [..., K, N]); a null zero point is 0, and \p aZp must
/// hold one element, \p wZp one or one per column of w ([N]). The operands
/// may be values of the caller's expansion (untyped until it returns): the
/// caller checks that they are u8 / i8 with zero points of their dtype.
ir::Value *integerMatMul(ExpansionBuilder &b, ir::Value *a, ir::Value *aZp, ir::Value *w, ir::Value *wZp);

/// Cast(v, i32) - Cast(zp, i32) (just the Cast when \p zp is null): an
/// operand of integerMatMul centred on its zero point. A caller that
/// multiplies by the same weight many times (a recurrent op's steps)
/// centres it once and passes it to integerMatMulCentred, so that constant
/// folding makes one i32 weight, not one per step.
ir::Value *centredInt32(ExpansionBuilder &b, ir::Value *v, ir::Value *zp);

/// MatMul(centredInt32(a, aZp), \p wCentred) in i32.
ir::Value *integerMatMulCentred(ExpansionBuilder &b, ir::Value *a, ir::Value *aZp, ir::Value *wCentred);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_QUANTIZEDOPS_H
