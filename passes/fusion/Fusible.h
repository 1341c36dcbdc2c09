//===- Fusible.h - Which ops may share a kernel, and why not ----*- C++ -*-===//
//
// The fusibility predicates, in one place, used by every fusion-like pass.
// Each returns a FusionDecision carrying the reason for a refusal.
//
// Roles: every node has one role that says how it can take part in a
// kernel (see Role). Views (Reshape, Squeeze, Unsqueeze, Flatten, Identity)
// move no data in a row-major layout and become no kernel at all.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_FUSION_FUSIBLE_H
#define FUSEC_PASSES_FUSION_FUSIBLE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"
#include "passes/cost/TargetSpec.h"
#include "passes/fusion/FusionDecision.h"
#include "passes/fusion/FusionPlan.h"

namespace fusec::passes {

enum class Role {
  kView,         ///< relabels the indices of a contiguous buffer; no kernel
  kElementwise,  ///< one output element from same-index (broadcast) input elements
  kLayout,       ///< data movement that can be an index map of its consumer (Transpose, Slice, Concat...)
  kMovement,     ///< data movement that runs as its own kernel (Split, Pad)
  kRowReduction, ///< reduces the innermost axes (softmax, norms, Reduce* over trailing axes)
  kReduction,    ///< other reductions (non-trailing axes, pooling)
  kContraction,  ///< GEMM / convolution, run by a library
  kShape,        ///< metadata or constant generators left after folding
  kOpaque,
};
const char *roleName(Role r);

/// The role of \p node.
Role roleOf(const ir::Node &node);

/// For a row reduction: the number of elements in one row (product of the
/// reduced trailing dims) if static.
std::optional<int64_t> rowLength(const ir::Node &node);

/// The kernel kind a node seeds on its own.
KernelKind seedKind(Role r, const ir::Node &node);

/// The most non-empty inputs a Concat folded into another kernel may have:
/// there it is a select over its inputs along the axis, and each input's
/// expression computed in the kernel is evaluated at every output element.
inline constexpr int kMaxConcatSelectInputs = 8;

/// Whether layout node \p node can be index arithmetic inside another
/// kernel (the kernel's load indices, or a select over its inputs): a Slice
/// needs its starts, ends, axes and steps at compile time; a Concat a valid
/// axis and at most kMaxConcatSelectInputs non-empty inputs. Other layout
/// ops: yes (their own rules live in the lowering). The refusal says which.
FusionDecision foldsAsIndexArithmetic(const ir::Node &node);

/// How layout node \p node appears in the kernel it was folded into, for
/// the dump: "Slice folded into the load index", "Concat as a select over
/// axis 3"; "" for other ops.
std::string describeFoldedLayout(const ir::Node &node);

/// What a group of nodes looks like to the predicates.
struct GroupShape {
  KernelKind kind = KernelKind::kOpaque;
  const ir::Node *anchor = nullptr;   ///< the contraction or (first) reduction, if any
  int64_t reductions = 0;             ///< row reductions in the group
};

/// Can the group holding \p producer (shape \p pg) and the group holding
/// \p consumer (shape \p cg) become one kernel, given that \p consumer reads
/// \p value (a result of \p producer, possibly through views)?
/// \p producerUsers is the number of nodes using that result, \p usersOutside
/// how many of them are outside the consumer's group (a layout op whose
/// users are all in that group is re-gathered there at no extra traffic).
FusionDecision canFuse(const GroupShape &pg, const ir::Node &producer, const GroupShape &cg,
                       const ir::Node &consumer, const ir::Value &value, int64_t producerUsers,
                       int64_t usersOutside, bool producerIsGraphOutput, const TargetSpec &target);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_FUSION_FUSIBLE_H
