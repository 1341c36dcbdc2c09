//===- TiledAttention.h - AttentionSpec -> tiled tensor-core kernel -*- C++ -*-===//
//
// Adapter from the op-level AttentionSpec (codegen/AttentionSpec.h) to the
// FlashAttention-2 style generator (FlashAttentionEmitter.h), for
// emitAttentionKernel (codegen/cuda/Attention.h) to call before falling back
// to the naive kernel.
//
// Mask analysis: the mask expression is split at top-level '&&' into
// conjuncts; each conjunct that is a comparison of two integer expressions
// linear in q and k with coefficients +-1 on q - k (e.g. `k <= q`,
// `q - k < 256`, `q + 5 >= k`) becomes the structural causal bound (key
// k <= q + offset) or window (q + offset - k < W) that lets whole K/V tiles
// be skipped; the remaining conjuncts stay an element-wise mask.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_ATTENTION_TILEDATTENTION_H
#define FUSEC_CODEGEN_CUDA_ATTENTION_TILEDATTENTION_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/AttentionSpec.h"
#include "codegen/cuda/attention/FlashAttentionEmitter.h"
#include "ir/ScoreExpr.h"

namespace fusec::codegen::attention {

// The target-neutral program (program/) is this backend's input vocabulary.
using namespace ::fusec::program;

/// The structural part of a mask expression.
struct MaskStructure {
  bool causal = false;      ///< an upper bound k <= q + offset was found
  int64_t offset = 0;       ///< the tightest such offset
  int64_t window = 0;       ///< > 0: q + offset - k < window (only with causal)
  std::vector<int> residual;  ///< node ids of the conjuncts left element-wise
};

/// Splits \p mask (may be empty) as described in the file comment.
MaskStructure analyzeMask(const ir::ScoreExpr &mask);

/// Prints a score expression as one C expression (float, or bool when
/// \p asBool) over `s`, `b`, `h`, `q`, `k` (long long), `bias<i>` (float) and
/// `tab_NAME[i]`: scoreExprToCuda (codegen/cuda/Attention.h) bound to those
/// names.
using ScorePrinter = std::function<std::string(const ir::ScoreExpr &, bool asBool)>;

struct TiledAttentionOptions {
  int smVersion = 90;
  /// Text placed before the kernel (the helpers the printed expressions
  /// call, e.g. cudaPrelude()); empty = the generator's own includes.
  std::string prelude;
  /// Dynamic shapes: the artifact's symbols in manifest order (the
  /// launcher's `symbols` array); empty for a static artifact.
  std::vector<std::string> symbolNames;
  /// The module is built for sm_90a (FlashEmitOptions::hopper).
  bool hopper = false;
};

/// Converts \p spec to a FlashAttentionSpec (fully masked rows give NaN, as
/// the op defines). Unimplemented when the tiled kernel does not cover it
/// (mixed Q/K/V/O dtypes, non-unit innermost strides, head dims > 256).
absl::StatusOr<FlashAttentionSpec> toFlashSpec(const AttentionSpec &spec, const ScorePrinter &print);
/// toFlashSpec for a spec whose fields may be bound at run time
/// (AttentionSpec::symbolic): those become FlashAttentionSpec::dynamic
/// expressions over `symbols[i]`, i the position in \p symbolNames.
/// Unimplemented for a symbolic head count or head dim, or a symbol not in
/// \p symbolNames.
absl::StatusOr<FlashAttentionSpec> toFlashSpec(const AttentionSpec &spec, const ScorePrinter &print,
                                               const std::vector<std::string> &symbolNames);

/// toFlashSpec + emitFlashAttention: kernel and launcher \p symbol with the
/// ABI of emitAttentionKernel.
absl::StatusOr<std::string> emitTiledAttention(const AttentionSpec &spec, const std::string &symbol,
                                               const ScorePrinter &print, const TiledAttentionOptions &options = {});

}  // namespace fusec::codegen::attention

#endif  // FUSEC_CODEGEN_CUDA_ATTENTION_TILEDATTENTION_H
