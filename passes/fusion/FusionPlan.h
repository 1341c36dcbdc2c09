//===- FusionPlan.h - The result of fusion: kernels and refusals -*- C++ -*-===//
//
// What the fusion pass decided, in the form --dump-fusion prints: one Kernel
// per fused group (its member nodes, kind and roofline costs) and one Refusal
// per producer/consumer pair that was not fused, with the reason.
// The IR carries the same grouping: every member node has the attribute
// "fusec.kernel" = the kernel's name, so the grouping survives the text form.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_FUSION_FUSIONPLAN_H
#define FUSEC_PASSES_FUSION_FUSIONPLAN_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "program/Lowering.h"

namespace fusec::passes {

/// Name of the node attribute that records a node's kernel (the program
/// layer reads it: one spelling, program::kKernelAttr).
inline constexpr const char *kKernelAttr = program::kKernelAttr;

/// Kinds of kernels fusion forms.
enum class KernelKind {
  kElementwise,   ///< elementwise / broadcast / layout chain, one pass over the output
  kReduction,     ///< row reductions with prologue and epilogue ops
  kGemm,          ///< GEMM (library call) with an elementwise epilogue
  kConv,          ///< convolution (library call) with an elementwise epilogue
  kAttention,     ///< online-softmax attention
  kLayout,        ///< pure data movement (transpose, gather, concat ...)
  kOpaque,        ///< a single op run on its own
};
const char *kernelKindName(KernelKind k);

struct Kernel {
  std::string name;                 ///< "k3_reduction"
  KernelKind kind = KernelKind::kOpaque;
  std::vector<std::string> ops;     ///< ONNX node names covered, in order
  std::vector<std::string> opTypes; ///< op types of the members, same order
  double flops = 0;                 ///< floating-point operations
  double bytes = 0;                 ///< minimum HBM bytes read + written by the kernel
  double bytesUnfused = 0;          ///< sum of the members' HBM bytes if run one by one
  double arithmeticIntensity = 0;   ///< flops / bytes (FLOP/byte)
  bool memoryBound = true;          ///< arithmeticIntensity < target ridge point
  double rooflineUs = 0;            ///< max(bytes / bandwidth, flops / peak) in microseconds
  /// Launches (cpu: steps) the kernel takes: 2 for a library call followed
  /// by its epilogue as a generated kernel (program::GroupNote), whose
  /// write and read of the call's result are in bytes.
  int launches = 1;
  std::string reason;               ///< why these ops form one kernel
  /// Why the target's lowering refuses this kernel (the legality's message,
  /// program/Legality.h); empty when it lowers or no legality was asked.
  /// A plan with a refused kernel cannot be compiled (artifact::writeArtifact).
  std::string refused;
  /// kAttention only: the FusedAttention node's score_mod and mask
  /// expressions (ir/ScoreExpr.h canonical text; "" = none).
  std::string scoreMod;
  std::string mask;
  bool maskedRowsMean = false;  ///< masked_rows "mean" (ir/Ops.def)
  /// kAttention only: the per-key mask operand (key_mask), "" = none; e.g.
  /// "'attention_mask_bool' bool[2,1,1,24] (run time)".
  std::string keyMask;
  /// (query tile, key tile) pairs at a nominal 128 x 128 tile, and how many
  /// the structural mask cuts entirely (skipped); 0 / 0 when not counted.
  /// With a constant key mask the pairs are counted per batch (B x tiles)
  /// and a pair is also skipped when the key mask leaves its key tile empty.
  int64_t keyTiles = 0, skippedKeyTiles = 0;
  /// The members' guard (ir::Guard): (condition value, when) terms, in
  /// order; empty = the kernel always runs.
  std::vector<std::pair<std::string, bool>> guard;
};

struct Refusal {
  std::string producer;  ///< ONNX node name
  std::string consumer;  ///< ONNX node name
  std::string reason;
};

/// One decision of the gemm-merge pass (passes/GemmMerge.cpp): the GEMMs
/// (ONNX node names) merged into one, or one GEMM left alone, and why.
struct GemmMergeNote {
  std::vector<std::string> gemms;
  bool merged = false;
  std::string reason;
};

struct FusionPlan {
  std::string target;
  std::vector<Kernel> kernels;
  std::vector<Refusal> refusals;
  /// The gemm-merge pass's decisions (it runs before fusion; kept by it).
  std::vector<GemmMergeNote> gemmMerges;
  int64_t onnxNodes = 0;  ///< nodes in the imported model (before any pass)
  double hbmBytesUnfused = 0;
  double hbmBytesFused = 0;
};

/// The plan's kernel names, in plan order (what program::lowerGraph takes).
std::vector<std::string> kernelNames(const FusionPlan &plan);

/// The kernels of \p plan that the target's lowering refuses (Kernel::refused).
std::vector<const Kernel *> refusedKernels(const FusionPlan &plan);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_FUSION_FUSIONPLAN_H
