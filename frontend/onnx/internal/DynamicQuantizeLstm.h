//===- DynamicQuantizeLstm.h - ONNX Runtime's quantised LSTM -----*- C++ -*-===//
//
// com.microsoft DynamicQuantizeLSTM (ONNX Runtime's ContribOperators.md;
// what onnxruntime.quantization.quantize_dynamic writes for an LSTM) as the
// LSTM unrolling of RecurrentOps.h with quantised products, reproducing ONNX
// Runtime's CPU kernel (DynamicQuantizeLstm.cpp says which source and how).
// Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_DYNAMICQUANTIZELSTM_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_DYNAMICQUANTIZELSTM_H

#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx/internal/ExpansionBuilder.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"

namespace fusec::frontend::internal {

/// Adds \p spec, a com.microsoft DynamicQuantizeLSTM (opset 1), as unrolled
/// op-table ops through \p b. Inputs: X f32 [T, B, I]; W u8/i8
/// [D, I, 4H] and R u8/i8 [D, H, 4H] (transposed against ai.onnx LSTM's);
/// B, sequence_lens (i32), initial_h, initial_c, P as ai.onnx LSTM's;
/// W_scale / R_scale f32 and W_zero_point / R_zero_point (W's / R's dtype)
/// of shape [D] (per direction) or [D, 4H] (per column). Attributes as
/// ai.onnx LSTM's without layout. Outputs Y [T, D, B, H], Y_h, Y_c [D, B, H].
/// Errors: InvalidArgument for a malformed node (dtypes, shapes, a layout
/// attribute, constant zero points that ONNX Runtime refuses: per column,
/// i8 ones must be 0 and u8 ones all equal) and those of expandRecurrentOp;
/// Unimplemented as expandRecurrentOp (T not static or too long).
absl::StatusOr<std::vector<ir::Node *>> expandDynamicQuantizeLstm(const NodeSpec &spec, ExpansionBuilder &b);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_DYNAMICQUANTIZELSTM_H
