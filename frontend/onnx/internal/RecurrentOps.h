//===- RecurrentOps.h - LSTM, GRU and RNN unrolled at import ---*- C++ -*-===//
//
// The ONNX recurrent ops become per-time-step op-table ops when the sequence
// length is static (fusec's artifacts have static shapes): one input
// projection MatMul per direction, then per step one recurrent MatMul per
// gate block and the gate arithmetic as elementwise ops (which fuse into one
// kernel per step). Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_RECURRENTOPS_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_RECURRENTOPS_H

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx/internal/ExpansionBuilder.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"

namespace fusec::frontend::internal {

/// The most time steps (sequence length * directions) one recurrent node is
/// unrolled into; a longer one is refused (the node count grows linearly).
inline constexpr int64_t kMaxUnrolledSteps = 1024;

/// True for LSTM, GRU and RNN.
bool isRecurrentOp(std::string_view opType);

/// Adds \p spec (an ai.onnx LSTM, GRU or RNN, opsets 7-22; equations of the
/// ONNX operator spec, onnx/docs/Operators.md "LSTM" / "GRU" / "RNN") as
/// unrolled op-table ops through \p b. Shapes (layout 0; layout 1 swaps the
/// first two axes of X, Y, initial_* and Y_*): X [T, B, I], W [D, G*H, I],
/// R [D, G*H, H], B [D, 2*G*H], sequence_lens [B], initial_h/c [D, B, H],
/// P [D, 3*H]; Y [T, D, B, H], Y_h / Y_c [D, B, H]; D = 2 for
/// bidirectional, G = 4 / 3 / 1 gates (LSTM i,o,f,c; GRU z,r,h). Steps past
/// sequence_lens[b] keep the state and give Y = 0. Activations (with
/// activation_alpha/beta consumed in order by the ones that take them),
/// clip (of the gate pre-activations), input_forget (f = 1 - i) and GRU's
/// linear_before_reset are honoured.
/// Errors: InvalidArgument for a malformed node (shapes, unknown
/// activation, direction); Unimplemented when T is not static or T * D
/// exceeds kMaxUnrolledSteps.
absl::StatusOr<std::vector<ir::Node *>> expandRecurrentOp(const NodeSpec &spec,
                                                          ExpansionBuilder &b);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_RECURRENTOPS_H
