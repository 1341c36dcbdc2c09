//===- AttentionSpec.h - Target-neutral attention kernel description -*- C++ -*-===//
//
// What one FusedAttention node (ir/Ops.def) becomes after lowering: the
// parameters every backend's attention kernel needs, with no CUDA in it.
// KernelSpec::attention carries it for SpecKind::kAttention; the CUDA
// printer is codegen/cuda/Attention.h (emitAttentionKernel).
//
// Semantics (the FusedAttention row, ir/Ops.def; computed in f32):
//   g = numHeads / kvHeads, kh = h / g
//   s      = scale * sum_d Q[b,h,q,d] * K[b,kh,k,d]
//   m      = (mask.empty() || mask(b,h,q,k)) && (keyMask < 0 || biases[keyMask][b,k] != 0)
//   x      = m ? scoreMod(s, b, h, q, k, bias.., tables) : -inf
//   p      = exp(x - max_k x) / sum_k exp(x - max_k x)     (softmax over k)
//   O[b,h,q,e] = sum_k p * V[b,kh,k,e]
// A row whose x are all -inf gives NaN (the unfused reference: softmax of
// all -inf), or the mean of V over all Sk keys when maskedRowsMean; a row of
// all-equal finite x is uniform. scoreMod empty means
// "score".
//
// Kernel buffers (launcher argument order, ARTIFACT.md kernel ABI):
//   0: Q  [B, Hq,  Sq, D ]   1: K [B, Hkv, Sk, D]   2: V [B, Hkv, Sk, Dv]
//   3 .. 3+nb-1: bias inputs (any shape broadcastable to [B, Hq, Sq, Sk])
//   3+nb: O [B, Hq, Sq, Dv]
// Q/K/V/O are addressed with the element strides below (innermost stride
// is always 1); the lowering fills dense row-major strides today.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_ATTENTIONSPEC_H
#define FUSEC_PROGRAM_ATTENTIONSPEC_H

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/DType.h"
#include "ir/ScoreExpr.h"
#include "program/SymExtent.h"

namespace fusec::ir {
class Node;
}  // namespace fusec::ir

namespace fusec::program {

/// One bias input, read at (b, h, q, k) as base[b*sb + h*sh + q*sq + k*sk].
struct AttentionBias {
  ir::DType dtype = ir::DType::kF32;  ///< f32, f16, bf16, f64, bool or an integer type
  std::vector<int64_t> shape;         ///< as stored (rank <= 4), dense row-major
  /// Element strides for the (b, h, q, k) positions after right-aligning
  /// shape against [B, Hq, Sq, Sk]; 0 where the bias broadcasts.
  std::array<int64_t, 4> strides{0, 0, 0, 0};
};

struct AttentionSpec {
  int64_t batch = 1;     ///< B
  int64_t numHeads = 1;  ///< Hq (query heads)
  int64_t kvHeads = 1;   ///< Hkv (divides Hq; query head h reads kv head h / (Hq / Hkv))
  int64_t seqQ = 1;      ///< Sq
  int64_t seqK = 1;      ///< Sk
  int64_t headDim = 1;   ///< D (Q and K)
  int64_t headDimV = 1;  ///< Dv (V and O)

  ir::DType qType = ir::DType::kF32;  ///< storage dtypes (f32, f16, bf16)
  ir::DType kType = ir::DType::kF32;
  ir::DType vType = ir::DType::kF32;
  ir::DType oType = ir::DType::kF32;

  /// Element strides of the [b, h, s, d] positions (d stride is 1).
  std::array<int64_t, 4> qStrides{0, 0, 0, 1};
  std::array<int64_t, 4> kStrides{0, 0, 0, 1};
  std::array<int64_t, 4> vStrides{0, 0, 0, 1};
  std::array<int64_t, 4> oStrides{0, 0, 0, 1};

  float scale = 1.0f;
  ir::ScoreExpr scoreMod;  ///< empty = "score"
  ir::ScoreExpr mask;      ///< empty = no mask; index-only (b, h, q, k)
  /// A row whose every x is -inf: false = NaN, true = mean of V over all Sk
  /// keys (the op's masked_rows "mean").
  bool maskedRowsMean = false;
  std::vector<AttentionBias> biases;
  /// -1 = none, else the bias that is the per-key mask (FusedAttention
  /// key_mask): its h and q strides are 0, and key k of batch b is kept
  /// where it is != 0. Backends read it once per key tile and skip key tiles
  /// it masks entirely; one without that support calls foldKeyMask().
  int keyMask = -1;
  std::map<std::string, std::vector<float>> tables;  ///< constant tables (slope[h])
  /// Dynamic shapes (program/Symbolic.h): the integer fields above that
  /// depend on symbols, by field name ("seqK", "qStrides[0]",
  /// "biases[1].strides[0]"), as their symbolic forms; the fields hold
  /// the values of the first probe binding. Empty: every field is static.
  std::map<std::string, SymExtent> symbolic;

  int64_t groupSize() const { return kvHeads > 0 ? numHeads / kvHeads : 1; }
  int numBuffers() const { return 4 + static_cast<int>(biases.size()); }
  int outputBuffer() const { return 3 + static_cast<int>(biases.size()); }
  /// Sets dense row-major strides for Q, K, V, O from the sizes above.
  void setDenseStrides();
};

/// Moves the key mask into the score modification, for backends that do not
/// read it per key tile: scoreMod becomes "(biasN ? scoreMod : -inf)" (the
/// same semantics, element-wise) and keyMask -1. No-op without a key mask.
/// Errors: the expression parser's (a spec whose score_mod does not parse).
absl::Status foldKeyMask(AttentionSpec &spec);

/// Text form (one field per line), deterministic: the spec's structural key
/// and what FileCheck tests read.
std::string printAttentionSpec(const AttentionSpec &spec);

/// The spec of one FusedAttention node (static shapes required; dense
/// strides). Errors: InvalidArgument for non-static shapes, bad attributes
/// or shapes that do not fit the op's contract (ir/Ops.def).
absl::StatusOr<AttentionSpec> attentionSpecFor(const ir::Node &node);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_ATTENTIONSPEC_H
