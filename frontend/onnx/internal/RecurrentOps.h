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
/// sequence_lens[b] keep the state and give Y = 0; a row of length 0 has
/// Y_h = Y_c = 0 (ONNX Runtime's CPU kernels; the spec leaves it open). Activations (with
/// activation_alpha/beta consumed in order by the ones that take them),
/// clip (of the gate pre-activations), input_forget (f = 1 - i) and GRU's
/// linear_before_reset are honoured.
/// Errors: InvalidArgument for a malformed node (shapes, unknown
/// activation, direction); Unimplemented when T is not static or T * D
/// exceeds kMaxUnrolledSteps.
absl::StatusOr<std::vector<ir::Node *>> expandRecurrentOp(const NodeSpec &spec,
                                                          ExpansionBuilder &b);

/// The products of an unrolled recurrent node with its weights (a GEMM
/// builder the unroller calls). The ai.onnx ops use float MatMuls by W[d]ᵀ
/// and R[d]ᵀ; DynamicQuantizeLSTM quantises the activations first
/// (DynamicQuantizeLstm.cpp). Values made here are typed after the
/// expansion, so an implementation reads only the node's inputs' types.
class RecurrentGemms {
 public:
  virtual ~RecurrentGemms() = default;
  /// X [T, B, I] (time-major, in time order) times direction \p d's input
  /// weights: [T, B, G*H]. \p live is [T, 1, 1] bool, true for the steps
  /// below max(sequence_lens) (the only ones any row reads), or null when
  /// every step is read.
  virtual absl::StatusOr<ir::Value *> input(ExpansionBuilder &b, ir::Value *x, ir::Value *live,
                                            int64_t d) = 0;
  /// H [B, H] times gates [\p g0, \p g1) of direction \p d's recurrent
  /// weights: [B, (g1 - g0) * H]. The LSTM and RNN take all gates at once;
  /// GRU without linear_before_reset takes z, r and then h apart.
  virtual absl::StatusOr<ir::Value *> recurrent(ExpansionBuilder &b, ir::Value *h, int64_t d,
                                                int64_t g0, int64_t g1) = 0;
};

/// What sets an unrolled node apart from the ai.onnx ops' form.
struct RecurrentForm {
  /// W is [D, I, G*H] and R [D, H, G*H] (ONNX Runtime's DynamicQuantizeLSTM),
  /// not ONNX's [D, G*H, I] and [D, G*H, H].
  bool transposedWeights = false;
  /// Follow ONNX Runtime's CPU LSTM kernel (onnxruntime/core/providers/cpu/
  /// rnn/uni_directional_lstm.cc, v1.32) where the order of operations
  /// changes results (it does once the products are quantised): a reverse
  /// direction with sequence_lens walks each row's own reversed sequence
  /// (ReverseSequence), so that step s of every row is one product; the
  /// recurrent product reads the H buffer that kernel reads (its Y step,
  /// 0 for finished rows, when Y is an output; else the held state); a
  /// gate is ((X·W + H·R) + P ⊙ C) + (Wb + Rb). LSTM only.
  bool ortSchedule = false;
  /// The products; null: float MatMuls (the ai.onnx ops).
  RecurrentGemms *gemms = nullptr;
};

/// expandRecurrentOp for \p spec in \p form (an LSTM when form.ortSchedule);
/// the same shapes, attributes and errors, W and R as form says.
absl::StatusOr<std::vector<ir::Node *>> unrollRecurrent(const NodeSpec &spec, ExpansionBuilder &b,
                                                        const RecurrentForm &form);

/// Direction \p d of a [D, ...] input: Gather(x, d, axis 0).
ir::Value *recurrentDirection(ExpansionBuilder &b, ir::Value *x, int64_t d);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_RECURRENTOPS_H
