//===- Lowering.h - Fused groups to KernelSpecs and library calls -*- C++ -*-===//
//
// Turns each fused group (nodes tagged "fusec.kernel") into
// target-neutral work items: generated kernels (KernelSpec + the graph
// Values bound to its buffers) and library calls (GEMM, convolution) with
// the graph Values they read and write.
//
// Buffers are graph Values. Views (Reshape, Squeeze, Unsqueeze, Flatten,
// Identity, single-output Dropout) are never work items: a view's result is
// an alias of its input, and kernels may receive view Values as buffers.
// Intermediates: when a GEMM / convolution group has an epilogue that the
// library cannot fuse, the library call writes the anchor node's own result
// Value (e.g. the MatMul output) and a generated kernel reads it. Whoever
// allocates memory must allocate every Value that any work item names.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_LOWERING_H
#define FUSEC_PROGRAM_LOWERING_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "program/KernelSpec.h"
#include "program/Legality.h"
#include "ir/Graph.h"

namespace fusec::program {

/// Name of the node attribute that records a node's kernel (set by fusion).
inline constexpr const char *kKernelAttr = "fusec.kernel";

/// What a GEMM does to each accumulator element on the way out, as a
/// KernelSpec scalar expression (KernelSpec.h), target-neutral: backends
/// recognise what their libraries fuse (the CUDA backend maps it to a
/// cuBLASLt epilogue, codegen/cuda/CublasEpilogue.h) or print it.
///
/// The spec's domain is [m, n] (dims 0, 1, extents M and N). Buffer 0 is
/// the f32 accumulator alpha*op(A)*op(B) + beta*C, shape [M, N]; buffer 1
/// (present iff the GEMM has a bias) is the per-column bias [N] in the
/// GEMM's dtype, read at [n]. Any further buffers are the inputs of a
/// generated epilogue (GemmParams::epilogueInputs / ConvParams::
/// epilogueInputs, in order; only where LoweringOptions::
/// generatedGemmEpilogue / generatedConvEpilogue), read at any index
/// expression of (m, n). `value` is the f32 result for (m, n); -1 means the accumulator
/// unchanged. No stores, no reductions.
struct GemmEpilogue {
  KernelSpec spec;
  int value = -1;
  bool bias = false;  ///< buffer 1 is the GEMM's bias

