//===- Compare.h - Compare tensors with per-dtype tolerances ----*- C++ -*-===//
//
// One place that decides whether a computed tensor matches an expected one.
// An element passes when |a - e| <= atol + rtol * |e| (numpy.isclose form);
// NaN matches NaN, +-inf must match exactly. Integer and bool tensors must be
// equal.
//
// Default tolerances per dtype, chosen so that a correct implementation that
// differs from the producer of the expected data only in summation order and
// transcendental-function rounding passes, while one wrong term fails:
//   f64   atol 1e-7  rtol 1e-6
//   f32   atol 1e-4  rtol 1e-3   (models run ~1e3 accumulations in fp32:
//                                 a few ulp of 1.2e-7 each, with headroom)
//   f16   atol 1e-2  rtol 1e-2   (10-bit mantissa, eps 9.8e-4)
//   bf16  atol 5e-2  rtol 5e-2   (7-bit mantissa, eps 7.8e-3)
//
// Lowered models (loweredModelTolerance): the f32 outputs of a whole fp32
// model compiled with `fusec --precision bf16|fp16` (every activation and
// weight stored in the low dtype, fp32 accumulation and statistics) against
// the model's fp32 reference outputs:
//   bf16  atol 0.05  rtol 0.02
//   fp16  atol 0.01  rtol 0.005
// Measured with the reference interpreter on the lowered graphs (every op
// rounds its result: the most rounding points any backend has; fused GPU
// kernels round only what they store) on the 7 shared models, batch 2 x
// seq 24; outputs are LayerNorm'd (rms 1, max |e| 3.7-4.5: bert_tiny,
// vit_tiny_dynamo, mlp_ln_gelu) or logits / attention outputs (rms
// 0.14-0.23, max |e| 0.8-1.5). Max abs error bf16 / fp16:
//   attn_alibi 0.0044 / 0.00059    attn_causal_sdpa 0.0045 / 0.00051
//   bert_tiny  0.036  / 0.0057     gpt2_tiny        0.0068 / 0.00088
//   llama_tiny 0.0061 / 0.00085    mlp_ln_gelu      0.022  / 0.0025
//   vit_tiny   0.026  / 0.0042
// The compiled artifacts on an H200 (fusec --precision, fusec-run OUT), max
// abs error for attn_alibi, attn_causal_sdpa, bert, gpt2, llama, mlp, vit:
//   bf16: 0.0040 0.0040 0.033 0.0067 0.0061 0.015 0.029
//   fp16: 0.00039 0.00049 0.0048 0.00079 0.00081 0.0020 0.0039
// (max relative errors are meaningless here: they come from outputs near 0,
// e.g. 3e3 on llama logits, which is why atol carries the check.) The worst
// element uses 39% of the bf16 tolerance (bert_tiny) and 30% of the fp16
// one, so there is 2.5-3x headroom for deeper models of the same families
// and for GPU summation order. bf16's unit roundoff is 2^-9 = 2e-3; the
// measured errors on rms-1 outputs are ~18 roundoffs (a dozen rounded ops
// per layer, amplified by LayerNorm's 1/std); atol 0.05 is 25 roundoffs at
// rms 1 and rtol 0.02 (10 roundoffs) widens it for the largest elements.
// fp16 has 3 more mantissa bits (measured errors 6-8x smaller), its
// tolerance is 5x tighter. A wrong kernel still fails: every GEMM dropping
// one k tile of 8 terms (PrecisionTest WrongKernel) exceeds the bf16
// tolerance on all 7 models by 1.9x-25x. The limit: one dropped term of a
// k = 128 dot product moves bert_tiny by 0.052, inside bf16 noise; bugs that
// subtle are the fp32 run's to catch.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_COMPARE_H
#define FUSEC_INTERP_COMPARE_H

#include <string>

#include "ir/Tensor.h"

namespace fusec::interp {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// The default tolerance for comparing results of dtype \p t (see above).
Tolerance defaultTolerance(ir::DType t);

/// The tolerance for comparing the f32 outputs of a whole model lowered to
/// \p low (bf16 or f16: `fusec --precision`, passes/PrecisionLowering.cpp)
/// against its fp32 reference outputs (see "Lowered models" above). Other
/// dtypes: defaultTolerance(f32).
Tolerance loweredModelTolerance(ir::DType low);

struct CompareResult {
  bool pass = false;
  /// max |a - e| over finite elements; +inf when a NaN or infinity stands
  /// where another value is expected; NaN when dtype or shape differ.
  double maxAbsError = 0;
  double maxRelError = 0;  ///< max |a - e| / |e| over elements with e != 0 (same rules)
  int64_t mismatches = 0;  ///< elements outside tolerance
  std::string message;     ///< why it failed (shape, dtype, first mismatch)
};

/// Compares \p actual against \p expected. Dtypes must be equal and shapes
/// equal. Uses defaultTolerance(expected.dtype()) unless \p tol is given.
CompareResult compareTensors(const ir::Tensor &actual, const ir::Tensor &expected,
                             const Tolerance *tol = nullptr);

}  // namespace fusec::interp

#endif  // FUSEC_INTERP_COMPARE_H
