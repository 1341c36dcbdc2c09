//===- Canonicalize.cpp - Rewrite exporter idioms into one op each -------===//
//
// Recognises subgraphs that exporters write in many ways and replaces each
// with one canonical op, so that later passes (cost model, fusion, attention
// rewrite, codegen) see one form:
//   GELU (erf and tanh forms)            -> Gelu            (Activations.cpp)
//   SiLU: x / (1 + exp(-x)), x * Sigmoid(x)
//                                        -> Swish {alpha = 1} (Activations.cpp)
//   LayerNorm in primitives              -> LayerNormalization (Norms.cpp)
//   RMSNorm in primitives (+ f32 casts)  -> RMSNormalization   (Norms.cpp)
//   2-D MatMul + bias                    -> Gemm            (Simplify.cpp)
//   Identity, inference Dropout, no-op Cast / Reshape / Expand / Transpose,
//   Reshape∘Reshape, Transpose∘Transpose -> removed or one node (Simplify.cpp)
// Matching is by dataflow (see each pattern file for the exact forms and
// tolerances). The replacement takes the replaced value's name, so graph
// outputs keep their names.
//
// Driver: each sweep matches every node against the patterns over an
// unchanged graph (first match wins; a node belongs to at most one rewrite),
// then applies the rewrites from the last matched to the first (so a
// downstream rewrite is in place before an upstream one redirects its uses),
// removes dead nodes and re-infers shapes. Sweeps repeat until nothing
// changes. Assumes shape inference has run (patterns read ranks and static
// dims). Statistics: "canonicalize.<pattern>" per applied rewrite.
//
//===----------------------------------------------------------------------===//
#include "absl/container/flat_hash_set.h"
#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "passes/canonicalize/Patterns.h"
#include "support/Status.h"

namespace fusec::passes {

namespace canonicalize {

absl::StatusOr<bool> replaceRootWith(ir::Graph &graph, ir::Node *root, const std::string &opType,
                                     std::vector<ir::Value *> inputs, ir::AttributeMap attrs) {
  absl::StatusOr<ir::Node *> created =
      createNodeBefore(graph, root, opType, std::move(inputs), std::move(attrs));
  // A replacement shape inference rejects is declined, not an error: the
  // original subgraph is still valid.
  if (!created.ok()) return false;
  ir::Node *n = *created;
  if (!typesCompatible(n->output(0)->type(), root->output(0)->type()) ||
      !replaceValue(graph, root->output(0), n->output(0), /*takeName=*/true)) {
    graph.eraseNode(n);
    return false;
  }
  return true;
}

std::optional<ir::Tensor> broadcastConstant(ir::DType dtype, const ir::Shape &shape,
                                            const ir::Tensor *source, double fill) {
  int64_t n = ir::numElements(shape);
  std::vector<double> values(static_cast<size_t>(n), fill);
  if (source) {
    const ir::Shape &s = source->shape();
    if (s.size() > shape.size()) {
      // Leading 1s beyond the target rank are harmless.
      for (size_t i = 0; i < s.size() - shape.size(); ++i)
        if (s[i] != 1) return std::nullopt;
    }
    size_t offset = s.size() > shape.size() ? s.size() - shape.size() : 0;
    ir::Shape src(s.begin() + offset, s.end());
    ir::Shape srcStrides = ir::rowMajorStrides(src);
    size_t lead = shape.size() - src.size();
    for (size_t i = 0; i < src.size(); ++i)
      if (src[i] != 1 && src[i] != shape[lead + i]) return std::nullopt;
    ir::Shape outStrides = ir::rowMajorStrides(shape);
    for (int64_t e = 0; e < n; ++e) {
      int64_t rem = e, idx = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t coord = rem / outStrides[d];
        rem %= outStrides[d];
        if (d >= lead && src[d - lead] != 1) idx += coord * srcStrides[d - lead];
      }
      values[static_cast<size_t>(e)] = source->getDouble(idx);
    }
  }
  return ir::Tensor::fromDoubles(dtype, shape, values);
}

}  // namespace canonicalize

namespace {

/// Upper bound on sweeps; each sweep applies every non-overlapping match.
constexpr int kMaxSweeps = 32;

class Canonicalize : public Pass {
 public:
  const char *name() const override { return "canonicalize"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    using namespace canonicalize;
    // Earlier patterns win when several match at one node.
    static const Matcher kMatchers[] = {matchNoOp,      matchReshapeChain, matchTransposeChain,
                                        matchGelu,      matchLayerNorm,    matchRmsNorm,
                                        matchSwish,     matchSilu,         matchMatMulBias};
    bool changed = false;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      UseInfo uses(graph);
      std::vector<Rewrite> rewrites;
      absl::flat_hash_set<const ir::Node *> claimed;
      for (ir::Node *node : graph.nodes()) {
        if (claimed.contains(node)) continue;
        for (Matcher match : kMatchers) {
          std::optional<Rewrite> r = match(*node, uses);
          if (!r) continue;
          bool overlaps = false;
          for (const ir::Node *n : r->nodes) overlaps |= claimed.contains(n);
          if (overlaps) continue;
          claimed.insert(r->nodes.begin(), r->nodes.end());
          rewrites.push_back(std::move(*r));
          break;
        }
      }
      int64_t applied = 0;
      for (auto it = rewrites.rbegin(); it != rewrites.rend(); ++it) {
        FUSEC_ASSIGN_OR_RETURN(bool ok, it->apply(graph));
        if (!ok) continue;
        ++applied;
        // The replaced nodes are dead now: detach them, so that a later
        // replacement of a value they read does not move them along (a
        // chain of N no-ops would otherwise cost O(N^2)).
        for (ir::Node *n : it->nodes) {
          bool dead = true;
          for (const ir::Value *o : n->outputs())
            dead &= o->numUses() == 0 && !graph.isGraphOutput(o);
          if (dead) graph.detachDeadNode(n);
        }
        ctx.statistics["canonicalize." + it->stat] += 1;
      }
      if (applied == 0) break;
      changed = true;
      graph.removeDeadNodes();
      FUSEC_RETURN_IF_ERROR_CTX(ir::inferShapes(graph), "re-inferring shapes after canonicalize");
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createCanonicalize() { return std::make_unique<Canonicalize>(); }

}  // namespace fusec::passes