  /// The epilogue's spec for an M x N GEMM (no expression yet).
  static GemmEpilogue identity(int64_t m, int64_t n);
  bool empty() const { return value < 0; }
  bool hasBias() const { return bias; }
  /// Buffers past the accumulator and the bias (GemmParams::epilogueInputs).
  int numInputs() const { return static_cast<int>(spec.buffers.size()) - (bias ? 2 : 1); }
  /// The accumulator element (buffer 0 at [m, n]).
  int accumulator();
  /// Adds buffer 1 (bias of \p dtype) and returns its load at [n].
  int addBias(ir::DType dtype);
  /// The current value (the accumulator when empty).
  int current() { return empty() ? accumulator() : value; }
};

/// relu(x) = max(x, 0) in \p spec (f32 expr \p x).
int buildRelu(KernelSpec &spec, int x);
/// The tanh approximation of GELU (ONNX Gelu approximate="tanh"):
/// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), in \p spec.
int buildGeluTanh(KernelSpec &spec, int x);

/// One (batched) GEMM, row-major dense operands (ARTIFACT.md "gemm"):
/// D[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n] (+ epilogue).
/// D is stored as dDtype: the GEMM's dtype, or f32 for an f16/bf16 GEMM
/// whose output Cast to f32 the lowering folded in (LoweringOptions::
/// foldGemmOutputCast): the f32 accumulator, after the epilogue, is written
/// without rounding to the GEMM's dtype first.
struct GemmParams {
  const ir::Value *a = nullptr;
  const ir::Value *b = nullptr;
  const ir::Value *c = nullptr;     ///< optional, dense [batch?, m, n]
  const ir::Value *bias = nullptr;  ///< optional per-column vector [n]
  /// The epilogue's further buffers (GemmEpilogue), read-only; empty unless
  /// LoweringOptions::generatedGemmEpilogue folded a kernel into it.
  std::vector<const ir::Value *> epilogueInputs;
  const ir::Value *d = nullptr;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0, strideD = 0;  ///< elements; 0 broadcasts
  bool transA = false, transB = false;
  double alpha = 1, beta = 0;
  GemmEpilogue epilogue;  ///< see GemmEpilogue; m/n extents match m, n
  ir::DType dtype = ir::DType::kF32;  ///< of A, B, C and the bias
  ir::DType dDtype = ir::DType::kF32; ///< of D (== dtype unless an output Cast was folded)
  std::string compute = "f32";        ///< "f32" or "tf32"
  /// Dynamic shapes (program/Symbolic.h): integer fields above that
  /// depend on symbols ("m", "strideA", ...) as their symbolic forms; the
  /// fields hold the first probe binding's values. Empty: all static.
  std::map<std::string, SymExtent> symbolic;
};

/// One NCHW convolution (ARTIFACT.md "conv").
struct ConvParams {
  const ir::Value *x = nullptr, *w = nullptr, *bias = nullptr, *y = nullptr;
  std::vector<int64_t> xShape, wShape, yShape;
  std::vector<int64_t> pads;  ///< [begin..., end...]
  std::vector<int64_t> strides, dilations;
  int64_t group = 1;
  ir::DType dtype = ir::DType::kF32;
  /// The epilogue over the implicit-GEMM view of the convolution (M =
  /// batch * output pixels P, N = output channels; element (m, n) is
  /// y[m / P, n, m % P]): acc + bias[n] when there is a bias, else the
  /// accumulator unchanged; then, where LoweringOptions::
  /// generatedConvEpilogue folded a kernel into it, that kernel's
  /// expression, y then being the kernel's output.
  GemmEpilogue epilogue;
  /// The epilogue's further buffers (GemmEpilogue), read-only; empty unless
  /// LoweringOptions::generatedConvEpilogue folded a kernel into it.
  std::vector<const ir::Value *> epilogueInputs;
  /// Dynamic shapes: as GemmParams::symbolic ("xShape[0]", ...).
  std::map<std::string, SymExtent> symbolic;
};

/// A Value that no step writes: the bytes of \p root from element \p offset
/// on (in root's dtype), which the one kernel naming it reads with strides of
/// its own (a Split/Slice/Reshape/Transpose chain folded into an attention
/// operand's AttentionSpec strides). The memory plan makes it an alias of
/// root at offset * dtype size bytes (ARTIFACT.md "alias"); its contents are
/// not a dense tensor of its shape, so nothing else may read it.
struct StridedAlias {
  const ir::Value *value = nullptr;
  const ir::Value *root = nullptr;
  int64_t offset = 0;  ///< elements
};

/// One unit of work, in execution order.
struct WorkItem {
  enum class Kind { kKernel, kGemm, kConv } kind = Kind::kKernel;
  std::string name;                        ///< kernel name from the plan ("k3_reduction")
  KernelSpec spec;                         ///< kKernel
  std::vector<const ir::Value *> buffers;  ///< kKernel: Value bound to spec buffer i
  GemmParams gemm;                         ///< kGemm
  ConvParams conv;                         ///< kConv
  std::vector<const ir::Node *> nodes;     ///< ONNX nodes covered (for comments)
  /// The guard of its nodes (ir::Guard, all equal): the item runs only
  /// when it holds. Empty: always.
  ir::Guard guard;
  /// kKernel: buffers that are strided views of another Value (StridedAlias).
  std::vector<StridedAlias> aliases;
};

struct LoweringOptions {
  bool allowTf32 = false;
  /// Scalars (one element) that are constants are inlined as literals.
  bool inlineScalarConstants = true;
  /// A Cast to f32 of an f16/bf16 GEMM's result (after its library
  /// epilogue) becomes part of the GEMM: it writes D in f32
  /// (GemmParams::dDtype) and no kernel casts. Set by backends whose GEMM
  /// library writes f32 D from f16/bf16 operands (CUDA: cuBLASLt); legal
  /// only without C and without a bias (both would have to be f32 too),
  /// see foldableOutputCast().
  bool foldGemmOutputCast = false;
  /// The backend emits a GEMM's epilogue as a generated loop over each
  /// output tile (cpu), so any elementwise chain after the GEMM (bias, erf
  /// GELU, residual Add, ...) folds into GemmParams::epilogue instead of
  /// running as a kernel of its own. Off: only the library's epilogues
  /// (bias, Relu, tanh GELU; cuBLASLt).
  bool generatedGemmEpilogue = false;
  /// The same for convolutions: the backend evaluates ConvParams::epilogue
  /// over each output tile as a generated loop (cpu), so an elementwise
  /// chain after a Conv (Swish, a residual Add and Relu, ...) folds into
  /// it (foldIntoConvEpilogue) instead of reading the convolution's result
  /// back as a kernel of its own. Off: a convolution's epilogue is its bias
  /// only (cuDNN; NKI).
  bool generatedConvEpilogue = false;
  /// Transpose / Slice / Split nodes (and views) between a FusedAttention's
  /// Q, K, V and their producer, and a Transpose of its output, may join the
  /// attention's group: they become the AttentionSpec's operand strides and
  /// StridedAlias buffers instead of layout kernels. Set by backends whose
  /// attention kernels read any [b, h, s, d] strides with d innermost (cpu,
  /// cuda); off, such a group is refused (the NKI kernels read dense operands).
  bool foldAttentionLayouts = true;
  /// Integer constants are never merged (KernelSpec::mergeIntConstants off):
  /// set by buildSymbolicProgram, which compares the kernels built at each
  /// probe binding structurally. Two constants that coincide at one binding
  /// (a head count equal to a stride derived from the extents) would merge
  /// there only, and the same kernel would look different.
  bool distinctIntConstants = false;
};

/// Lowers every fused group. \p kernelNames are the fusion plan's kernel
/// names (their order numbers the groups first). \p graph must carry the fusec.kernel
/// attributes of the fusion pass; nodes without the attribute (other than
/// views) are each lowered as a kernel of their own. Items come out in a
/// topological order of the kernels.
/// Errors: Unimplemented naming node and op for what cannot be lowered;
/// InvalidArgument for non-static shapes.
absl::StatusOr<std::vector<WorkItem>> lowerGraph(const ir::Graph &graph,
                                                 const std::vector<std::string> &kernelNames,
                                                 const LoweringOptions &opts);

/// Lowers one fused group: \p members (non-view nodes, in graph order)
/// named \p name. A group whose first contraction (MatMul, Gemm, Conv)
/// the library runs gives the library call, then (when the library cannot
/// fuse the epilogue) a generated kernel reading its result; otherwise one
/// generated kernel. \p users is graph.userMap(). Errors as lowerGraph().
absl::StatusOr<std::vector<WorkItem>> lowerGroup(
    const ir::Graph &graph, const std::string &name, const std::vector<const ir::Node *> &members,
    const LoweringOptions &opts,
    const absl::flat_hash_map<const ir::Value *, std::vector<ir::Node *>> &users);

/// lowerGroup() of one fused group given in any order (\p members; views
/// and constants skipped, the rest sorted topologically by \p index, the
/// graph's index built once by the caller) with the backend's \p opts (the
/// ones its emission lowers with): what a backend's legality checks item by
/// item (program/Legality.h).
absl::StatusOr<std::vector<WorkItem>> lowerGroupItems(const ir::Graph &graph,
                                                      const std::vector<const ir::Node *> &members,
                                                      const GraphIndex &index,
                                                      const LoweringOptions &opts = LoweringOptions{});

/// Whether a GEMM \p g (its epilogue already matched) may absorb \p cast,
/// a Cast node reading the GEMM's current result, under \p opts: the flag
/// is set, \p cast converts an f16/bf16 GEMM's dtype to f32, and the GEMM
/// has no C and no bias (the library would read them as f32, the D type).
/// OK, or FailedPrecondition saying why not (for dumps and tests).
absl::Status foldableOutputCast(const GemmParams &g, const ir::Node &cast, const LoweringOptions &opts);

/// True for ops lowered as aliases (no work item).
bool isViewNode(const ir::Node &node);

/// One step of the program (ARTIFACT.md "steps"), in execution order. The
/// backend fills `symbol` (the entry point of a generated kernel).
struct Step {
  enum class Kind { kKernel, kGemm, kConv, kCopy } kind = Kind::kKernel;
  std::string name;                        ///< kernel name from the FusionPlan
  std::string symbol;                      ///< kKernel: the backend's entry point
  std::vector<const ir::Value *> buffers;  ///< kKernel: launcher args, in order
  GemmParams gemm;                         ///< kGemm
  ConvParams conv;                         ///< kConv
  const ir::Value *src = nullptr;          ///< kCopy
  const ir::Value *dst = nullptr;          ///< kCopy
  /// Runs only when every term holds, read in order (ARTIFACT.md "guard");
  /// empty: always. Its conditions are buffers the step names (memory plan).
  ir::Guard guard;
  /// kKernel: the work item's StridedAlias buffers (the memory plan's aliases).
  std::vector<StridedAlias> aliases;
};

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_LOWERING_H
